"""Trained pipelines side by side: words/s of ``nlp.pipe`` and each one's speed relative to
the first (the reference), interleaved rounds, best of --repeats.

The pipelines are given as NAME=DIR, or read from a file of such lines with @FILE (the
project writes one: ``scripts/variants.py pipelines``); a DIR that does not exist (a
variant not trained) is skipped with a note.

    python research/benchmarks/speed_compare.py --data project/corpus/dev.spacy --limit 0 \\
        --pipelines a=project/training/entangle/seed0/model-best b=project/training/baseline/seed0/model-best
    cd project && python ../research/benchmarks/speed_compare.py --data corpus/dev.spacy --pipelines @metrics/pipelines_seed0.txt
    cd project && python ../research/benchmarks/speed_compare.py --data corpus/dev.spacy --modes fp32 int8 --pipelines baseline=... entangle=...

--modes times each pipeline with an `entangle` component once per inference mode (named
NAME@MODE after the first), all in the same interleaved rounds; other pipelines run once.
The mode `default` is the pipeline as saved (its own `inference` setting: "auto" in the
packaged en_entangle_wnut), the others are set at load.
--agreement then compares each NAME@MODE with NAME on the same docs: the share of docs with
the same predictions (entities, tags, categories) and the largest difference of the entangle
states per side (what a mode changes, where no gold data or trained head is at hand). The
CPU engines, the baseline first, one thread (OMP_NUM_THREADS=1 and --threads 1):

    OMP_NUM_THREADS=1 python research/benchmarks/speed_compare.py --data ../shared/data/wnut17/dev.conll \
        --limit 600 --threads 1 --modes fp32 int8 bf16 onnx onnx-int8 --agreement \
        --pipelines baseline=BASELINE_DIR entangle=ENTANGLE_DIR

--float-nodes LABEL=REGEX adds NAME@onnx-int8+LABEL: onnx-int8 with the graph nodes REGEX
matches left in float instead of the default's (what `int8_accuracy.py --keep-float-nodes`
scores), timed in the same rounds, e.g. `--float-nodes 'ffn=subword_encoder/.*layer\\.\\d+/output/dense'`;
an empty REGEX (`--float-nodes all-int8=`) quantizes every node. `--what-if-smoothing ALPHA|off`
makes those what-ifs with that activation smoothing (default: the default's), e.g. the
default before smoothing: `--float-nodes 'before=subword_encoder/.*layer\\.[0-2]/output/dense/'
--what-if-smoothing off`. `--what-if-arena` adds NAME@onnx-int8+arena: onnx-int8 with ONNX
Runtime's memory arena on (off by default: it kept a long doc's activations), in the same rounds.
"""

import argparse
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import spacy
from int8_accuracy import smoothing_alpha
from spacy.language import Language
from speed_data import Text, make_docs, n_words, read_sentences, texts_of
from speed_timing import best_seconds, environment, print_table, save, use_device

import spacy_entangle.modeling.inference as inference
from spacy_entangle.modeling.inference import INFERENCE_SETTINGS

# --modes: an inference setting set at load, or the pipeline's own (as saved)
DEFAULT = "default"
MODE_CHOICES = (DEFAULT, *INFERENCE_SETTINGS)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, fromfile_prefix_chars="@"
    )
    p.add_argument("--data", type=Path, required=True, help="CoNLL file (WORD<TAB>BIO-TAG) or .spacy corpus")
    p.add_argument(
        "--pipelines",
        nargs="+",
        required=True,
        metavar="NAME=DIR",
        help="the trained pipelines (the first is the reference); @FILE: one NAME=DIR a line",
    )
    p.add_argument("--limit", type=int, default=0, help="sentences timed (0 = all)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds, the best is kept")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument(
        "--modes",
        nargs="+",
        choices=MODE_CHOICES,
        default=["fp32"],
        help="the inference modes of the pipelines with an entangle component (the first keeps NAME)",
    )
    p.add_argument(
        "--agreement", action="store_true", help="compare each NAME@MODE's predictions and states with NAME's"
    )
    p.add_argument(
        "--float-nodes",
        action="append",
        default=[],
        metavar="LABEL=REGEX",
        help="also time NAME@onnx-int8+LABEL, its graph nodes matching REGEX in float (repeatable)",
    )
    p.add_argument(
        "--what-if-smoothing",
        type=smoothing_alpha,
        default=inference.ONNX_INT8_SMOOTHING,
        metavar="ALPHA|off",
        help="the --float-nodes what-ifs' activation smoothing in onnx-int8 (default: the default's)",
    )
    p.add_argument(
        "--what-if-arena",
        action="store_true",
        help="also time NAME@onnx-int8+arena: ONNX Runtime's memory arena on (engines.onnx.CPU_MEM_ARENA)",
    )
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    args.pipelines = pipeline_specs(p, args.pipelines)
    args.float_nodes = float_node_specs(p, args.float_nodes)
    check_common(p, args)
    return args


def float_node_specs(p: argparse.ArgumentParser, specs: Sequence[str]) -> List[Tuple[str, str]]:
    out = []
    for spec in specs:
        label, sep, pattern = spec.partition("=")
        if not sep or not label:
            p.error(f"--float-nodes: expected LABEL=REGEX, got {spec!r}")
        try:
            re.compile(pattern)
        except re.error as err:
            p.error(f"--float-nodes {spec!r}: {err}")
        out.append((label, pattern))
    return out


@contextmanager
def onnx_int8_what_if(patterns: Sequence[str], smoothing: Optional[float]) -> Iterator[None]:
    """ONNX_INT8_FLOAT_NODES and ONNX_INT8_SMOOTHING replaced while a pipeline makes its
    onnx-int8 copy (its first prediction)."""
    before = inference.ONNX_INT8_FLOAT_NODES, inference.ONNX_INT8_SMOOTHING
    inference.ONNX_INT8_FLOAT_NODES, inference.ONNX_INT8_SMOOTHING = tuple(patterns), smoothing
    try:
        yield
    finally:
        inference.ONNX_INT8_FLOAT_NODES, inference.ONNX_INT8_SMOOTHING = before


@contextmanager
def arena_what_if() -> Iterator[None]:
    """ONNX Runtime's memory arena on while a pipeline makes its graphs (its first prediction):
    they keep it."""
    from spacy_entangle.modeling.engines import onnx as engine

    before = engine.CPU_MEM_ARENA
    engine.CPU_MEM_ARENA = True
    try:
        yield
    finally:
        engine.CPU_MEM_ARENA = before


def pipeline_specs(p: argparse.ArgumentParser, specs: Sequence[str]) -> List[Tuple[str, Path]]:
    out = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            p.error(f"--pipelines: expected NAME=DIR, got {spec!r}")
        out.append((name, Path(path)))
    return out


def check_common(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The options every speed script shares: a clear error naming the option."""
    if args.limit < 0:
        p.error("--limit must be >= 0")
    for name in ("repeats", "batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if not args.data.exists():
        p.error(f"--data: {args.data} does not exist")


def entangle_names(nlp: Language) -> List[str]:
    """The pipeline's components made by the `entangle` factory."""
    return [name for name in nlp.component_names if nlp.get_pipe_meta(name).factory == "entangle"]


def mode_overrides(entangles: Sequence[str], mode: str, default: Optional[str] = None) -> Dict[str, Any]:
    """The load config of a --modes entry: the inference setting of every `entangle`
    component, or none for `default` (the pipeline's own, or ``default`` when given)."""
    setting = default if mode == DEFAULT else mode
    return {"components": {e: {"inference": setting} for e in entangles}} if setting else {}


def load_modes(
    name: str,
    path: Path,
    modes: Sequence[str],
    float_nodes: Sequence[Tuple[str, str]] = (),
    smoothing: Optional[float] = inference.ONNX_INT8_SMOOTHING,
    default: Optional[str] = None,
    arena: bool = False,
) -> Dict[str, Language]:
    """The pipeline once per inference mode (NAME, then NAME@MODE) when it has an `entangle`
    component, else once: each mode is set through the load config, as a user would (`default`:
    as saved, or in ``default`` when given); then once per (LABEL, REGEX) of ``float_nodes`` in
    onnx-int8 with those nodes in float and ``smoothing`` (an alpha, None: off); with ``arena``
    once more in onnx-int8 with ONNX Runtime's memory arena on."""
    nlp = spacy.load(path)
    entangles = entangle_names(nlp)
    if not entangles:
        return {name: nlp}
    out = {}
    for i, mode in enumerate(modes):
        out[name if i == 0 else f"{name}@{mode}"] = spacy.load(path, config=mode_overrides(entangles, mode, default))
    for label, pattern in float_nodes:
        what_if = spacy.load(path, config={"components": {e: {"inference": "onnx-int8"} for e in entangles}})
        with onnx_int8_what_if([pattern] if pattern else [], smoothing):
            what_if("a first prediction makes the onnx-int8 copy")
        out[f"{name}@onnx-int8+{label}"] = what_if
    if arena:
        what_if = spacy.load(path, config={"components": {e: {"inference": "onnx-int8"} for e in entangles}})
        with arena_what_if():
            what_if("a first prediction makes the onnx-int8 copy")
        out[f"{name}@onnx-int8+arena"] = what_if
    return out


def part_pipelines(specs: Sequence[Tuple[str, Path]], texts: List[Text], args) -> Dict[str, Any]:
    """Trained pipelines side by side: words/s and each one's speed relative to the first.
    A directory that does not exist (a variant not trained) is skipped with a note."""
    pipes: Dict[str, Language] = {}
    paths: Dict[str, str] = {}
    for name, path in specs:
        if not path.exists():
            print(f"ℹ {name}: no {path}, skipped")
            continue
        loaded = load_modes(
            name,
            path,
            args.modes,
            args.float_nodes,
            args.what_if_smoothing,
            getattr(args, "default", None),
            getattr(args, "what_if_arena", False),
        )
        pipes.update(loaded)
        paths.update({key: str(path) for key in loaded})
    if not pipes:
        raise SystemExit("speed_compare.py: none of the --pipelines exists")
    args.pipes = pipes  # for --agreement
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    words = n_words(texts)
    reference = next(iter(pipes))
    models = {
        name: {
            "model": paths[name],
            "seconds": round(best[name], 4),
            "words_per_second": round(words / best[name], 1),
            "relative_to_reference": round(best[reference] / best[name], 4),
        }
        for name in pipes
    }
    print_table(
        f"trained pipelines: {len(texts)} docs, {words} words, batch size {args.batch_size}, best of {args.repeats}",
        ["pipeline", "words/s", f"vs {reference}"],
        [[name, f"{m['words_per_second']:,.0f}", f"{m['relative_to_reference']:.2f}x"] for name, m in models.items()],
    )
    for name in models:
        if name != reference:  # seconds of the other over seconds of the reference
            print(f"   speed ratio {reference} : {name} = {best[name] / best[reference]:.2f}")
    return {
        "docs": len(texts),
        "words": words,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "device": f"gpu:{args.gpu_id}" if args.gpu_id >= 0 else "cpu",
        "reference": reference,
        "models": models,
    }


def _predicted(nlp: Language, texts: List[Text], batch_size: int) -> List[Any]:
    """The docs as ``nlp`` predicts them, with the entangle states kept (store_output)."""
    entangles = entangle_names(nlp)
    before = {e: nlp.get_pipe(e).cfg.get("store_output") for e in entangles}
    for e in entangles:
        nlp.get_pipe(e).cfg["store_output"] = True
    try:
        return list(nlp.pipe(make_docs(nlp, texts), batch_size=batch_size))
    finally:
        for e, value in before.items():
            nlp.get_pipe(e).cfg["store_output"] = value


def _prediction(doc: Any) -> Tuple[Any, ...]:
    cats = max(doc.cats, key=doc.cats.get) if doc.cats else None
    return tuple((e.start, e.end, e.label_) for e in doc.ents), tuple(t.tag_ for t in doc), cats


def _max_diff(a: List[Any], b: List[Any], side: str) -> Optional[float]:
    diffs = [
        float(abs(x - y).max())
        for x, y in ((getattr(d._.entangle, side), getattr(e._.entangle, side)) for d, e in zip(a, b))
        if x is not None and y is not None and len(x)
    ]
    return max(diffs) if diffs else None


def part_agreement(pipes: Dict[str, Language], texts: List[Text], batch_size: int) -> Dict[str, Any]:
    """Each NAME@MODE against NAME (its first mode) on the same docs: the share of docs with
    the same predictions, and the largest |difference| of the entangle states per side."""
    out: Dict[str, Any] = {}
    reference: Dict[str, List[Any]] = {}
    for name, nlp in pipes.items():
        base = name.split("@")[0]
        if base == name or base not in pipes:
            continue
        if base not in reference:
            reference[base] = _predicted(pipes[base], texts, batch_size)
        docs = _predicted(nlp, texts, batch_size)
        same = sum(_prediction(a) == _prediction(b) for a, b in zip(reference[base], docs))
        out[name] = {
            "same_predictions": round(same / len(docs), 4),
            **{f"max_diff_{side}": _max_diff(reference[base], docs, side) for side in ("subword", "char")},
        }
    if out:

        def cell(value: Optional[float]) -> str:
            return "n/a" if value is None else f"{value:.2g}"

        print_table(
            f"agreement with each pipeline's first mode ({len(texts)} docs)",
            ["pipeline", "same predictions", "max |diff| subword", "max |diff| char"],
            [
                [n, f"{100 * r['same_predictions']:.1f}%", cell(r["max_diff_subword"]), cell(r["max_diff_char"])]
                for n, r in out.items()
            ],
        )
    return out


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    device = use_device(args.gpu_id, args.threads)
    texts = texts_of(read_sentences(args.data, args.limit))
    results = {
        "settings": {"data": str(args.data), "limit": args.limit, **environment(device)},
        "pipelines": part_pipelines(args.pipelines, texts, args),
    }
    if args.agreement:
        results["agreement"] = part_agreement(args.pipes, texts, args.batch_size)
    return save(results, args.output)


if __name__ == "__main__":
    main()
