"""What the window overlap costs a trained pipeline on long docs (issue 30): a dev corpus's
docs joined into docs of about --doc-chars characters (their gold entities kept), each long
doc predicted with the entangle component's windows at every --overlaps value, and with the
baseline (--baseline) as it is; entity F1 and seconds per run. A tweet is one window: only
docs longer than a window (1,024 characters in the CPU preset) see the overlap at all.
--windows CHARS:PIECES ... also tries smaller (or larger) windows than the pipeline's own
(`window_getter`'s max_chars / max_pieces, set at load time like the overlap): each overlap at
each window size.

    OMP_NUM_THREADS=1 python research/benchmarks/long_doc_f1.py project/training/entangle-aug/seed0/model-best \\
        --data project/corpus/dev.spacy --doc-chars 20000 --overlaps 0.25 0.1 0 \\
        --baseline project/training/baseline-aug/seed0/model-best --threads 1 [--windows 1024:256 256:64]
"""

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import spacy
from spacy.language import Language
from spacy.scorer import Scorer
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from speed_timing import environment, print_table, save, use_device


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, help="a trained pipeline with an entangle component and an ner")
    p.add_argument("--data", type=Path, required=True, help="a .spacy corpus with gold entities (dev)")
    p.add_argument("--doc-chars", type=int, default=20_000, help="characters per joined doc (at least)")
    p.add_argument("--overlaps", type=float, nargs="+", default=[0.25, 0.1, 0.0], help="window overlaps tried")
    p.add_argument(
        "--windows",
        nargs="+",
        default=[],
        metavar="CHARS:PIECES",
        help="window sizes tried, specials included (default: the pipeline's own)",
    )
    p.add_argument("--baseline", type=Path, default=None, help="a second pipeline, scored as it is")
    p.add_argument("--threads", type=int, default=1, help="torch threads (0 = torch's default)")
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    if args.doc_chars < 1:
        p.error("--doc-chars must be >= 1")
    if not all(0.0 <= o < 1.0 for o in args.overlaps):
        p.error("--overlaps: each must be in [0, 1)")
    try:
        args.windows = [tuple(int(n) for n in w.split(":")) for w in args.windows]
    except ValueError:
        p.error(f"--windows: each must be CHARS:PIECES (two integers), got {args.windows}")
    if not all(len(w) == 2 and min(w) >= 1 for w in args.windows):
        p.error(f"--windows: each must be CHARS:PIECES, two positive integers, got {args.windows}")
    if args.data.suffix != ".spacy":
        p.error(f"--data must be a .spacy corpus with gold entities, got {args.data}")
    return args


def joined_docs(nlp: Language, path: Path, doc_chars: int) -> List[Doc]:
    """The corpus's docs, in order, joined into docs of at least ``doc_chars`` characters
    (the last may be shorter), entities kept (``Doc.from_docs``)."""
    groups: List[List[Doc]] = [[]]
    size = 0
    for doc in DocBin().from_disk(path).get_docs(nlp.vocab):
        if size >= doc_chars:
            groups.append([])
            size = 0
        groups[-1].append(doc)
        size += len(doc.text) + 1
    return [Doc.from_docs(group) for group in groups if group]


def warmed(path: Path, golds: List[Doc]) -> Language:
    """A loaded pipeline that has predicted once (first-call costs out of the timed runs)."""
    nlp = spacy.load(path)
    list(nlp.pipe([golds[0][: min(len(golds[0]), 400)].text] if golds else []))
    return nlp


def score(nlp: Language, golds: List[Doc]) -> Dict[str, float]:
    """Entity F1 (in points) of ``nlp`` on the gold docs' words, and the seconds it took."""
    start = time.perf_counter()
    inputs = [Doc(nlp.vocab, words=[t.text for t in g], spaces=[bool(t.whitespace_) for t in g]) for g in golds]
    examples = [Example(pred, gold) for pred, gold in zip(nlp.pipe(inputs), golds)]
    seconds = time.perf_counter() - start
    return {"f1": round(100 * (Scorer.score_spans(examples, "ents")["ents_f"] or 0.0), 2), "seconds": round(seconds, 1)}


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    device = use_device(-1, args.threads)
    golds = joined_docs(spacy.blank("xx"), args.data, args.doc_chars)
    runs: Dict[str, Dict[str, float]] = {}
    nlp = warmed(args.model, golds)
    model = nlp.get_pipe("entangle").model
    own = model.attrs["window_settings"]
    # (max_chars, max_pieces, label): the pipeline's own windows first, then each --windows size
    sizes = [(own.max_chars, own.max_pieces, ", its own windows" if args.windows else "")]
    sizes += [(chars, pieces, f", windows {chars} chars / {pieces} pieces") for chars, pieces in args.windows]
    for chars, pieces, label in sizes:  # the windows are cut at prediction: one loaded pipeline serves all
        for overlap in args.overlaps:
            model.attrs["window_settings"] = dataclasses.replace(
                own, overlap=overlap, max_chars=chars, max_pieces=pieces
            )
            runs[f"entangle, overlap {overlap:g}{label}"] = score(nlp, golds)
    model.attrs["window_settings"] = own
    if args.baseline:
        runs["baseline"] = score(warmed(args.baseline, golds), golds)
    chars = sum(len(d.text) for d in golds)
    print_table(
        f"entity F1 on {len(golds)} docs of about {args.doc_chars:,} characters ({chars:,} in all, "
        f"{sum(len(d.ents) for d in golds)} gold entities), {environment(device)['torch_threads']} torch thread(s)",
        ["pipeline", "F1", "seconds"],
        [[name, f"{r['f1']:.2f}", f"{r['seconds']:.1f}"] for name, r in runs.items()],
    )
    return save({"docs": len(golds), "chars": chars, "runs": runs, **environment(device)}, args.output)


if __name__ == "__main__":
    main()
