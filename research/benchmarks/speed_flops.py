"""Part 5 of speed.py: forward multiply-adds of entangle vs the baseline's transformer on
the same docs, i.e. the speed ratio the architecture allows, next to the measured one."""

from typing import Any, Dict, List

import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch
from speed_data import BASELINE, Text, make_docs, n_words
from speed_timing import print_table


def _sdpa_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query_shape, key_shape, value_shape)


def forward_flops(predict, docs: List[Doc], batch_size: int) -> int:
    """FLOPs of the torch forward passes of ``predict`` over ``docs`` (in batches).
    FlopCounterMode misses two ops that would hide most attention cost: the fused fast
    path of nn.TransformerEncoderLayer (switched off meanwhile) and the CPU kernel of
    scaled_dot_product_attention (counted here with torch's own sdpa formula)."""
    from torch.utils.flop_counter import FlopCounterMode

    cpu_sdpa = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    mapping = {cpu_sdpa: _sdpa_flops} if cpu_sdpa is not None else {}
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
            for batch in minibatch(docs, batch_size):
                predict(list(batch))
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return counter.get_total_flops()


def part_flops(
    entangle: Language, baseline: Language, texts: List[Text], speed: Dict[str, Any], args
) -> Dict[str, Any]:
    """Multiply-adds (FLOPs / 2) of each pipeline's encoder component on the same docs."""
    words = n_words(texts)
    encoders = {"entangle fp32": (entangle, "entangle"), BASELINE: (baseline, "transformer")}
    macs = {
        name: forward_flops(nlp.get_pipe(pipe).predict, make_docs(nlp, texts), args.batch_size) / 2
        for name, (nlp, pipe) in encoders.items()
    }
    flop_ratio = macs["entangle fp32"] / macs[BASELINE]
    speed_ratio = speed["baseline_over_entangle"]
    rows = [[name, f"{m / 1e9:,.3g}", f"{m / words / 1e6:,.3g}"] for name, m in macs.items()]
    print_table(
        f"5. forward multiply-adds on {len(texts)} docs ({words} words; FlopCounterMode, encoder component only)",
        ["pipeline", "GMACs", "MMACs / word"],
        rows,
    )
    print(
        f"   multiply-adds: entangle does {flop_ratio:.2f}x the baseline's; measured: {speed_ratio:.2f}x slower. "
        f"measured / FLOP ratio = {speed_ratio / flop_ratio:.2f} (1 = the gap is all arithmetic, "
        f"above 1 = overhead beyond it)"
    )
    return {
        "docs": len(texts),
        "words": words,
        "macs": macs,
        "flop_ratio": round(flop_ratio, 4),
        "speed_ratio": speed_ratio,
        "overhead": round(speed_ratio / flop_ratio, 4),
    }
