"""What confidence scores per entity cost a trained pipeline (issue 32): its `ner` as trained
(greedy) against the same weights decoded by a beam (`scored_ner`, made as `add-scores` makes
it) of each --beam-widths, side by side in ONE process:

- entity F1 on each scored corpus (--data when it is a .spacy corpus, and --noisy), and the
  beam's F1 minus the greedy one (target: a cost <= 0.5 points);
- words/s of ``nlp.pipe`` on --limit docs of --data, interleaved rounds, best of --repeats, as
  a ratio to the greedy pipeline's (target: >= 0.90, a cost <= 10%);
- the entity recognizer alone on docs encoded once (the beam's own added time, without the
  encoder's noise), as a share of the greedy pipeline's time;
- what the scores say: the precision of the predicted entities by score band, on each corpus.

    OMP_NUM_THREADS=1 python research/benchmarks/scored_ner.py project/training/entangle-aug/seed0/model-best \\
        --data project/corpus/dev.spacy --noisy project/noisy/dev_noise0.5.spacy \\
        --beam-widths 4 8 --limit 500 --repeats 3 --threads 1
"""

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import spacy
from spacy.language import Language
from spacy.scorer import Scorer
from spacy.training import Corpus, Example
from speed_data import make_docs, n_words, read_sentences, texts_of
from speed_timing import best_seconds, environment, print_table, save, use_device

from spacy_entangle.pipeline.scored_ner import load_scored

F1_COST, SPEED = 0.5, 0.90  # the targets: <= 0.5 dev F1 points, <= 10% of the words/s
BANDS = ((0.9, 1.01), (0.5, 0.9), (0.0, 0.5))  # score bands, [low, high)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pipeline", type=Path, help="a trained pipeline with a transition-based `ner`")
    p.add_argument("--data", type=Path, required=True, help="dev data: .spacy corpus (scored and timed) or CoNLL")
    p.add_argument("--noisy", type=Path, action="append", default=[], help="a noisy .spacy dev corpus to score")
    p.add_argument("--beam-widths", type=int, nargs="+", default=[4], help="the beams compared with greedy")
    p.add_argument("--component", default="ner", help="the entity recognizer")
    p.add_argument("--limit", type=int, default=500, help="docs timed (0 = all)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds, the best is kept")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="torch threads (0 = torch's default)")
    p.add_argument("--no-speed", action="store_true", help="scores only")
    p.add_argument("--no-scores", action="store_true", help="speed only")
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    if args.limit < 0:
        p.error("--limit must be >= 0")
    for name in ("repeats", "batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if any(w < 2 for w in args.beam_widths):
        p.error("--beam-widths: each must be >= 2 (1 is the greedy pipeline, always compared)")
    for path in [args.pipeline, args.data, *args.noisy]:
        if not path.exists():
            p.error(f"{path} does not exist")
    return args


def load_pipelines(path: Path, component: str, widths: Sequence[int]) -> Dict[str, Language]:
    """The pipeline as trained (greedy), then once per beam width (scored_ner)."""
    pipes = {"greedy": spacy.load(path)}
    for width in widths:
        pipes[f"beam{width}"] = load_scored(path, component, beam_width=width)
    return pipes


def evaluate(nlp: Language, corpus: Path) -> Tuple[float, List[Example]]:
    """Entity F1 of ``nlp`` on ``corpus``, and the examples (predicted docs annotated)."""
    examples = list(Corpus(str(corpus))(nlp))  # predicted: the tokens alone
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        eg.predicted = doc
    result = Scorer(nlp).score(examples)  # nlp.evaluate's scores, the annotated docs kept
    return float(result.get("ents_f") or 0.0), examples


def score_bands(examples: Sequence[Example], spans_key: str) -> List[Dict[str, Any]]:
    """Per score band: the predicted entities in it, and the share of them that are gold
    entities (same start, end and label)."""
    counts = [[0, 0] for _ in BANDS]
    for eg in examples:
        gold = {(e.start_char, e.end_char, e.label_) for e in eg.reference.ents}
        group = eg.predicted.spans.get(spans_key)
        if group is None:
            continue
        for span, score in zip(group, group.attrs["scores"]):
            band = next(i for i, (low, high) in enumerate(BANDS) if low <= float(score) < high)
            counts[band][0] += 1
            counts[band][1] += (span.start_char, span.end_char, span.label_) in gold
    return [
        {"band": f"[{low:.1f}, {min(high, 1.0):.1f}{']' if high > 1 else ')'}", "entities": n, "correct": c}
        for (low, high), (n, c) in zip(BANDS, counts)
    ]


def part_scores(pipes: Dict[str, Language], corpora: Sequence[Path], component: str) -> Dict[str, Any]:
    f1: Dict[str, Dict[str, float]] = {}
    bands: Dict[str, Dict[str, Any]] = {}
    for name, nlp in pipes.items():
        f1[name] = {}
        for corpus in corpora:
            f1[name][corpus.name], examples = evaluate(nlp, corpus)
            if name != "greedy":
                spans_key = nlp.get_pipe(component).spans_key
                bands.setdefault(name, {})[corpus.name] = score_bands(examples, spans_key)
    rows = []
    for corpus in corpora:
        base = f1["greedy"][corpus.name]
        for name in pipes:
            got = f1[name][corpus.name]
            diff = round(100 * (got - base), 2)
            verdict = "" if name == "greedy" else ("met" if -diff <= F1_COST else "missed")
            rows.append([corpus.name, name, f"{100 * got:.2f}", "" if name == "greedy" else f"{diff:+.2f}", verdict])
    print_table(
        f"entity F1 (target: a cost <= {F1_COST} points)",
        ["corpus", "pipeline", "F1", "vs greedy", "target"],
        rows,
    )
    band_rows = [
        [
            corpus,
            name,
            b["band"],
            str(b["entities"]),
            f"{100 * b['correct'] / b['entities']:.1f}" if b["entities"] else "-",
        ]
        for name, by_corpus in bands.items()
        for corpus, rows_ in by_corpus.items()
        for b in rows_
    ]
    print_table(
        "the scores: predicted entities per score band, and the share of them that are right (precision)",
        ["corpus", "pipeline", "score", "entities", "precision %"],
        band_rows,
    )
    return {"f1": f1, "score_bands": bands}


def part_speed(pipes: Dict[str, Language], texts: List[Any], repeats: int, batch_size: int) -> Dict[str, Any]:
    best = best_seconds(pipes, texts, repeats, batch_size)
    words = n_words(texts)
    out = {
        name: {
            "seconds": round(best[name], 4),
            "words_per_second": round(words / best[name], 1),
            "vs_greedy": round(best["greedy"] / best[name], 4),
        }
        for name in pipes
    }
    print_table(
        f"words/s: {len(texts)} docs, {words} words, batch size {batch_size}, best of {repeats} "
        f"interleaved rounds (target: >= {SPEED:.2f}x greedy)",
        ["pipeline", "words/s", "vs greedy", "target"],
        [
            [
                name,
                f"{m['words_per_second']:,.0f}",
                f"{m['vs_greedy']:.3f}x",
                "" if name == "greedy" else ("met" if m["vs_greedy"] >= SPEED else "missed"),
            ]
            for name, m in out.items()
        ],
    )
    return {"docs": len(texts), "words": words, "batch_size": batch_size, "repeats": repeats, "pipelines": out}


def part_component(
    path: Path,
    pipes: Dict[str, Language],
    component: str,
    texts: List[Any],
    repeats: int,
    batch_size: int,
    total: float,
) -> Dict[str, Any]:
    """The entity recognizer alone, on docs encoded once (their `entangle` states kept): its
    seconds per pipeline (interleaved rounds, best of ``repeats``), and what the beam adds as a
    share of the whole greedy pipeline's seconds (``total``): the words/s cost with the noise of
    the encoder's time left out."""
    encoder = spacy.load(path, config={"components": {"entangle": {"store_output": True}}})
    docs = list(encoder.pipe(make_docs(encoder, texts), batch_size=batch_size, disable=[component]))
    best = {name: math.inf for name in pipes}
    for _ in range(repeats + 1):  # the first round warms up
        for name, nlp in pipes.items():
            proc = nlp.get_pipe(component)
            start = time.perf_counter()
            for _ in proc.pipe(docs, batch_size=batch_size):
                pass
            best[name] = min(best[name], time.perf_counter() - start)
    out = {
        name: {"seconds": round(best[name], 4), "added_share": round((best[name] - best["greedy"]) / total, 4)}
        for name in pipes
    }
    print_table(
        f"the '{component}' component alone on the same {len(docs)} docs (encoded once), best of {repeats}; "
        "its added time as a share of the greedy pipeline's",
        ["pipeline", f"{component} seconds", "added", "so words/s at most"],
        [
            [name, f"{m['seconds']:.3f}", f"{100 * m['added_share']:+.2f}%", f"{1 / (1 + m['added_share']):.3f}x"]
            for name, m in out.items()
        ],
    )
    return out


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    device = use_device(-1, args.threads)
    pipes = load_pipelines(args.pipeline, args.component, args.beam_widths)
    corpora = ([args.data] if args.data.suffix == ".spacy" else []) + list(args.noisy)
    results: Dict[str, Any] = {
        "settings": {"pipeline": str(args.pipeline), "data": str(args.data), **environment(device)},
    }
    if corpora and not args.no_scores:
        results["scores"] = part_scores(pipes, corpora, args.component)
    if not args.no_speed:
        texts = texts_of(read_sentences(args.data, args.limit))
        results["speed"] = part_speed(pipes, texts, args.repeats, args.batch_size)
        total = results["speed"]["pipelines"]["greedy"]["seconds"]
        results["component"] = part_component(
            args.pipeline, pipes, args.component, texts, args.repeats, args.batch_size, total
        )
    return save(results, args.output)


if __name__ == "__main__":
    main()
