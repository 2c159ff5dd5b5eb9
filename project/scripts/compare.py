"""One comparison table of the trained WNUT-17 models (markdown + a PNG bar chart).

    python scripts/compare.py [--metrics-dir metrics] [--row NAME=PREFIX ...]
        [--speed metrics/speed.json] [--output metrics/compare.md] [--plot metrics/compare.png]

Each row NAME=PREFIX reads, from the metrics folder:
  PREFIX_dev.json         `spacy evaluate` output on dev (ents_p/r/f, ents_per_type)  - required
  PREFIX_test.json        the same on test, when the test split was there             - optional
  train_time_PREFIX.json  written by scripts/timed.py around `spacy train`            - optional
  PREFIX_dev_noiseRATE.json  dev perturbed at that noise rate (scripts/evaluate_noisy.py) - optional:
                          adds "noisy F1 @RATE" and "drop @RATE" (clean minus noisy) columns
and its inference speed from speed.json (keyed by NAME, written by scripts/speed.py).
Rows whose dev metrics are missing are left out with a note (e.g. entangle-char when that
variant was not trained). Default rows: entangle-subword=entangle, entangle-char=entangle_char,
baseline=baseline.
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

DEFAULT_ROWS = ["entangle-subword=entangle", "entangle-char=entangle_char", "baseline=baseline"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    p.add_argument("--row", action="append", default=None, help="NAME=PREFIX (repeatable)")
    p.add_argument("--speed", type=Path, default=None, help="speed.json (default: METRICS_DIR/speed.json)")
    p.add_argument("--output", type=Path, default=None, help="markdown file (default: METRICS_DIR/compare.md)")
    p.add_argument("--plot", type=Path, default=None, help="PNG chart (default: METRICS_DIR/compare.png)")
    p.add_argument("--no-plot", action="store_true")
    return p.parse_args(argv)


def read_json(path: Path) -> Optional[dict]:
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def pct(value) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}"


def fmt_time(seconds) -> str:
    if seconds is None:
        return "–"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def load_rows(metrics_dir: Path, row_specs: List[str], speed: Optional[dict]) -> List[Dict]:
    rows = []
    for spec in row_specs:
        name, sep, prefix = spec.partition("=")
        if not sep or not name or not prefix:
            sys.exit(f"compare.py: expected --row NAME=PREFIX, got {spec!r}")
        dev = read_json(metrics_dir / f"{prefix}_dev.json")
        if dev is None:
            print(f"ℹ {name}: no {metrics_dir / (prefix + '_dev.json')}, row left out")
            continue
        test = read_json(metrics_dir / f"{prefix}_test.json")
        timing = read_json(metrics_dir / f"train_time_{prefix}.json")
        speed_row = (speed or {}).get("models", {}).get(name)
        noisy = {}
        for path in metrics_dir.glob(f"{prefix}_dev_noise*.json"):
            rate = path.name[len(f"{prefix}_dev_noise") : -len(".json")]
            noisy[rate] = read_json(path)
        rows.append(
            {
                "name": name,
                "dev": dev,
                "test": test,
                "noisy": noisy,
                "train_seconds": None if timing is None else timing.get("seconds"),
                "words_per_second": None if speed_row is None else speed_row.get("words_per_second"),
            }
        )
    return rows


def entity_types(rows: List[Dict]) -> List[str]:
    types = set()
    for row in rows:
        types.update((row["dev"].get("ents_per_type") or {}).keys())
    return sorted(types)


def noise_rates(rows: List[Dict]) -> List[str]:
    return sorted({rate for row in rows for rate in row["noisy"]}, key=float)


def make_table(rows: List[Dict], types: List[str], speed: Optional[dict]) -> str:
    has_test = any(row["test"] is not None for row in rows)
    rates = noise_rates(rows)
    header = ["model", "F1", "P", "R"] + [f"{t} F1" for t in types]
    for rate in rates:
        header += [f"noisy F1 @{rate}", f"drop @{rate}"]
    if has_test:
        header.append("test F1")
    header += ["train time", "words/s"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for row in rows:
        dev = row["dev"]
        per_type = dev.get("ents_per_type") or {}
        cells = [row["name"], pct(dev.get("ents_f")), pct(dev.get("ents_p")), pct(dev.get("ents_r"))]
        cells += [pct((per_type.get(t) or {}).get("f")) for t in types]
        for rate in rates:
            noisy = (row["noisy"].get(rate) or {}).get("ents_f")
            drop = None if noisy is None else float(dev.get("ents_f") or 0.0) - float(noisy)
            cells += [pct(noisy), pct(drop)]
        if has_test:
            cells.append(pct(row["test"].get("ents_f")) if row["test"] else "–")
        wps = row["words_per_second"]
        cells += [fmt_time(row["train_seconds"]), "–" if wps is None else f"{wps:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    notes = ["", "WNUT-17 dev set, entity-level scores in % (spaCy's scorer: exact span + type)."]
    if has_test:
        notes.append("test F1: the same on the WNUT-17 test split.")
    if speed:
        notes.append(
            f"words/s: nlp.pipe over {speed.get('words', '?')} dev words on {speed.get('device', '?')}, "
            f"batch size {speed.get('batch_size', '?')}, all models timed side by side in one process."
        )
    if rates:
        notes.append(
            "noisy F1 @R: dev with character noise (CharBERT attacks: drop/add/swap/keyboard) on each "
            "word of 4+ characters with probability R (`python -m spacy_entangle perturb`); "
            "drop: clean F1 minus noisy F1, in points."
        )
    notes.append("train time: wall clock of `spacy train` (including its dev evaluations).")
    return "\n".join(lines + notes) + "\n"


def make_plot(rows: List[Dict], types: List[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy

    groups = ["overall"] + types
    width = 0.8 / max(len(rows), 1)
    x = numpy.arange(len(groups))
    rates = noise_rates(rows)
    if rates:
        fig, (ax, ax_noise) = plt.subplots(
            1, 2, figsize=(max(6.0, 1.3 * len(groups)) + 4.5, 4.0), gridspec_kw={"width_ratios": [len(groups), 4]}
        )
        for row in rows:
            points = [(0.0, row["dev"].get("ents_f") or 0.0)]
            points += [(float(r), m.get("ents_f") or 0.0) for r, m in sorted(row["noisy"].items(), key=lambda i: float(i[0]))]
            ax_noise.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o", label=row["name"])
        ax_noise.set_xlabel("noise rate (words of 4+ chars attacked)")
        ax_noise.set_ylabel("F1 (%)")
        ax_noise.set_title("WNUT-17 dev under character noise")
        ax_noise.legend()
    else:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(groups)), 4.0))
    for i, row in enumerate(rows):
        per_type = row["dev"].get("ents_per_type") or {}
        values = [row["dev"].get("ents_f") or 0.0]
        values += [(per_type.get(t) or {}).get("f") or 0.0 for t in types]
        ax.bar(x + (i - (len(rows) - 1) / 2) * width, [100 * v for v in values], width, label=row["name"])
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel("F1 (%)")
    ax.set_ylim(0, 100)
    ax.set_title("WNUT-17 dev: entity F1")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    speed_path = args.speed or args.metrics_dir / "speed.json"
    speed = read_json(speed_path)
    rows = load_rows(args.metrics_dir, args.row or DEFAULT_ROWS, speed)
    if not rows:
        sys.exit(f"compare.py: no dev metrics found in {args.metrics_dir} (run `evaluate` / `baseline` first)")
    types = entity_types(rows)
    table = make_table(rows, types, speed)
    print(table)
    output = args.output or args.metrics_dir / "compare.md"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(table, encoding="utf-8")
    print(f"✔ saved {output}")
    if not args.no_plot:
        plot = args.plot or args.metrics_dir / "compare.png"
        make_plot(rows, types, plot)
        print(f"✔ saved {plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
