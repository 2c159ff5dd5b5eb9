"""Part 5 of speed.py: forward multiply-adds of entangle vs the baseline's transformer on
the same docs, i.e. the speed ratio the architecture allows, next to the measured one.

Run alone, it counts them for trained (or untrained, same-shaped) pipelines side by side, on
dev tweets and on one long doc, so a words/s target can be set against what the arithmetic
allows before anything is timed (the first pipeline is the reference; entangle is counted in
fp32, the exact model's torch ops: an int8 or ONNX mode does the same products, cheaper each):

    OMP_NUM_THREADS=1 python research/benchmarks/speed_flops.py --data project/corpus/dev.spacy \
        --limit 500 --doc-chars 100000 --pipelines baseline=BASELINE_DIR entangle=ENTANGLE_DIR
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch
from speed_compare import mode_overrides, pipeline_specs
from speed_data import BASELINE, Text, long_texts, make_docs, n_words, read_sentences, texts_of
from speed_timing import environment, print_table, save


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
    encoders = {"entangle fp32": entangle, BASELINE: baseline}
    macs = {name: encoder_macs(nlp, texts, args.batch_size) for name, nlp in encoders.items()}
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


def encoder_macs(nlp: Language, texts: List[Text], batch_size: int) -> float:
    """Multiply-adds (FLOPs / 2) of the forward pass of the pipeline's encoder component
    (its `entangle` one, else its spacy-transformers `transformer`) on ``texts``."""
    names = [n for n in nlp.component_names if nlp.get_pipe_meta(n).factory in ("entangle", "transformer")]
    if not names:
        raise ValueError(f"no entangle or transformer component (components: {', '.join(nlp.component_names)})")
    return forward_flops(nlp.get_pipe(names[0]).predict, make_docs(nlp, texts), batch_size) / 2


def load_fp32(path: Path) -> Language:
    """The pipeline with every `entangle` component in fp32: the exact model's torch ops,
    which the counter sees (an ONNX session's are not)."""
    components = spacy.util.load_config(path / "config.cfg", interpolate=False)["components"]
    entangles = [name for name, c in components.items() if c.get("factory") == "entangle"]
    return spacy.load(path, config=mode_overrides(entangles, "fp32"))


def count(specs: List[Tuple[str, Path]], sets: Dict[str, List[Text]], batch_size: int) -> Dict[str, Any]:
    """Multiply-adds of each pipeline's encoder component on each set of texts, and each
    one's share of the first pipeline's (the words/s ratio the arithmetic allows)."""
    out: Dict[str, Any] = {}
    pipes = {name: load_fp32(path) for name, path in specs}
    for label, texts in sets.items():
        words = n_words(texts)
        macs = {name: encoder_macs(nlp, texts, batch_size) for name, nlp in pipes.items()}
        reference = macs[specs[0][0]]
        rows = [
            [name, f"{m / 1e9:,.4g}", f"{m / words / 1e6:,.4g}", f"{m / reference:.2f}x", f"{reference / m:.2f}x"]
            for name, m in macs.items()
        ]
        print_table(
            f"forward multiply-adds, {label} ({len(texts)} docs, {words:,} words; encoder component, fp32)",
            ["pipeline", "GMACs", "MMACs / word", "vs reference", "words/s it allows"],
            rows,
        )
        out[label] = {"docs": len(texts), "words": words, "macs": macs}
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="dev data: CoNLL file or .spacy corpus")
    parser.add_argument("--pipelines", nargs="+", required=True, metavar="NAME=DIR", help="the first is the reference")
    parser.add_argument("--limit", type=int, default=500, help="dev sentences counted (0 = all)")
    parser.add_argument("--doc-chars", type=int, default=100_000, help="one doc of the sentences joined (0: skip)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", type=Path, help="JSON file for the counts")
    args = parser.parse_args(argv)
    specs = pipeline_specs(parser, args.pipelines)
    for name, path in specs:
        if not (path / "config.cfg").is_file():
            parser.error(f"--pipelines {name}={path}: not a spaCy pipeline directory (no config.cfg)")
    torch.set_num_threads(1)
    every = read_sentences(args.data)
    if not every:
        parser.error(f"{args.data}: no sentences")
    sets = {"dev sentences": texts_of(every[: args.limit] if args.limit else every)}
    if args.doc_chars:
        sets[f"one {args.doc_chars:,}-char doc"] = long_texts(every, args.doc_chars, args.doc_chars)
    save({"environment": environment("cpu"), **count(specs, sets, args.batch_size)}, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
