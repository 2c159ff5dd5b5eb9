r"""What an opt-in `inference` mode (default: `int8`; `--modes int8 onnx onnx-int8 bf16`) costs
in accuracy on a trained pipeline: its scores in fp32 and in each mode on each corpus, side by
side, with the difference. `--keep-float PREFIX` also keeps the modules under PREFIX (names
inside the entangle model, e.g. `char_encoder.words.` or `subword_encoder.`) in float in int8
and onnx-int8: a what-if, to see which layers int8 may quantize. `--keep-float-nodes REGEX`
is finer, for onnx-int8: the graphs' MatMul / Gemm nodes whose part-qualified names match
(`re.search` on PART/NODE, e.g. `char_encoder.words/encoder/encoder/layer.0/output/dense/MatMul`,
the feed-forward's output product of the copied layer 0) stay in float, instead of the
default's (inference.ONNX_INT8_FLOAT_NODES: none); `--keep-float-nodes ''` quantizes every node.
The nodes left in float are printed. `--smoothing ALPHA` / `--smoothing off` sets the alpha of
onnx-int8's activation smoothing of the subword encoder (inference.ONNX_INT8_SMOOTHING; off by default).
`--int8-kernels default` is a what-if: ONNX Runtime's default int8 kernels everywhere, which on an
x86 CPU without VNNI add pairs of products in saturating 16-bit lanes (the engine asks for its exact
u8u8 ones there: engines/onnx.py INT8_KERNELS); on a CPU with VNNI both are exact, so run it there
under an emulated CPU without VNNI (`qemu-x86_64 -cpu EPYC-Rome python ...`;
research/benchmarks/int8_saturation.py). Whether the products were saturated is printed and recorded.

    OMP_NUM_THREADS=1 python research/benchmarks/int8_accuracy.py PIPELINE CORPUS.spacy [CORPUS.spacy ...]
        [--modes int8 onnx-int8] [--keep-float char_encoder.words.]
        [--keep-float-nodes 'char_encoder\.words/.*layer\.\d+/output/dense'] [--smoothing off]
        [--int8-kernels exact|default|u8u8] [--output int8.json]
"""

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import spacy
from int8_saturation import KERNELS, products, use_kernels
from spacy.language import Language
from spacy.training import Corpus
from speed_timing import cpu_int8_features

import spacy_entangle.modeling.inference as inference


def scores(model: Path, corpora: Sequence[Path], mode: str, kept: Optional[List[str]] = None) -> Dict[str, float]:
    """Entity F1 (or the score spaCy's scorer reports first) per corpus in one inference mode;
    ``kept`` gets the graph nodes an engine mode left in float (ONNX_INT8_FLOAT_NODES)."""
    nlp = spacy.load(model, config={"components": {"entangle": {"inference": mode}}})
    out = corpus_scores(nlp, corpora)
    if kept is not None and mode in inference.ENGINE_MODES:
        from spacy_entangle.modeling.engines.onnx import kept_float_nodes

        copies = [shim._fast_model for shim in nlp.get_pipe("entangle").model.shims]
        kept.extend(node for copy in copies if copy is not None for node in kept_float_nodes(copy))
    return out


def corpus_scores(nlp: Language, corpora: Sequence[Path]) -> Dict[str, float]:
    """Entity F1 (or the score spaCy's scorer reports first) of a loaded pipeline per corpus."""
    out = {}
    for corpus in corpora:
        result = nlp.evaluate(list(Corpus(str(corpus))(nlp)))
        out[corpus.name] = float(result.get("ents_f") or result.get("spans_sc_f") or result.get("cats_score") or 0.0)
    return out


def smoothing_alpha(text: str) -> Optional[float]:
    """An argparse type: ``off`` (no smoothing) or an alpha in [0, 1]."""
    if text == "off":
        return None
    try:
        alpha = float(text)
    except ValueError:
        alpha = -1.0
    if not 0.0 <= alpha <= 1.0:
        raise argparse.ArgumentTypeError(f"expected 'off' or an alpha in [0, 1], got {text!r}")
    return alpha


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("corpora", type=Path, nargs="+")
    parser.add_argument("--keep-float", action="append", default=[], metavar="PREFIX")
    parser.add_argument("--keep-float-nodes", action="append", default=[], metavar="REGEX")
    choices = [m for m in inference.INFERENCE_MODES if m != "fp32"]
    parser.add_argument("--modes", nargs="+", choices=choices, default=["int8"], help="the modes scored against fp32")
    parser.add_argument("--smoothing", type=smoothing_alpha, default=inference.ONNX_INT8_SMOOTHING, metavar="ALPHA|off")
    parser.add_argument("--int8-kernels", choices=KERNELS, default="exact")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    inference.ONNX_INT8_SMOOTHING = args.smoothing
    use_kernels(args.int8_kernels)
    missing = [str(p) for p in [args.pipeline, *args.corpora] if not p.exists()]
    if missing:
        print(f"✘ not found: {', '.join(missing)}", file=sys.stderr)
        return 1
    if args.keep_float:
        inference.FLOAT_PREFIXES = (*inference.FLOAT_PREFIXES, *args.keep_float)
        inference.ONNX_INT8_FLOAT_PREFIXES = (*inference.ONNX_INT8_FLOAT_PREFIXES, *args.keep_float)
    try:
        for pattern in args.keep_float_nodes:
            re.compile(pattern)
    except re.error as err:
        print(f"✘ --keep-float-nodes {err.pattern!r}: {err}", file=sys.stderr)
        return 1
    if args.keep_float_nodes:  # instead of the default's; '' (matches every name) is dropped: none
        inference.ONNX_INT8_FLOAT_NODES = tuple(p for p in args.keep_float_nodes if p)
    fp32 = scores(args.pipeline, args.corpora, "fp32")
    kept: Dict[str, List[str]] = {mode: [] for mode in args.modes}
    by_mode = {mode: scores(args.pipeline, args.corpora, mode, kept[mode]) for mode in args.modes}
    print(
        f"float in int8: {', '.join(inference.FLOAT_PREFIXES)} and what the char encoder's registered design keeps (CharDesign.int8_keep_float)"
    )
    print(f"float in onnx-int8: {', '.join(inference.ONNX_INT8_FLOAT_PREFIXES) or 'nothing'}")
    got_products = products(args.int8_kernels)
    print(f"ONNX Runtime's int8 kernels: {args.int8_kernels} (the int8 products on this CPU: {got_products})")
    if "onnx-int8" in kept:
        smoothing = "off" if args.smoothing is None else f"alpha {args.smoothing:g}"
        print(f"activation smoothing of the subword encoder in onnx-int8: {smoothing}")
        nodes = kept["onnx-int8"]
        print(f"graph nodes in float in onnx-int8 ({len(nodes)}): {', '.join(nodes) or 'none'}")
    for mode, got in by_mode.items():
        print(f"{'corpus':<28} {'fp32':>7} {mode:>9} {mode + ' - fp32':>16}")
        for name in fp32:
            print(f"{name:<28} {100 * fp32[name]:7.2f} {100 * got[name]:9.2f} {100 * (got[name] - fp32[name]):+16.2f}")
    if args.output:
        record = {
            "pipeline": str(args.pipeline),
            "float_in_int8": list(inference.FLOAT_PREFIXES),
            "float_nodes_in_onnx_int8": kept.get("onnx-int8", []),
            "onnx_int8_smoothing": args.smoothing,
            "int8_kernels": args.int8_kernels,
            "int8_products": got_products,
            "cpu_int8": cpu_int8_features(),
        }
        args.output.write_text(json.dumps({**record, "fp32": fp32, **by_mode}, indent=2) + "\n", encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
