"""The report half of scripts/variants.py: `compare` (one table of every variant with metrics:
mean ± spread over its seeds) and `select` (the variant to ship). Both only read the metrics
that `train` and `evaluate` (variants_run.py) write.

`select` picks, among the named variants, the one to ship: the best mean over its seeds of
(clean dev F1 + dev F1 at --noise) / 2, each with at least --min-seeds seeds; it writes the
figures behind the choice (and the baseline's, when trained) to --output, which `package`
puts in the model card (meta/selection.json holds the committed choice). With --prior (an
earlier round's selection JSON, e.g. meta/selection.json: metrics/ is not committed) the
earlier candidates compete too, with their recorded figures, each marked `from` that file and
with the `min_seeds` its round admitted it under; a variant with metrics in --metrics-dir is
measured there instead. The baseline's figures also come from the prior when not measured;
each further --reference (e.g. baseline-aug) is recorded beside it, in `other_references`.
A candidate or reference named VARIANT@STEPS is VARIANT trained to its own budget of STEPS (the
schedule ending there): its seeds are the runs in --budget-dir (meta/budget/wnut17/
VARIANT_STEPS_seedN.jsonl, curves.py's files), each scored at its best dev evaluation (the
model-best spaCy keeps), and its row records `steps` and `budget` (where they came from);
--prior-steps records the budget of the rows measured in --metrics-dir and of --prior's rows
that do not say theirs.

`select-table` renders the committed selection (meta/selection.json) as the table of the
results page docs/results/wnut17.md, between its `<!-- selection:start -->` /
`<!-- selection:end -->` markers; `--check` fails when the page's table is not what the file
gives (tests/project runs it). `--readme` is the old name of `--page`.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

import typer
from _variants import DEFAULT, ENCODER_DIRS, HERE, VARIANTS_FILE, Variant, app, metrics_path, named_variants, score
from tables import (
    fmt_mean_spread,
    fmt_time,
    markdown_table,
    mean_spread,
    pct,
    read_json,
    write_marked_block,
    write_report,
)

# the results page whose selection markers select-table fills
SELECTION_PAGE = HERE.parent / "docs" / "results" / "wnut17.md"


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


def budget_name(name: str) -> Tuple[str, Optional[int]]:
    """``"both-mild@2000"`` -> ("both-mild", 2000); a plain variant name -> (name, None)."""
    variant, at, steps = name.partition("@")
    if not at:
        return name, None
    if not steps.isdigit() or not variant:
        raise SystemExit(f"variants.py select: {name!r} is not VARIANT@STEPS")
    return variant, int(steps)


def load_budget_runs(budget_dir: Path, variant: str, steps: int) -> List[Dict]:
    """The seeds of ``variant`` trained to ``steps`` (budget_dir/VARIANT_STEPS_seedN.jsonl, the
    curve logger's points), as load_rows gives runs: each seed at its best clean dev evaluation
    (curves.best_point), with the scores of the extra dev corpora (dev_noiseR) at that point."""
    from curves import best_point, read_points

    runs = []
    for path in sorted(budget_dir.glob(f"{variant}_{steps}_seed*.jsonl")):
        seed = path.name[len(f"{variant}_{steps}_seed") : -len(".jsonl")]
        if not seed.isdigit():
            continue
        points = read_points(path)
        if not points:
            continue
        best = best_point(points, "ents_f")
        noisy = {k[len("dev_noise") :]: v for k, v in best["scores"].items() if k.startswith("dev_noise")}
        runs.append({"seed": int(seed), "dev": best["scores"]["dev"], "test": None, "time": None, "noisy": noisy})
    return sorted(runs, key=lambda r: r["seed"])


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
    # research/benchmarks/speed_compare.py: the side-by-side part
    timings = (read_json(speed or metrics_dir / "speed.json") or {}).get("pipelines")
    write_report(output or metrics_dir / "compare.md", make_table(rows, timings, reference))
    if not no_plot:
        plot = plot or metrics_dir / "compare.png"
        make_plot(rows, plot)
        print(f"✔ saved {plot}")


def _rounded(pair: Sequence[Optional[float]]) -> List[Optional[float]]:
    """6 decimals: a table's 0.1 points is then rounded once (0.011549 is 1.2; recorded as
    0.0115 it would sit on the half, which the earlier rounds' 4 decimals sometimes do)."""
    return [None if v is None else round(v, 6) for v in pair]


def recorded_char_encoders(runs: List[Dict]) -> List[str]:
    """The char encoders the seeds were trained with, by the --paths.char_backbone of their
    recorded `spacy train` command (train_time.json), where its folder is a known encoder's."""
    by_dir = {folder: encoder for encoder, folder in ENCODER_DIRS.items()}
    found = []
    for run in runs:
        command = (run.get("time") or {}).get("command") or []
        if "--paths.char_backbone" in command[:-1]:
            encoder = by_dir.get(Path(command[command.index("--paths.char_backbone") + 1]).name)
            if encoder and encoder not in found:
                found.append(encoder)
    return found


def char_encoder_of(variant: Variant, runs: List[Dict], given: Optional[str]) -> Optional[str]:
    """A candidate's char encoder: its own, or for `default` the one its seeds were trained with
    (their recorded commands) or else --char-encoder; a disagreement is an error."""
    if variant.char_encoder != DEFAULT:
        return variant.char_encoder
    encoders = recorded_char_encoders(runs)
    if given and given not in encoders:
        encoders.append(given)
    if len(encoders) != 1:
        what = f"the char encoders {encoders} (train_time.json, --char-encoder)" if encoders else "an unknown one"
        raise SystemExit(
            f"variants.py select: {variant.name} (char_encoder: default) was trained with {what}: "
            "pass the char encoder its seeds were trained with as --char-encoder"
        )
    return encoders[0]


def selection_row(row: Dict, variant: Variant, rate: str, char_encoder: Optional[str] = None) -> Dict:
    """One variant's figures for `select`: clean and noisy dev F1 and the drop, mean and
    sample spread over its seeds, and its score, the mean of clean and noisy F1; its recipe
    (side, char encoder, augmenter, own settings)."""
    runs = row["runs"]
    clean, noisy, drop = (
        mean_spread(_f1s(runs, "dev")),
        mean_spread(_f1s(runs, "dev", rate)),
        mean_spread(_drops(runs, rate)),
    )
    result = {
        "name": row["name"],
        "side": variant.side,
        "char_encoder": char_encoder or variant.char_encoder,
        "augment": variant.augment,
        "seeds": [r["seed"] for r in runs],
        "dev_f1": _rounded(clean),
        f"dev_f1_noise{rate}": _rounded(noisy),
        f"drop_noise{rate}": _rounded(drop),
        "score": None if clean[0] is None or noisy[0] is None else round((clean[0] + noisy[0]) / 2, 4),
    }
    if variant.augment and (variant.aug_level is not None or variant.aug_rate is not None):
        result["augmenter"] = {"level": variant.aug_level, "rate": variant.aug_rate}  # its own, not the preset's
    if variant.settings:
        result["settings"] = dict(variant.settings)
    return result


def prior_row(row: Dict, prior: Path, prior_min_seeds: int, prior_steps: Optional[int] = None) -> Dict:
    """An earlier round's candidate (or reference) as recorded, marked with the file it comes
    from, the --min-seeds its round admitted it under and, given, the budget it trained to
    (each kept when already marked)."""
    out = {**row, "from": row.get("from", str(prior)), "min_seeds": row.get("min_seeds", prior_min_seeds)}
    if prior_steps is not None and "steps" not in row:
        out["steps"] = prior_steps
    return out


def is_chosen(selection: Dict, row: Dict) -> bool:
    """Whether a recorded candidate is the one the selection chose (its name, and its budget
    where the selection records one: a variant can compete at two budgets)."""
    steps = selection.get("steps")
    return row["name"] == selection["chosen"] and (steps is None or row.get("steps") == steps)


def row_key(row: Dict) -> str:
    """How a command names a recorded row: VARIANT, or VARIANT@STEPS for a budget's seeds."""
    return f"{row['name']}@{row['steps']}" if row.get("budget") else row["name"]


@app.command("select")
def select(
    names: List[str] = typer.Argument(..., help="the candidate variants, measured in --metrics-dir"),
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    noise: str = typer.Option("0.5", "--noise", help="the noise rate of the noisy dev copy (its file's suffix)"),
    min_seeds: int = typer.Option(3, "--min-seeds"),
    references: List[str] = typer.Option(
        ["baseline"],
        "--reference",
        help="recorded beside the candidates, when it has metrics (or is in --prior); repeat it for more: the "
        "first is `reference`, the others `other_references`",
    ),
    prior: Optional[Path] = typer.Option(
        None,
        "--prior",
        help="an earlier round's selection JSON (e.g. meta/selection.json): its candidates compete with their "
        "recorded figures (a variant with metrics in --metrics-dir is measured there instead)",
    ),
    char_encoder: Optional[str] = typer.Option(
        None, "--char-encoder", help="of the char_encoder: default candidates (else read from their train_time.json)"
    ),
    budget_dir: Path = typer.Option(
        Path("meta/budget/wnut17"), "--budget-dir", help="the seeds of VARIANT@STEPS names (curves.py's files)"
    ),
    prior_steps: Optional[int] = typer.Option(
        None, "--prior-steps", help="the budget of the rows measured in --metrics-dir and of --prior's unmarked rows"
    ),
    output: Path = typer.Option(Path("metrics/selection.json"), "--output"),
    variants_file: Path = VARIANTS_FILE,
) -> None:
    """The variant to ship: the best mean over its seeds of (clean dev F1 + dev F1 at --noise) / 2,
    each candidate with at least --min-seeds seeds (one from --prior: its round's); the figures
    behind the choice go to --output. VARIANT@STEPS: VARIANT's seeds at its own budget, from
    --budget-dir."""
    rate = noise
    earlier: Dict = {}
    if prior is not None:
        if not prior.exists():
            raise SystemExit(f"variants.py select: --prior {prior} does not exist")
        earlier = json.loads(prior.read_text(encoding="utf8"))
        if str(earlier.get("noise_rate")) != rate:
            raise SystemExit(
                f"variants.py select: --prior {prior} scored noise {earlier.get('noise_rate')}, not --noise {rate}"
            )
    if char_encoder is not None and char_encoder not in ENCODER_DIRS:
        raise SystemExit(f"variants.py select: --char-encoder must be one of {', '.join(ENCODER_DIRS)}")
    variants = named_variants(variants_file, [budget_name(n)[0] for n in names])
    earlier_rows = {row_key(c): c for c in earlier.get("candidates", [])}
    order = list(earlier_rows) + [name for name in names if name not in earlier_rows]
    plain = [budget_name(n)[0] for n in [*order, *references] if budget_name(n)[1] is None]
    rows = {row["name"]: row for row in load_rows(metrics_dir, plain)}

    def measured(name: str) -> Optional[Dict]:
        """The seeds of a candidate or reference measured here (VARIANT@STEPS: in --budget-dir)."""
        variant, steps = budget_name(name)
        if steps is None:
            return rows.get(name)
        runs = load_budget_runs(budget_dir, variant, steps)
        return {"name": variant, "runs": runs} if runs else None

    def stamped(row: Dict, name: str) -> Dict:
        """A measured row with the budget it trained to, and where a budget's seeds came from."""
        steps = budget_name(name)[1]
        if steps is not None:
            return {**row, "steps": steps, "budget": str(budget_dir)}
        return {**row, "steps": prior_steps} if prior_steps is not None else row

    candidates = []
    for name in order:
        row = measured(name)
        if row is None and name in earlier_rows:  # not measured here: the earlier round's figures
            candidates.append(prior_row(earlier_rows[name], prior, earlier["min_seeds"], prior_steps))
            continue
        variant = budget_name(name)[0]
        if variant not in variants:
            raise SystemExit(
                f"variants.py select: {name} has metrics in {metrics_dir}/{name}/, no entry in {variants_file}"
            )
        where = (
            f"{budget_dir}/{variant}_{budget_name(name)[1]}_seedN.jsonl" if "@" in name else f"{metrics_dir}/{name}/"
        )
        seeds = [] if row is None else [r for r in row["runs"] if rate in r["noisy"]]
        if len(seeds) < min_seeds:
            raise SystemExit(
                f"variants.py select: {name} has {len(seeds)} seed(s) with clean and noise-{rate} dev metrics in "
                f"{where}, fewer than --min-seeds {min_seeds} (train them with --noisy)"
            )
        encoder = char_encoder_of(variants[variant], seeds, char_encoder)
        candidates.append(
            stamped(selection_row({"name": variant, "runs": seeds}, variants[variant], rate, encoder), name)
        )
    chosen = max(candidates, key=lambda c: c["score"])
    result = {
        "criterion": f"best mean over seeds of (clean dev F1 + dev F1 at noise {rate}) / 2",
        "noise_rate": rate,
        "min_seeds": min_seeds,
        "metrics_dir": str(metrics_dir),
        "chosen": chosen["name"],
        **({"steps": chosen["steps"]} if chosen.get("steps") is not None else {}),
        "side": chosen["side"],
        "char_encoder": chosen["char_encoder"],
        "augment": bool(chosen.get("augment", False)),
        "candidates": candidates,
    }
    if prior is not None:
        result["prior"] = str(prior)
    # the references: measured in --metrics-dir, else as --prior recorded them; the first found
    # is `reference` (the one the model card and the drops compare with), the rest follow it
    recorded = [earlier["reference"]] if earlier.get("reference") else []
    recorded = {row_key(r): r for r in recorded + earlier.get("other_references", [])}
    found = []
    for reference in references:
        row, variant = measured(reference), budget_name(reference)[0]
        if row is not None and variant in variants:
            found.append(stamped(selection_row(row, variants[variant], rate), reference))
        elif reference in recorded:
            found.append(prior_row(recorded[reference], prior, earlier["min_seeds"], prior_steps))
    if found:
        result["reference"] = found[0]
    if found[1:]:
        result["other_references"] = found[1:]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")
    for c in candidates + found:
        mark = "→" if c is chosen else " "
        source = f", from {c['from']}" if "from" in c else ""
        print(
            f"{mark} {row_key(c):<24} score {pct(c['score'])}  clean {pct(c['dev_f1'][0])}  noise {rate} "
            f"{pct(c[f'dev_f1_noise{rate}'][0])}  ({len(c['seeds'])} seeds{source})"
        )
    augmented = ", with the char-noise augmenter" if result["augment"] else ""
    print(
        f"✔ saved {output}: ship {chosen['name']} (side {chosen['side']}, char encoder {chosen['char_encoder']}"
        f"{augmented})"
    )


def _recorded(value: Optional[float], digits: str = "0.1") -> str:
    """A recorded 0..1 figure in %, rounded half up from its recorded decimals ("–": none)."""
    if value is None:
        return "–"
    return str((Decimal(str(value)) * 100).quantize(Decimal(digits), rounding=ROUND_HALF_UP))


def _recorded_pair(pair: Sequence[Optional[float]]) -> str:
    """ "53.5 ± 1.2": a recorded [mean, sample spread] (one seed: the mean alone)."""
    mean, spread = (list(pair) + [None, None])[:2]
    return _recorded(mean) if spread is None or mean is None else f"{_recorded(mean)} ± {_recorded(spread)}"


def _recipe_cell(row: Dict) -> str:
    """What a recorded row trains: the side(s) NER reads and the char encoder, or the
    spacy-transformers baseline; the char-noise augmenter and own settings when it has them."""
    if row.get("char_encoder") is None:
        text = "spacy-transformers"
    else:
        side = row.get("side", "subword")
        text = f"{side} side{'s' if side == 'both' else ''}, {row['char_encoder']} char encoder"
    if row.get("augment"):
        own = {k: v for k, v in (row.get("augmenter") or {}).items() if v is not None}
        text += " + augmenter" + (" (" + ", ".join(f"{k} {v}" for k, v in own.items()) + ")" if own else "")
    if row.get("settings"):
        text += " (" + ", ".join(_setting_cell(k, v) for k, v in row["settings"].items()) + ")"
    return text


def _setting_cell(key: str, value: str) -> str:
    """``backbone_lr_scale 0.667``; a registered block by its arguments
    (``consistency: weight 3.0, level 0.5, rate 0.5``), not its JSON; a registered name
    set alone by its plugin-free part (``EntangleListener.v2``)."""
    name = key.rsplit(".", 1)[-1]
    if name.startswith("@"):
        return value.removeprefix("spacy-entangle.")
    try:
        block = json.loads(value)
    except ValueError:
        return f"{name} {value}"
    if not isinstance(block, dict):
        return f"{name} {value}"
    return f"{name}: " + ", ".join(f"{k} {v}" for k, v in block.items() if not k.startswith("@"))


def selection_table(selection: Dict) -> List[str]:
    """The results page's table of a selection JSON: the candidates, best select score first (the
    chosen one in bold, marked en_entangle_wnut), then the references; each drop over each
    reference's, from the recorded means."""
    rate = str(selection["noise_rate"])
    references = ([selection["reference"]] if selection.get("reference") else []) + selection.get(
        "other_references", []
    )
    ranked = sorted(selection["candidates"], key=lambda c: -c["score"])
    rows = [(row, False) for row in ranked] + [(row, True) for row in references]
    budgets = any(row.get("steps") is not None for row, _ in rows)
    header = ["model", "recipe"] + (["steps"] if budgets else [])
    header += ["seeds", "dev F1", f"F1 at noise {rate}", f"drop at {rate}"]
    # a reference at two budgets (the baseline at its own and at the earlier rounds') is told
    # apart by its steps
    header += [
        f"drop / {ref['name']} {ref['steps']:,}'s" if budgets and ref.get("steps") else f"drop / {ref['name']}'s"
        for ref in references
    ] + ["select score"]
    lines = []
    for row, is_reference in rows:
        chosen = not is_reference and is_chosen(selection, row)
        name = f"`{row['name']}`"
        marks = ["reference"] if is_reference else []
        if row.get("from"):
            marks.append("earlier round")
        if chosen:
            name += " = `en_entangle_wnut`"
        if marks:
            name += f" ({', '.join(marks)})"
        drop = row.get(f"drop_noise{rate}", [None])[0]
        cells = [name, _recipe_cell(row)] + ([f"{row['steps']:,}" if row.get("steps") else "–"] if budgets else [])
        cells.append(str(len(row["seeds"])))
        cells += [_recorded_pair(row["dev_f1"]), _recorded_pair(row[f"dev_f1_noise{rate}"])]
        cells.append(_recorded_pair(row[f"drop_noise{rate}"]))
        for ref in references:
            base = ref.get(f"drop_noise{rate}", [None])[0]
            cells.append("–" if drop is None or not base else f"{drop / base:.2f}")
        cells.append(_recorded(row.get("score")))
        lines.append([f"**{c}**" for c in cells] if chosen else cells)
    notes = [
        f"WNUT-17 dev, entity F1 in %: mean ± sample standard deviation over the seeds; drop: clean minus "
        f"noise-{rate} F1 per seed, in points; drop / X's: the mean drop over X's mean drop; select score: the "
        f"mean of clean and noise-{rate} F1. `select` ships the {selection['criterion']}, among candidates with "
        f"at least {selection['min_seeds']} seeds (an earlier round's: that round's minimum); the references are "
        "not candidates.",
    ]
    if budgets:
        notes.append(
            "steps: the budget a row trained to, the learning-rate schedule ending there; each seed is scored at "
            "its best dev evaluation (the model-best spaCy keeps). Rows trained to their own budget read off "
            "their learning curves come from `project/meta/budget/` ([curves.md](curves.md))."
        )
    rounds: Dict[str, Set[str]] = {}
    for row, _ in rows:
        if row.get("from"):
            rounds.setdefault(str(row["from"]), set()).add(str(row.get("min_seeds", "?")))
    if rounds:
        where = "; ".join(
            f"`{path}` of that round, which admitted {' or '.join(f'{n}+' for n in sorted(least))} seeds"
            for path, least in sorted(rounds.items())
        )
        notes.append(
            f"(earlier round): the figures as an earlier round recorded them ({where}), not measured again; "
            "recorded to 0.01 points by an older `select`, a spread can differ by 0.1 from that round's own table."
        )
    notes.append(
        "Generated from `project/meta/selection.json` by `python scripts/variants.py select-table` (in `project/`)."
    )
    table = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    table += ["| " + " | ".join(cells) + " |" for cells in lines]
    return table + [line for note in notes for line in ("", note)]


@app.command("select-table")
def select_table(
    selection_file: Path = typer.Option(HERE / "meta" / "selection.json", "--selection"),
    page: Path = typer.Option(SELECTION_PAGE, "--page", "--readme", help="the results page holding the markers"),
    check: bool = typer.Option(False, "--check", help="fail if the page's table differs; write nothing"),
) -> None:
    """Write the table of --selection (the committed choice) between the results page's
    selection markers."""
    selection = read_json(selection_file)
    if selection is None:
        raise SystemExit(f"variants.py select-table: no {selection_file}")
    command = "cd project && python scripts/variants.py select-table"
    write_marked_block(page, "selection", selection_table(selection), selection_file, command, check)
