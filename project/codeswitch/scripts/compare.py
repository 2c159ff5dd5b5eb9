"""One table of character accuracy (All, MIX) for the trained models (markdown).

    python scripts/compare.py [--metrics-dir metrics] [--row NAME=PREFIX ...] [--output metrics/compare.md]

Each row NAME=PREFIX reads, from the metrics folder:
  PREFIX_dev.json         scripts/evaluate_chars.py on dev                  - required
  PREFIX_test.json        the same on test (`evaluate-test`)                 - optional: adds test columns
  train_time_PREFIX.json  scripts/timed.py around `spacy train`             - optional
Default rows: entangle=entangle, char-only=charonly.
"""

import argparse
import json
import sys
from pathlib import Path


def read(path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    p.add_argument("--row", action="append", default=None, help="NAME=PREFIX (repeatable)")
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    rows = [r.split("=", 1) for r in (args.row or ["entangle=entangle", "char-only=charonly"])]
    found, notes = [], []
    for name, prefix in rows:
        dev = read(args.metrics_dir / f"{prefix}_dev.json")
        if dev is None:
            notes.append(f"{name}: no {prefix}_dev.json (not trained/evaluated), left out")
            continue
        test = read(args.metrics_dir / f"{prefix}_test.json")
        time = read(args.metrics_dir / f"train_time_{prefix}.json")
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
    out = args.output or args.metrics_dir / "compare.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))
    print(f"✔ saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
