"""One table of character accuracy (All, MIX) for the trained models (markdown).

    python scripts/compare.py [--metrics-dir metrics] [--row NAME=PREFIX ...] [--output metrics/compare.md]

Each row NAME=PREFIX reads, from the metrics folder:
  PREFIX_dev.json         scripts/evaluate_chars.py on dev                  - required
  PREFIX_test.json        the same on test (`evaluate-test`)                 - optional: adds test columns
  train_time_PREFIX.json  scripts/timed.py around `spacy train`             - optional
Default rows: entangle=entangle, char-only=charonly.
"""

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer


def read(path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}"


def main(
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    row: Optional[List[str]] = typer.Option(
        None, "--row", help="NAME=PREFIX (repeatable; default: entangle=entangle, char-only=charonly)"
    ),
    output: Optional[Path] = typer.Option(None, "--output", help="default: METRICS_DIR/compare.md"),
) -> None:
    """One table of character accuracy (All, MIX) for the trained models (markdown)."""
    rows = [r.split("=", 1) for r in (row or ["entangle=entangle", "char-only=charonly"])]
    if any(len(r) != 2 or not all(r) for r in rows):
        raise typer.BadParameter("takes NAME=PREFIX", param_hint="--row")
    found, notes = [], []
    for name, prefix in rows:
        dev = read(metrics_dir / f"{prefix}_dev.json")
        if dev is None:
            notes.append(f"{name}: no {prefix}_dev.json (not trained/evaluated), left out")
            continue
        test = read(metrics_dir / f"{prefix}_test.json")
        time = read(metrics_dir / f"train_time_{prefix}.json")
        found.append((name, dev, test, time))
    if not found:
        sys.exit("✘ no metrics to compare: " + "; ".join(notes))
    with_test = any(t is not None for _, _, t, _ in found)
    head = ["model", "dev All", "dev MIX"] + (["test All", "test MIX"] if with_test else []) + ["train time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, dev, test, time in found:
        cells = [name, pct(dev["char_acc"]), pct(dev["char_acc_mix"])]
        if with_test:
            cells += [pct(test and test["char_acc"]), pct(test and test["char_acc_mix"])]
        cells.append("-" if time is None else f"{time['seconds'] / 60:.1f} min")
        lines.append("| " + " | ".join(cells) + " |")
    dev0 = found[0][1]
    text = [
        "Character accuracy (%) of the char_tagger. All: every non-space character with a gold",
        "label; MIX: the characters of words whose gold characters hold more than one label",
        f"(dev: {dev0['n_chars']} characters, MIX {dev0['n_mix_chars']} characters in {dev0['n_mix_words']} words).",
        "",
        *lines,
    ]
    if len(found) >= 2 and found[0][1]["char_acc_mix"] is not None and found[1][1]["char_acc_mix"] is not None:
        a, b = found[0], found[1]
        text += [
            "",
            f"dev MIX, {a[0]} - {b[0]}: {100 * (a[1]['char_acc_mix'] - b[1]['char_acc_mix']):+.2f} points; "
            f"All: {100 * (a[1]['char_acc'] - b[1]['char_acc']):+.2f} points",
        ]
    text += [f"\n_{n}_" for n in notes]
    out = output or metrics_dir / "compare.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))
    print(f"✔ saved {out}")


if __name__ == "__main__":
    typer.run(main)
