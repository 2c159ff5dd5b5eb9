"""Seconds per step and characters per second of growing a char encoder (`pretrain-chars
--init-from`) in 1 and N data-parallel processes, stage A (word types) and stage B
(contextual distillation) apart: the real command, launched as a user would (N > 1:
`torchrun --standalone --nproc_per_node N`), timed from its own log (pretrain_log.jsonl:
the steps alone, without imports and loading). A step is a global step: the same global
batch (--batch-size tweets, --type-batch word types) whatever the number of processes.

    # MiniLM-grown, 1 and 2 processes on this machine's cores
    python research/benchmarks/grow_scaling.py ../shared/data/tweets_unlabeled/tweets.txt \\
        --init-from project/backbones/minilm --k 6 --procs 1,2 --steps 30

    # a BERT-base-shaped subword encoder (12 layers, 768 wide, random weights; built once
    # into --work), all 12 layers copied
    python research/benchmarks/grow_scaling.py ../shared/data/tweets_unlabeled/tweets.txt \\
        --bert-base --procs 1,2 --steps 10

On CPU each process gets --threads threads (default: the cores shared out among the
processes), so 1 and N processes use the same cores. With --gpu-id 0 or more each process
takes one GPU (LOCAL_RANK under torchrun). Stage A times have the log's resolution (0.1 s
over the run): give it enough --steps.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional


def grow_command(args: argparse.Namespace, init_from: Path, procs: int, out: Path) -> List[str]:
    """`python -m spacy_entangle pretrain-chars ...`, under torchrun for several processes:
    --steps of stage A, then --steps of stage B."""
    launcher = [sys.executable]
    if procs > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(procs)]
    flags = {
        "--init-from": init_from,
        "--max-steps": 2 * args.steps,
        "--stage-a-steps": args.steps,
        "--batch-size": args.batch_size,
        "--type-batch": args.type_batch,
        "--noise-rate": 0.5,
        "--log-every": 1,
        "--checkpoint-every": 10**6,
        "--gpu-id": args.gpu_id,
    }
    if args.k:
        flags["--k"] = args.k
    options = [str(x) for pair in flags.items() for x in pair]
    return [*launcher, "-m", "spacy_entangle", "pretrain-chars", *map(str, args.text), str(out), *options]


def stage_figures(entries: List[Dict[str, Any]], key: str) -> Optional[Dict[str, float]]:
    """Seconds per step and median characters per second over a stage's logged steps (its
    first step left out: warm-up, and the previous stage's last work lands in it)."""
    steps = [e for e in entries if key in e][1:]
    if len(steps) < 2:
        return None
    seconds = (steps[-1]["elapsed_s"] - steps[0]["elapsed_s"]) / (len(steps) - 1)
    return {
        "s_per_step": round(seconds, 3),
        "chars_per_s": round(statistics.median(e["chars_per_s"] for e in steps)),
        "steps": len(steps),
    }


def measure(args: argparse.Namespace, init_from: Path, procs: int, work: Path) -> Dict[str, Any]:
    out = work / f"grown-{init_from.name}-{procs}"
    shutil.rmtree(out, ignore_errors=True)  # a fresh run each time
    threads = args.threads or max(1, (os.cpu_count() or 1) // procs)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    run = subprocess.run(grow_command(args, init_from, procs, out), env=env, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{procs} process(es) failed:\n{run.stderr[-3000:]}")
    entries = [json.loads(line) for line in (out / "pretrain_log.jsonl").read_text(encoding="utf8").splitlines()]
    return {
        "encoder": init_from.name,
        "processes": procs,
        "threads": threads,
        "stage_a": stage_figures(entries, "type_loss"),
        "stage_b": stage_figures(entries, "last_loss"),
    }


def bert_base(work: Path) -> Path:
    """A BERT-base-shaped subword encoder with random weights (MiniLM's tokenizer)."""
    out = work / "bert-base-random"
    if not (out / "config.json").exists():
        from spacy_entangle.backbone_dirs import make_random_subword

        make_random_subword(out, kind="bert", layers=12, width=768, heads=12)
    return out


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("text", type=Path, nargs="+", help="plain text, one document per line")
    parser.add_argument("--init-from", type=Path, default=None, help="the subword encoder grown from")
    parser.add_argument("--bert-base", action="store_true", help="grow from a BERT-base-shaped random encoder")
    parser.add_argument("--k", type=int, default=None, help="layers copied (default: all)")
    parser.add_argument("--procs", default="1,2", help="process counts, comma-separated")
    parser.add_argument("--steps", type=int, default=20, help="steps of each stage")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch of stage B (tweets)")
    parser.add_argument("--type-batch", type=int, default=256, help="global batch of stage A (word types)")
    parser.add_argument("--threads", type=int, default=None, help="threads per process (CPU)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="0 or more: one GPU per process")
    parser.add_argument("--work", type=Path, default=None, help="where the runs (and the BERT-base) go")
    parser.add_argument("--output", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.bert_base == (args.init_from is not None):
        parser.error("give --init-from DIR or --bert-base")
    work = args.work or Path(tempfile.mkdtemp(prefix="grow_scaling_"))
    work.mkdir(parents=True, exist_ok=True)
    init_from = bert_base(work) if args.bert_base else args.init_from
    rows = [measure(args, init_from, int(n), work) for n in args.procs.split(",")]
    print(f"growing from {init_from} (global batch: {args.batch_size} tweets, {args.type_batch} word types)\n")
    print("| encoder | processes | threads each | stage | s/step | chars/s | steps timed |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for row in rows:
        for stage in ("stage_a", "stage_b"):
            fig = row[stage]
            cells = [fig["s_per_step"], fig["chars_per_s"], fig["steps"]] if fig else ["-", "-", 0]
            print(
                f"| {row['encoder']} | {row['processes']} | {row['threads']} | {stage[-1].upper()} | "
                + " | ".join(map(str, cells))
                + " |"
            )
    if args.output:
        args.output.write_text(json.dumps(rows, indent=2), encoding="utf8")
    return rows


if __name__ == "__main__":
    main()
