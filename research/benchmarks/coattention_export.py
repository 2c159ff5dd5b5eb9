r"""onnx-int8 with the co-attention graphs traced from their traceable form (what the engine
does) against the graphs torch.export makes of the modules themselves (what it did before, and
still does for a module without that form): in one process, side by side, the first
prediction's time (the export, for a pipeline saved without graphs), words/s over rounds that
alternate the order, how many docs get the same entities, and each corpus' score in fp32 and
in both.

    OMP_NUM_THREADS=1 python research/benchmarks/coattention_export.py PIPELINE --data dev.spacy
        [--limit 500] [--rounds 5] [--corpora dev.spacy dev_noise0.5.spacy] [--output out.json]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import spacy
import torch
from int8_accuracy import corpus_scores  # research/benchmarks/ (setup.cfg: pytest pythonpath)
from spacy.language import Language
from spacy.tokens import DocBin

import spacy_entangle.modeling.engines.onnx as engine

KINDS = ("traced", "torch.export")


def load(pipeline: Path, kind: str, texts: List[str]) -> "tuple[Language, float]":
    """The pipeline in onnx-int8 with its co-attention graphs of ``kind``, and the seconds its
    first prediction took (the graphs are made then, unless the folder holds them)."""
    traceable = engine.traceable
    if kind == "torch.export":  # as if no module had a traceable form
        engine.traceable = lambda module: None
    try:
        nlp = spacy.load(pipeline, config={"components": {"entangle": {"inference": "onnx-int8"}}})
        start = time.perf_counter()
        list(nlp.pipe(texts[:4]))
        return nlp, time.perf_counter() - start
    finally:
        engine.traceable = traceable


def entities(nlp: Language, texts: List[str]) -> List[List[tuple]]:
    return [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]


def main(argv: List[str]) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("--data", type=Path, required=True, help="a .spacy corpus whose texts are timed")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpora", type=Path, nargs="*", default=[], help=".spacy corpora to score")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.limit < 1:
        parser.error("--rounds and --limit must be at least 1")
    docs = list(DocBin().from_disk(args.data).get_docs(spacy.blank("en").vocab))[: args.limit]
    if not docs:
        parser.error(f"--data {args.data} holds no docs")
    texts, words = [d.text for d in docs], sum(len(d) for d in docs)
    pipes, result = {}, {"threads": torch.get_num_threads(), "docs": len(texts), "words": words, "first": {}}
    for kind in KINDS:
        pipes[kind], result["first"][kind] = load(args.pipeline, kind, texts)
        print(f"{kind}: first prediction {result['first'][kind]:.1f} s", flush=True)
    found = [entities(pipes[kind], texts) for kind in KINDS]
    result["same_entities"] = sum(a == b for a, b in zip(*found))
    print(f"the same entities on {result['same_entities']} of {len(texts)} docs")
    speeds: Dict[str, List[float]] = {kind: [] for kind in KINDS}
    for r in range(args.rounds):
        for kind in KINDS if r % 2 == 0 else reversed(KINDS):
            start = time.perf_counter()
            list(pipes[kind].pipe(texts))
            speeds[kind].append(words / (time.perf_counter() - start))
    result["words_per_second"] = {kind: statistics.median(v) for kind, v in speeds.items()}
    ratio = result["words_per_second"]["traced"] / result["words_per_second"]["torch.export"]
    result["traced_vs_torch_export"] = ratio
    print(
        f"words/s (median of {args.rounds} rounds, {len(texts)} docs, one process): "
        + ", ".join(f"{k} {v:.0f}" for k, v in result["words_per_second"].items())
        + f"; traced / torch.export {ratio:.3f}x"
    )
    if args.corpora:
        fp32 = spacy.load(args.pipeline, config={"components": {"entangle": {"inference": "fp32"}}})
        result["scores"] = {"fp32": corpus_scores(fp32, args.corpora)}
        result["scores"].update({kind: corpus_scores(pipes[kind], args.corpora) for kind in KINDS})
        for name, row in result["scores"].items():
            print(f"{name}: " + ", ".join(f"{corpus} {100 * score:.2f}" for corpus, score in row.items()))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2), encoding="utf8")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
