"""Memory of `annotate` in the number of docs: shard bytes per doc and the peak RSS of the
annotate process, for a tiny entangle pipeline (random 32-wide CANINE and BERT, ner + tagger)
saved with ``store_output = true`` (the old default, which kept every doc's states), over N tweets (WNUT-17 dev
sentences repeated). Run it at two N: a flat peak RSS means no doc's states are kept.

    OMP_NUM_THREADS=1 python research/benchmarks/annotate_memory.py WORKDIR --data ../shared/data/wnut17/dev.conll --docs 10000
    OMP_NUM_THREADS=1 python research/benchmarks/annotate_memory.py WORKDIR --data ... --docs 20000

The peak RSS comes from /usr/bin/time -v (GNU time), the shard size from the .spacy files.
"""

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import speed_data  # research/benchmarks/speed_data.py: the shared reader


def make_pipeline(path: Path) -> Path:
    """The tiny pipeline, saved once into ``path``."""
    if (path / "config.cfg").exists():
        return path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from _pipelines import build, examples

    from spacy_entangle.backbone_dirs import make_random_canine, make_random_subword

    work = path.parent
    canine = make_random_canine(
        work / "canine", layers=1, width=32, heads=2, local_stride=16, hash_buckets=2048, max_chars=2048
    )
    bert = make_random_subword(work / "bert", kind="bert", layers=1, width=32, heads=2)
    nlp = build(canine, bert, components=("ner", "tagger"), store_output=True)
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--data", type=Path, required=True, help="CoNLL or .spacy: its sentences, repeated")
    parser.add_argument("--docs", type=int, default=20000)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    texts = [" ".join(words) for words, _ in speed_data.read_sentences(args.data)]
    corpus = args.workdir / f"tweets_{args.docs}.txt"
    corpus.write_text("\n".join((texts * (args.docs // len(texts) + 1))[: args.docs]) + "\n", encoding="utf8")
    pipeline = make_pipeline(args.workdir / "pipeline")
    out = args.workdir / f"out_{args.docs}"
    cmd = [sys.executable, "-m", "spacy_entangle", "annotate", str(pipeline), str(corpus), str(out)]
    cmd += ["--format", "spacy", "--no-progress"]
    shutil.rmtree(out, ignore_errors=True)  # annotate resumes: start from nothing
    start = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if run.returncode:
        sys.exit(run.stderr[-2000:])
    peak_kb = next(int(line.split()[-1]) for line in run.stderr.splitlines() if "Maximum resident" in line)
    shard_bytes = sum(p.stat().st_size for p in out.glob("*.spacy"))
    print(
        f"{args.docs} docs ({len(texts)} sentences repeated) in {time.perf_counter() - start:.0f} s: "
        f"shard bytes per doc {shard_bytes / args.docs:.0f}, peak RSS {peak_kb / 2**20:.2f} GiB"
    )


if __name__ == "__main__":
    main()
