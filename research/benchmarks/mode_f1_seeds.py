"""The F1 cost of the CPU inference modes over several trained seeds, as one table: each
seed's `int8_accuracy.py --output` JSON (fp32 and the modes on dev and dev at noise 0.5; one
file per seed and smoothing setting) -> a markdown table of fp32's scores and each mode's
difference from fp32 (mode - fp32, in F1 points), per seed and as mean ± sample std.

    python research/benchmarks/mode_f1_seeds.py render docs/results/data/mode_f1/*.json
    python research/benchmarks/mode_f1_seeds.py render docs/results/data/mode_f1/*.json \\
        --page docs/results/speed.md [--check]
    python research/benchmarks/mode_f1_seeds.py render docs/results/data/mode_f1_both_mild/seed*.json \\
        --page docs/results/speed.md --block both-mild

With --page the table replaces what lies between the page's `<!-- mode-f1:start -->` and
`<!-- mode-f1:end -->` markers (with --block NAME: `<!-- mode-f1-NAME:start -->` ...; a page can
hold one table per recipe); --check fails (exit 1) when the page differs instead.

`modes` puts beside it what each mode costs in speed, from one side-by-side run of
`speed_compare.py --output` (one process, the baseline and every mode): the README's table
of the modes, between its `<!-- modes:start -->` / `<!-- modes:end -->` markers.

    python research/benchmarks/mode_f1_seeds.py modes docs/results/data/mode_f1_exact/seed*.json \
        --speed docs/results/data/speed_modes_amx_exact.json --page README.md [--check]
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

START, END = "<!-- mode-f1:start -->", "<!-- mode-f1:end -->"
MODES_START, MODES_END = "<!-- modes:start -->", "<!-- modes:end -->"
# what a user reads beside each mode's figures (docs/inference.md has the whole story); the
# row of the mode `auto` picks on a CPU says so
MODE_NOTES = {
    "fp32": "the exact model",
    "int8": "torch's dynamic int8 of the layers the model adds, nothing to install",
    "onnx": "ONNX Runtime, the same fp32 model (states within 1e-4); the `onnx` extra",
    "onnx-mixed": "ONNX Runtime with `int8`'s split (the pretrained encoders in fp32, the added layers in int8); "
    "the `onnx` extra",
    "onnx-int8": "ONNX Runtime's int8 of every encoder, the fastest; the `onnx` extra",
}
DEFAULT_NOTE = "**the CPU default** (`auto`)"
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


def modes(files: Sequence[Path], speed: Path, smoothing: object = None, default: str = "") -> str:
    """The README's table: per CPU mode, words/s against the baseline from one side-by-side run
    and the F1 difference from fp32 over the seeds (mean ± sample std; onnx-int8 at the
    smoothing setting given, the default's: off); the row of ``default`` (what `auto` picks on
    a CPU) says so."""
    run = json.loads(speed.read_text(encoding="utf8"))
    if "models" not in run.get("pipelines", {}) or "settings" not in run:
        raise ValueError(f"{speed} is not a `speed_compare.py --output` file (no settings / pipelines.models)")
    models = run["pipelines"]["models"]
    entangle = [name for name in models if name != run["pipelines"]["reference"] and "@" not in name]
    if len(entangle) != 1:
        raise ValueError(f"{speed}: expected one entangle pipeline beside the reference, got {entangle}")
    seeds, table = rows(files)
    head = "| `inference` | words/s vs the baseline | dev F1 − fp32 | at noise 0.5 − fp32 | what it is |"
    lines = [head, "|---|---:|---:|---:|---|"]
    for mode, note in MODE_NOTES.items():
        timed = models.get(entangle[0] if mode == "fp32" else f"{entangle[0]}@{mode}")
        ratio = "–" if timed is None else f"{timed['relative_to_reference']:.2f}x"
        if mode == "fp32":
            clean = noisy = "reference"
        else:
            per_seed = table.get(label(mode, smoothing), {})
            clean = _mean_std([per_seed[s][CLEAN] for s in seeds if s in per_seed]) or "–"
            noisy = _mean_std([per_seed[s][NOISY] for s in seeds if s in per_seed]) or "–"
        note = f"{DEFAULT_NOTE}: {note}" if mode == default else note
        lines.append(f"| `{mode}` | {ratio} | {clean} | {noisy} | {note} |")
    settings = run["settings"]
    features = ", ".join(settings.get("cpu_int8") or []) or "no VNNI or AMX"
    lines += [
        "",
        f"Words/s: {run['pipelines']['docs']} WNUT-17 dev tweets, {settings['torch_threads']} torch thread, "
        f"the baseline and each mode side by side in one process (CPU int8 features: {features}; "
        f"hosts with VNNI or AMX gain more from int8). F1: {len(seeds)} trained seeds of the shipped recipe, "
        "each mode's score minus fp32's on the same pipeline.",
    ]
    return "\n".join(lines)


def _write_block(page: Path, start: str, end: str, table: str, check: bool) -> int:
    """Put ``table`` between the page's markers, or with ``check`` only compare (1: differs)."""
    text = page.read_text(encoding="utf8")
    if start not in text or end not in text:
        raise SystemExit(f"{page} has no {start} ... {end} markers")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    new = f"{before}{start}\n\n{table}\n\n{end}{after}"
    if check:
        if new != text:
            print(
                f"{page}: the table between {start} and {end} is not what the files give; run without --check",
                file=sys.stderr,
            )
            return 1
        return 0
    page.write_text(new, encoding="utf8")
    return 0


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render")
    r.add_argument("files", nargs="+", type=Path)
    r.add_argument("--page", type=Path)
    r.add_argument("--check", action="store_true")
    r.add_argument("--block", default="", help="the page's block for this table: mode-f1-BLOCK (default: mode-f1)")
    m = sub.add_parser("modes")
    m.add_argument("files", nargs="+", type=Path)
    m.add_argument("--speed", type=Path, required=True, help="a speed_compare.py --output JSON with every CPU mode")
    m.add_argument("--page", type=Path)
    m.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "modes":
        from spacy_entangle.modeling.inference import AUTO_CPU_MODE, ONNX_INT8_SMOOTHING  # the default's

        table = modes(sorted(args.files), args.speed, ONNX_INT8_SMOOTHING, AUTO_CPU_MODE)
        start, end = MODES_START, MODES_END
    else:
        table, start, end = render(sorted(args.files)), START, END
        if args.block:
            start, end = (marker.replace("mode-f1", f"mode-f1-{args.block}") for marker in (START, END))
    if args.page is None:
        print(table)
        return 0
    return _write_block(args.page, start, end, table, args.check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
