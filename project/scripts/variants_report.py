"""The report half of scripts/variants.py: `compare` (one table of every variant with metrics:
mean ± spread over its seeds) and `select` (the variant to ship). Both only read the metrics
that `train` and `evaluate` (variants_run.py) write.

`select` picks, among the named variants, the one to ship: the best mean over its seeds of
(clean dev F1 + dev F1 at --noise) / 2, each with at least --min-seeds seeds; it writes the
figures behind the choice (and the baseline's, when trained) to --output, which `package`
puts in the model card (meta/selection.json holds the committed choice).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import typer
from _variants import VARIANTS_FILE, Variant, app, metrics_path, named_variants, score
from tables import fmt_mean_spread, fmt_time, markdown_table, mean_spread, pct, read_json, write_report


def load_rows(metrics_dir: Path, names: Sequence[str]) -> List[Dict]:
    """Per variant with metrics: its seeds' dev/test/noisy scores and training times."""
    rows = []
    for name in names:
        seeds = sorted(
            int(p.name[len("seed") : -len("_dev.json")]) for p in (metrics_dir / name).glob("seed*_dev.json")
        )
        if not seeds:
            continue
        runs = []
        for seed in seeds:
            run = {"seed": seed, "dev": read_json(metrics_path(metrics_dir, name, seed, "dev"))}
            run["test"] = read_json(metrics_path(metrics_dir, name, seed, "test"))
            run["time"] = read_json(metrics_path(metrics_dir, name, seed, "train_time"))
            run["noisy"] = {
                p.name[len(f"seed{seed}_dev_noise") : -len(".json")]: read_json(p)
                for p in (metrics_dir / name).glob(f"seed{seed}_dev_noise*.json")
            }
            runs.append(run)
        rows.append({"name": name, "runs": runs})
    return rows


def _f1s(rows_runs: List[Dict], key: str, rate: Optional[str] = None) -> List[float]:
    if rate is None:
        return [score(r[key]) for r in rows_runs if r.get(key)]
    return [score(r["noisy"][rate]) for r in rows_runs if rate in r["noisy"]]


def _drops(runs: List[Dict], rate: str) -> List[float]:
    return [score(r["dev"]) - score(r["noisy"][rate]) for r in runs if rate in r["noisy"]]


def make_table(rows: List[Dict], speed: Optional[dict], reference: str = "baseline") -> List[str]:
    """The markdown comparison: dev F1 mean ± spread over seeds, P, R, the seeds' F1s,
    noisy F1 and drop per noise rate (with the drop relative to the reference's), test F1,
    training time and words/s."""
    rates = sorted({rate for row in rows for run in row["runs"] for rate in run["noisy"]}, key=float)
    has_test = any(run["test"] for row in rows for run in row["runs"])
    ref = next((row for row in rows if row["name"] == reference), None)
    header = ["model", "seeds", "dev F1", "P", "R", "F1 per seed"]
    for rate in rates:
        header += [f"noisy F1 @{rate}", f"drop @{rate}"] + ([f"drop / {reference}'s"] if ref else [])
    header += (["test F1"] if has_test else []) + ["train time", "words/s"]
    table = []
    for row in rows:
        runs = row["runs"]
        devs = [r["dev"] for r in runs]
        cells = [row["name"], str(len(runs)), fmt_mean_spread(_f1s(runs, "dev"))]
        cells += [
            pct(mean_spread([score(d, "p") for d in devs])[0]),
            pct(mean_spread([score(d, "r") for d in devs])[0]),
        ]
        cells.append(" / ".join(pct(score(r["dev"])) for r in runs))
        for rate in rates:
            drops = _drops(runs, rate)
            cells += [fmt_mean_spread(_f1s(runs, "dev", rate)), fmt_mean_spread(drops)]
            if ref:
                own, base = mean_spread(drops)[0], mean_spread(_drops(ref["runs"], rate))[0]
                cells.append("–" if own is None or not base else f"{own / base:.2f}")
        if has_test:
            cells.append(fmt_mean_spread(_f1s(runs, "test")))
        seconds = mean_spread([(r["time"] or {}).get("seconds") for r in runs])[0]
        wps = ((speed or {}).get("models", {}).get(row["name"]) or {}).get("words_per_second")
        cells += [fmt_time(seconds), "–" if wps is None else f"{wps:,.0f}"]
        table.append(cells)
    notes = [
        "",
        "WNUT-17 dev, entity-level scores in % (spaCy's scorer: exact span + type); mean ± sample "
        "standard deviation over the seeds (`--system.seed`), P and R are means; a spancat variant's "
        "are its spans_sc_* scores (the same entities as spans: exact span + label).",
    ]
    if rates:
        notes.append(
            "noisy F1 @R: dev with CharBERT's character attacks (drop/add/swap/keyboard) on each word of 4+ "
            "characters with probability R (`python -m spacy_entangle perturb`); drop: clean minus noisy F1 "
            f"per seed, in points; drop / {reference}'s: the mean drop over the reference's mean drop."
        )
    if speed:
        notes.append(
            f"words/s: nlp.pipe of seed 0 over {speed.get('words', '?')} dev words on {speed.get('device', '?')}, "
            f"batch size {speed.get('batch_size', '?')}, all models timed side by side in one process."
        )
    notes.append("train time: mean wall clock of `spacy train` (with its dev evaluations) per seed.")
    return markdown_table(header, table) + notes


def make_plot(rows: List[Dict], path: Path) -> None:
    """Dev F1 per variant (mean, the seeds' spread as error bars) and F1 under noise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({rate for row in rows for run in row["runs"] for rate in run["noisy"]}, key=float)
    fig, axes = plt.subplots(1, 2 if rates else 1, figsize=(11 if rates else 6.5, 4.0), squeeze=False)
    ax = axes[0][0]
    means = [mean_spread(_f1s(row["runs"], "dev")) for row in rows]
    ax.bar(range(len(rows)), [100 * m for m, _ in means], yerr=[100 * (s or 0.0) for _, s in means], capsize=4)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row["name"] for row in rows], rotation=30, ha="right")
    ax.set_ylabel("dev F1 (%)")
    ax.set_title("WNUT-17 dev entity F1 (mean ± sd over seeds)")
    if rates:
        ax_noise = axes[0][1]
        for row in rows:
            xs, ys = [0.0], [mean_spread(_f1s(row["runs"], "dev"))[0]]
            for rate in rates:
                value = mean_spread(_f1s(row["runs"], "dev", rate))[0]
                if value is not None:
                    xs.append(float(rate))
                    ys.append(value)
            ax_noise.plot(xs, [100 * y for y in ys], marker="o", label=row["name"])
        ax_noise.set_xlabel("noise rate (words of 4+ chars attacked)")
        ax_noise.set_ylabel("F1 (%)")
        ax_noise.set_title("under character noise")
        ax_noise.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


@app.command("compare")
def compare(
    names: Optional[List[str]] = typer.Argument(None, help="variants in table order (default: all of variants.yml)"),
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    speed: Optional[Path] = typer.Option(None, "--speed", help="speed.json (default: METRICS_DIR/speed.json)"),
    reference: str = typer.Option("baseline", "--reference", help="the variant the noise drops are relative to"),
    output: Optional[Path] = typer.Option(None, "--output", help="default: METRICS_DIR/compare.md"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="default: METRICS_DIR/compare.png"),
    no_plot: bool = typer.Option(False, "--no-plot"),
    variants_file: Path = VARIANTS_FILE,
) -> None:
    """One table (and plot) of every variant with metrics: mean ± spread over its seeds."""
    variants = named_variants(variants_file, names or [])
    rows = load_rows(metrics_dir, names or list(variants))
    if not rows:
        raise SystemExit(f"variants.py: no metrics in {metrics_dir}/<variant>/ (train a variant first)")
    # benchmarks/speed_compare.py: the side-by-side part
    timings = (read_json(speed or metrics_dir / "speed.json") or {}).get("pipelines")
    write_report(output or metrics_dir / "compare.md", make_table(rows, timings, reference))
    if not no_plot:
        plot = plot or metrics_dir / "compare.png"
        make_plot(rows, plot)
        print(f"✔ saved {plot}")


def _rounded(pair: Sequence[Optional[float]]) -> List[Optional[float]]:
    return [None if v is None else round(v, 4) for v in pair]


def selection_row(row: Dict, variant: Variant, rate: str) -> Dict:
    """One variant's figures for `select`: clean and noisy dev F1 and the drop, mean and
    sample spread over its seeds, and its score, the mean of clean and noisy F1."""
    runs = row["runs"]
    clean, noisy, drop = (
        mean_spread(_f1s(runs, "dev")),
        mean_spread(_f1s(runs, "dev", rate)),
        mean_spread(_drops(runs, rate)),
    )
    return {
        "name": row["name"],
        "side": variant.side,
        "char_encoder": variant.char_encoder,
        "seeds": [r["seed"] for r in runs],
        "dev_f1": _rounded(clean),
        f"dev_f1_noise{rate}": _rounded(noisy),
        f"drop_noise{rate}": _rounded(drop),
        "score": None if clean[0] is None or noisy[0] is None else round((clean[0] + noisy[0]) / 2, 4),
    }


@app.command("select")
def select(
    names: List[str] = typer.Argument(..., help="the candidate variants"),
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    noise: str = typer.Option("0.5", "--noise", help="the noise rate of the noisy dev copy (its file's suffix)"),
    min_seeds: int = typer.Option(3, "--min-seeds"),
    reference: str = typer.Option("baseline", "--reference", help="also recorded, when it has metrics"),
    output: Path = typer.Option(Path("metrics/selection.json"), "--output"),
    variants_file: Path = VARIANTS_FILE,
) -> None:
    """The variant to ship: the best mean over its seeds of (clean dev F1 + dev F1 at --noise) / 2,
    each candidate with at least --min-seeds seeds; the figures behind the choice go to --output."""
    variants = named_variants(variants_file, names)
    rows = {row["name"]: row for row in load_rows(metrics_dir, [*names, reference])}
    rate = noise
    candidates = []
    for name in names:
        row = rows.get(name)
        seeds = [] if row is None else [r for r in row["runs"] if rate in r["noisy"]]
        if len(seeds) < min_seeds:
            raise SystemExit(
                f"variants.py select: {name} has {len(seeds)} seed(s) with clean and noise-{rate} dev metrics in "
                f"{metrics_dir}/{name}/, fewer than --min-seeds {min_seeds} (train them with --noisy)"
            )
        candidates.append(selection_row({"name": name, "runs": seeds}, variants[name], rate))
    chosen = max(candidates, key=lambda c: c["score"])
    result = {
        "criterion": f"best mean over seeds of (clean dev F1 + dev F1 at noise {rate}) / 2",
        "noise_rate": rate,
        "min_seeds": min_seeds,
        "metrics_dir": str(metrics_dir),
        "chosen": chosen["name"],
        "side": chosen["side"],
        "char_encoder": chosen["char_encoder"],
        "candidates": candidates,
    }
    if reference in rows and reference in variants:
        result["reference"] = selection_row(rows[reference], variants[reference], rate)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")
    for c in candidates + ([result["reference"]] if "reference" in result else []):
        mark = "→" if c is chosen else " "
        print(
            f"{mark} {c['name']:<24} score {pct(c['score'])}  clean {pct(c['dev_f1'][0])}  noise {rate} {pct(c[f'dev_f1_noise{rate}'][0])}  ({len(c['seeds'])} seeds)"
        )
    print(f"✔ saved {output}: ship {chosen['name']} (side {chosen['side']}, char encoder {chosen['char_encoder']})")
