"""Load + first doc of several pipelines side by side: fresh processes, interleaved rounds, best
and median of --repeats each, and each one's ratio to the first. A pipeline may name the code
it loads with (``LABEL=PATH@SRC``: SRC goes first on the child's PYTHONPATH, such as a
``git worktree`` of an older commit: speed_load.py's child, one process per round), so two versions of the plugin are timed in one run.

    OMP_NUM_THREADS=1 python research/benchmarks/load_compare.py \\
        baseline=BASELINE_DIR \\
        before=PACKAGE_DIR@../before after=PACKAGE_DIR \\
        --repeats 5 --output load.json
"""

import argparse
import json
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from speed_load import load_seconds
from speed_timing import cpu_int8_label, environment


def parse_pipeline(text: str) -> Tuple[str, str, Optional[str]]:
    """LABEL=PATH or LABEL=PATH@SRC."""
    label, sep, rest = text.partition("=")
    if not sep or not label or not rest:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH[@SRC], got {text!r}")
    path, _, src = rest.partition("@")
    return label, path, src or None


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pipelines", nargs="+", type=parse_pipeline, help="LABEL=PATH[@SRC]; the first is the reference")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    seconds: Dict[str, List[float]] = {label: [] for label, _, _ in args.pipelines}
    for _ in range(args.repeats):
        for label, path, src in args.pipelines:
            seconds[label].append(load_seconds(path, {}, 1, args.threads, pythonpath=src) or 0.0)
    first = min(seconds[args.pipelines[0][0]])
    rows = {
        label: {"best": min(v), "median": statistics.median(v), "ratio": min(v) / first, "all": v}
        for label, v in seconds.items()
    }
    print(f"load + first doc, fresh process each, best of {args.repeats} ({cpu_int8_label()}):")
    for label, row in rows.items():
        print(f"  {label:<16} best {row['best']:.2f} s  median {row['median']:.2f} s  {row['ratio']:.2f}x")
    if args.output:
        record = {
            "environment": environment("cpu"),
            "threads": args.threads,
            "pipelines": [list(x) for x in args.pipelines],
        }
        args.output.write_text(json.dumps({**record, "seconds": rows}, indent=2) + "\n", encoding="utf8")
    return rows


if __name__ == "__main__":
    main()
