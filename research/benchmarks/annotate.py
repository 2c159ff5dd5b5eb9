"""Throughput of `annotate`: the local engine (1 process, n_process 2) against Ray Data with 1
and 2 workers, on WNUT-17 dev text (one sentence per doc) repeated to ~20k docs.

Each engine runs twice: on the first 100 docs (start-up: loading the pipeline, spaCy's child
processes, Ray's actors) and on all docs; docs/s after start-up is
docs / (full run - start-up run). Starting the local Ray instance is timed apart. Every run's
shards are compared with the local single-process run's, byte for byte.

    python research/benchmarks/annotate.py --data ../shared/data/wnut17/dev.conll
    python research/benchmarks/annotate.py --data ... --pipeline en_entangle_wnut --docs 5000

Without --pipeline a CPU-bound stand-in is made in a temp dir: spaCy's default `ner`
(HashEmbedCNN tok2vec) with the WNUT-17 labels and random weights (speed does not depend on
the weights).
"""

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

os.environ.setdefault("OMP_NUM_THREADS", "1")

import spacy
import speed_data  # research/benchmarks/speed_data.py: the shared reader

from spacy_entangle.annotate import annotate

LABELS = ["corporation", "creative-work", "group", "location", "person", "product"]


def read_sentences(path: Path) -> List[str]:
    """One line per sentence of a CoNLL file or .spacy corpus (speed_data's reader): its
    tokens joined by spaces."""
    return [" ".join(words) for words, _ in speed_data.read_sentences(path)]


def make_stand_in(path: Path) -> Path:
    nlp = spacy.blank("en")
    ner = nlp.add_pipe("ner")
    for label in LABELS:
        ner.add_label(label)
    nlp.initialize()
    nlp.to_disk(path)
    return path


def shards(out: Path) -> Dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*-0*.jsonl"))}


def timed(pipeline: str, inputs: Path, out: Path, **kwargs) -> float:
    start = time.perf_counter()
    annotate(pipeline, [inputs], out, progress=False, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/wnut17/dev.conll"))
    parser.add_argument("--pipeline", default=None, help="trained pipeline (default: a random-weight ner stand-in)")
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--shard-size", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="annotate-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    pipeline = args.pipeline or str(make_stand_in(tmp / "pipeline"))
    sentences = read_sentences(args.data)
    texts = (sentences * (args.docs // len(sentences) + 1))[: args.docs]
    (tmp / "full.txt").write_text("\n".join(texts) + "\n", encoding="utf8")
    (tmp / "small.txt").write_text("\n".join(texts[:100]) + "\n", encoding="utf8")
    common = dict(shard_size=args.shard_size, batch_size=args.batch_size)
    print(
        f"{len(texts)} docs ({args.data.name} x{len(texts) / len(sentences):.1f}), pipeline {pipeline}, "
        f"{os.cpu_count()} CPUs, shards of {args.shard_size}"
    )

    runs: List[Tuple[str, dict]] = [
        ("local, 1 process", dict(engine="local")),
        ("local, n_process 2", dict(engine="local", n_process=2)),
        ("ray, 1 worker", dict(engine="ray", num_workers=1)),
        ("ray, 2 workers", dict(engine="ray", num_workers=2)),
    ]
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray_start = time.perf_counter() - start

    rows = []
    for i, (name, kwargs) in enumerate(runs):
        startup = timed(pipeline, tmp / "small.txt", tmp / f"small-{i}", **common, **kwargs)
        total = timed(pipeline, tmp / "full.txt", tmp / f"full-{i}", **common, **kwargs)
        rows.append((name, startup, total, len(texts) / max(total - startup, 1e-9), shards(tmp / f"full-{i}")))
    ray.shutdown()

    base_rate, base_out = rows[0][3], rows[0][4]
    print(f"starting a local Ray instance: {ray_start:.1f} s (once, not in the rows)")
    print(f"{'engine':<20} {'start-up s':>10} {'total s':>8} {'docs/s':>8} {'vs local 1':>10}  same bytes")
    for name, startup, total, rate, out in rows:
        print(f"{name:<20} {startup:>10.1f} {total:>8.1f} {rate:>8.0f} {rate / base_rate:>9.2f}x  {out == base_out}")


if __name__ == "__main__":
    main()
