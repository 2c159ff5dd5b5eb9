"""The F1 cost of the CPU inference modes over several trained seeds, as one table: each
seed's `int8_accuracy.py --output` JSON (fp32 and the modes on dev and dev at noise 0.5; one
file per seed and smoothing setting) -> a markdown table of fp32's scores and each mode's
difference from fp32 (mode - fp32, in F1 points), per seed and as mean ± sample std.

    python research/benchmarks/mode_f1_seeds.py render docs/results/data/mode_f1/*.json
    python research/benchmarks/mode_f1_seeds.py render docs/results/data/mode_f1/*.json \\
        --page docs/results/speed.md [--check]

With --page the table replaces what lies between the page's `<!-- mode-f1:start -->` and
`<!-- mode-f1:end -->` markers; --check fails (exit 1) when the page differs instead.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

START, END = "<!-- mode-f1:start -->", "<!-- mode-f1:end -->"
CLEAN, NOISY = "dev.spacy", "dev_noise0.5.spacy"


def label(mode: str, smoothing: object) -> str:
    """The row name of a mode: onnx-int8 says its smoothing (the default's is 0.5)."""
    if mode != "onnx-int8":
        return f"`{mode}`"
    return f"`onnx-int8`, smoothing {'off' if smoothing is None else smoothing}"


def rows(files: Sequence[Path]) -> Tuple[List[str], Dict[str, Dict[str, Dict[str, float]]]]:
    """The seeds (in file order of first appearance) and, per row, per seed, the scores: fp32's
    own, and each mode's difference from the fp32 of the same file (same pipeline, same run)."""
    seeds: List[str] = []
    table: Dict[str, Dict[str, Dict[str, float]]] = {}
    for path in files:
        data = json.loads(path.read_text(encoding="utf8"))
        seed = re.search(r"seed(\d+)", path.name)
        if seed is None:
            raise ValueError(f"{path}: the file name must say its seed (seedN)")
        name = f"seed {seed.group(1)}"
        if name not in seeds:
            seeds.append(name)
        fp32 = data["fp32"]
        table.setdefault("`fp32` (F1)", {})[name] = {k: 100 * fp32[k] for k in (CLEAN, NOISY)}
        for mode, scores in data.items():
            if mode in ("fp32", "pipeline") or not isinstance(scores, dict) or CLEAN not in scores:
                continue
            smoothing = data.get("onnx_int8_smoothing") if mode == "onnx-int8" else None
            key = label(mode, smoothing)
            table.setdefault(key, {})[name] = {k: 100 * (scores[k] - fp32[k]) for k in (CLEAN, NOISY)}
    return seeds, table


def _mean_std(values: List[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:+.2f}" if values else ""
    return f"{statistics.mean(values):+.2f} ± {statistics.stdev(values):.2f}"


def render(files: Sequence[Path]) -> str:
    seeds, table = rows(files)
    head = ["mode"] + [f"{s}: dev / noise 0.5" for s in seeds] + ["dev, mean ± std", "noise 0.5, mean ± std"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for key, per_seed in table.items():
        absolute = key.startswith("`fp32`")
        cells = [key]
        for seed in seeds:
            got = per_seed.get(seed)
            fmt = "{:.2f}" if absolute else "{:+.2f}"
            cells.append("" if got is None else f"{fmt.format(got[CLEAN])} / {fmt.format(got[NOISY])}")
        for corpus in (CLEAN, NOISY):
            values = [per_seed[s][corpus] for s in seeds if s in per_seed]
            if absolute:
                mean = statistics.mean(values)
                std = statistics.stdev(values) if len(values) > 1 else 0.0
                cells.append(f"{mean:.2f} ± {std:.2f}")
            else:
                cells.append(_mean_std(values))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render")
    r.add_argument("files", nargs="+", type=Path)
    r.add_argument("--page", type=Path)
    r.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    table = render(sorted(args.files))
    if args.page is None:
        print(table)
        return 0
    text = args.page.read_text(encoding="utf8")
    if START not in text or END not in text:
        raise SystemExit(f"{args.page} has no {START} ... {END} markers")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    new = f"{before}{START}\n\n{table}\n\n{END}{after}"
    if args.check:
        if new != text:
            print(f"{args.page}: the mode-F1 table is not what the files give; run without --check", file=sys.stderr)
            return 1
        return 0
    args.page.write_text(new, encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
