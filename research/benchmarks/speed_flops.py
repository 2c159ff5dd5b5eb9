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
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch
from speed_data import BASELINE, Text, long_texts, make_docs, n_words, read_sentences, texts_of
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


def encoder_component(nlp: Language) -> str:
    """The component whose forward pass is counted: the `entangle` one, else the
    spacy-transformers `transformer`."""
    for name in nlp.component_names:
        if nlp.get_pipe_meta(name).factory in ("entangle", "transformer"):
            return name
    raise ValueError(f"no entangle or transformer component (components: {', '.join(nlp.component_names)})")


def load_fp32(path: Path) -> Language:
    """The pipeline with every `entangle` component in fp32 (the torch ops the counter sees)."""
    config = spacy.util.load_config(path / "config.cfg", interpolate=False)
    names = [n for n, c in config["components"].items() if c.get("factory") == "entangle"]
    return spacy.load(path, config={"components": {n: {"inference": "fp32"} for n in names}})


def count(specs: List[Tuple[str, Path]], sets: Dict[str, List[Text]], batch_size: int) -> Dict[str, Any]:
    """Multiply-adds of each pipeline's encoder component on each set of texts, and each
    one's share of the first pipeline's (the words/s ratio the arithmetic allows)."""
    out: Dict[str, Any] = {}
    pipes = {name: load_fp32(path) for name, path in specs}
    for label, texts in sets.items():
        words = n_words(texts)
        macs = {}
        for name, nlp in pipes.items():
            predict = nlp.get_pipe(encoder_component(nlp)).predict
            macs[name] = forward_flops(predict, make_docs(nlp, texts), batch_size) / 2
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
    specs = []
    for spec in args.pipelines:
        name, sep, path = spec.partition("=")
        if not sep or not name or not Path(path).is_dir():
            parser.error(f"--pipelines wants NAME=DIR with DIR a pipeline directory, got {spec!r}")
        specs.append((name, Path(path)))
    torch.set_num_threads(1)
    sents = read_sentences(args.data, args.limit)
    if not sents:
        parser.error(f"{args.data}: no sentences")
    sets = {"dev sentences": texts_of(sents)}
    if args.doc_chars:
        sets[f"one {args.doc_chars:,}-char doc"] = long_texts(read_sentences(args.data), args.doc_chars, args.doc_chars)
    result = count(specs, sets, args.batch_size)
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
