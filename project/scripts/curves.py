"""Learning curves of every task: entangle's recipe beside its baseline, trained once to a large
budget (`variants.py train-one ... --curve`), dev clean and at noise 0.5 at every evaluation.

    python scripts/curves.py collect [--root .] [--meta meta/curves]
    python scripts/curves.py render  [--meta meta/curves] [--page ../docs/results/curves.md] [--check]
    python scripts/curves.py plot    [--meta meta/curves] [--output ../docs/results/curves.png]
    python scripts/curves.py collect-budget VARIANT STEPS [--task wnut17] [--root .] [--folder metrics/budget]

`collect` copies each curve file that the projects wrote (ROOT/FOLDER/metrics/curves/...) into
the committed meta/curves/TASK/VARIANT_seedN.jsonl; `render` writes the summary table (per curve:
the best clean dev score, the step, passes and CPU-minutes where it was reached, the score at
noise 0.5 there, whether the curve levelled off: its best before the last fifth of the run)
between the results page's markers, and `--check` fails when the page is not what the files
give; `plot` draws every task's curves, entangle beside the baseline, clean and noisy.
The budget of each model is read off its own curve: the step of its best clean dev score. A curve
that a longer run replaced stays in the table and the plot (EARLIER: its file carries its
schedule's suffix, VARIANT_seed0_STEPS.jsonl) but not in the verdict.

The seeds at a chosen budget (`variants.py train-one VARIANT --max-steps B --curve ...`, the
learning-rate schedule ending at B) are kept as meta/budget/TASK/VARIANT_B_seedN.jsonl
(`collect-budget`); `render` also writes their table between the page's `budget` markers: per
model and budget, the mean and sample standard deviation over seeds of the best clean dev score
of each run (the checkpoint spaCy keeps as model-best) and of the score at noise 0.5 there.
The shipped recipe's and the baseline's seeds at the old 600-step budget come from
meta/selection.json (the same measurement, made by `variants.py`). Between the page's `verdict`
markers `render` writes, per task whose curves both ran, the task's recipe against the baseline,
each from its seeds at the budget read off its own curve, against the task's bar (BARS), and
between the `parity-at-budget` markers of docs/results/tasks.md and of the README the same
pairs as a paper-parity table (clean and at noise 0.5, mean ± sample std over seeds, the
paper's figures from meta/paper_parity.json where it reports the task).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import typer
from tables import write_marked_block

HERE = Path(__file__).resolve().parent.parent
META = HERE / "meta" / "curves"
BUDGET = HERE / "meta" / "budget"
SELECTION = HERE / "meta" / "selection.json"
PAGE = HERE.parent / "docs" / "results" / "curves.md"
TASKS_PAGE = HERE.parent / "docs" / "results" / "tasks.md"
README = HERE.parent / "README.md"
PARITY = HERE / "meta" / "paper_parity.json"  # the paper's figures ("paper")
PLOT = HERE.parent / "docs" / "results" / "curves.png"
NOISY = "dev_noise0.5"
# a curve has levelled off when its best clean score came before the last fifth of the run
LEVELLED = 0.8
GRID = 100  # the curves score every 100 or 200 steps
PRESET_STEPS = 600  # the CPU preset's budget when meta/selection.json's rounds were measured


@dataclass(frozen=True)
class Curve:
    """One curve run: which project wrote it, where, and what it is."""

    task: str  # the folder under meta/curves and the plot's panel
    title: str
    folder: str  # the project, relative to ROOT
    path: str  # the curve file, relative to the project
    variant: str
    role: str  # "entangle" or "baseline"
    metric: str  # the clean/noisy score's key
    score_name: str
    # an earlier run of the same curve, replaced by a longer one (its schedule, e.g.
    # "2,000-step schedule"): kept in the table and the plot, never collected or paired
    earlier: str = ""


def _curves() -> List[Curve]:
    out = []
    # per task the entangle recipes whose curves were run (the first: the task's recipe; WNUT-17's
    # entangle-aug is the recipe shipped before each model trained to its own budget,
    # entangle-aug-lr asks whether the encoders' larger learning-rate scale pays)
    tasks = [
        ("wnut17", "WNUT-17 NER", ".", "", ("both-mild", "entangle-aug", "entangle-aug-lr"), "ents_f", "dev F1"),
        ("tweebank", "Tweebank v2 POS", "tweebank", "", ("both-mild",), "tag_acc", "dev UPOS acc"),
        ("tweeteval", "TweetEval emotion", "tweeteval", "", ("mean-both-mild",), "cats_macro_f", "val macro-F1"),
        ("masakhaner-swa", "MasakhaNER swa", "masakhaner", "swa/", ("both-mild",), "ents_f", "dev F1"),
    ]
    for task, title, folder, sub, recipes, metric, name in tasks:
        runs = [(variant, "entangle") for variant in recipes] + [("baseline", "baseline")]
        for variant, role in runs:
            out.append(
                Curve(task, title, folder, f"metrics/curves/{sub}{variant}_seed0.jsonl", variant, role, metric, name)
            )
        for variant, role, suffix, schedule in EARLIER.get(task, ()):
            path = f"metrics/curves/{sub}{variant}_seed0_{suffix}.jsonl"
            out.append(Curve(task, title, folder, path, variant, role, metric, name, earlier=schedule))
    return out


# the curves a longer run replaced, per task: (variant, role, the file's suffix, the schedule)
# (MasakhaNER swa's first pair ran a 2,000-step schedule on the AMD host; neither levelled off)
EARLIER = {
    "masakhaner-swa": [
        ("both-mild", "entangle", "2000", "2,000-step schedule"),
        ("baseline", "baseline", "2000", "2,000-step schedule"),
    ]
}


CURVES = _curves()

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


def read_points(path: Path) -> List[Dict[str, Any]]:
    lines = path.read_text(encoding="utf8").splitlines()
    return sorted((json.loads(line) for line in lines if line.strip()), key=lambda p: p["step"])


def best_point(points: List[Dict[str, Any]], metric: str) -> Dict[str, Any]:
    """The point of the best clean dev score, the earliest of equal ones (as spaCy's patience
    counts): the checkpoint spaCy keeps as model-best."""
    return max(points, key=lambda p: (p["scores"]["dev"].get(metric) or 0.0, -p["step"]))


def meta_file(meta: Path, curve: Curve) -> Path:
    return meta / curve.task / Path(curve.path).name


@dataclass
class Summary:
    """What a curve says: where its best clean score is and what the run cost to get there."""

    curve: Curve
    points: int
    last_step: int
    best_step: int
    best: float
    noisy_at_best: Optional[float]
    passes_at_best: Optional[float]
    cpu_minutes_at_best: float
    cpu_minutes_total: float

    @property
    def budget(self) -> int:
        """The best step on the scoring grid (whole hundreds): a loop resumed from a saved state
        counts on from it, so it scores one step past the grid (1,001, 2,001), and a budget whose
        seeds are run from scratch ends on the grid."""
        return max(GRID, GRID * round(self.best_step / GRID))

    @property
    def levelled(self) -> bool:
        return self.best_step <= LEVELLED * self.last_step


def summarise(curve: Curve, points: List[Dict[str, Any]]) -> Summary:
    if not points:
        raise ValueError(f"{curve.task}/{curve.variant}: the curve has no points")
    best = best_point(points, curve.metric)
    noisy = best["scores"].get(NOISY, {}).get(curve.metric)
    return Summary(
        curve=curve,
        points=len(points),
        last_step=points[-1]["step"],
        best_step=best["step"],
        best=best["scores"]["dev"].get(curve.metric) or 0.0,
        noisy_at_best=noisy,
        passes_at_best=best.get("passes"),
        cpu_minutes_at_best=best["cpu_seconds"] / 60,
        cpu_minutes_total=points[-1]["cpu_seconds"] / 60,
    )


def summaries(meta: Path) -> List[Summary]:
    out = []
    for curve in CURVES:
        path = meta_file(meta, curve)
        if path.exists():
            out.append(summarise(curve, read_points(path)))
    return out


def render_table(rows: List[Summary]) -> str:
    head = (
        "| task | model | score | best dev | at noise 0.5 | best at step | passes | CPU-min to best | "
        "last step | CPU-min in all | levelled off |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    lines = []
    for s in rows:
        noisy = f"{100 * s.noisy_at_best:.1f}" if s.noisy_at_best is not None else "–"
        passes = f"{s.passes_at_best:.1f}" if s.passes_at_best is not None else "–"
        earlier = f", earlier: {s.curve.earlier}" if s.curve.earlier else ""
        lines.append(
            f"| {s.curve.title} | {s.curve.role} (`{s.curve.variant}`{earlier}) | {s.curve.score_name} | {100 * s.best:.1f} | "
            f"{noisy} | {s.best_step} | {passes} | {s.cpu_minutes_at_best:.0f} | {s.last_step} | "
            f"{s.cpu_minutes_total:.0f} | {'yes' if s.levelled else 'no'} |"
        )
    return head + "\n".join(lines) + "\n" if lines else "No curve has been collected yet.\n"


MeanSd = Tuple[float, float]


def mean_sd(values: List[float]) -> MeanSd:
    """The mean and the sample standard deviation (0 for one value, which the tables print
    without a spread)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


@dataclass(frozen=True)
class BudgetRow:
    """One model at one budget over seeds: each seed's best clean dev score (the checkpoint
    spaCy keeps) and its score at noise 0.5 there, as mean and sample standard deviation."""

    task: str
    variant: str
    steps: int
    seeds: Tuple[int, ...]
    clean: MeanSd
    noisy: MeanSd
    drop: MeanSd
    source: str

    def cells(self) -> List[str]:
        def pm(value: MeanSd) -> str:
            if len(self.seeds) < 2:  # one seed has no spread to show
                return f"{100 * value[0]:.1f}"
            return f"{100 * value[0]:.1f} ± {100 * value[1]:.1f}"

        seeds = ", ".join(map(str, self.seeds))
        return [
            self.task,
            f"`{self.variant}`",
            str(self.steps),
            seeds,
            pm(self.clean),
            pm(self.noisy),
            pm(self.drop),
            self.source,
        ]


BUDGET_NAME = re.compile(r"^(?P<variant>.+)_(?P<steps>\d+)_seed(?P<seed>\d+)\.jsonl$")


def budget_rows(budget: Path, selection: Optional[Path]) -> List[BudgetRow]:
    """The selection file's rows of the WNUT-17 models with a curve, measured at the CPU preset's
    budget (600 steps where a row does not say), then every model and budget whose seeds are kept
    (meta/budget/TASK/VARIANT_STEPS_seedN.jsonl; the selection's rows from there are not read twice)."""
    rows: List[BudgetRow] = []
    if selection is not None and selection.exists():
        data = json.loads(selection.read_text(encoding="utf8"))
        entries = [data["reference"], *data.get("other_references", []), *data["candidates"]]
        with_curves = {c.variant for c in CURVES if c.task == "wnut17"}
        for entry in entries:
            if entry["name"] not in with_curves or entry.get("budget"):
                continue
            kept = (tuple(entry["dev_f1"]), tuple(entry["dev_f1_noise0.5"]), tuple(entry["drop_noise0.5"]))
            steps = entry.get("steps") or PRESET_STEPS
            rows.append(BudgetRow("wnut17", entry["name"], steps, tuple(entry["seeds"]), *kept, "meta/selection.json"))
    runs: Dict[Tuple[str, str, int], List[Tuple[int, float, float]]] = {}
    for path in sorted(budget.glob("*/*.jsonl")) if budget.exists() else []:
        match = BUDGET_NAME.match(path.name)
        if match is None:
            continue
        task = path.parent.name
        metric = next(c.metric for c in CURVES if c.task == task)
        points = read_points(path)
        best = best_point(points, metric)
        clean = best["scores"]["dev"].get(metric) or 0.0
        noisy = best["scores"].get(NOISY, {}).get(metric) or 0.0
        runs.setdefault((task, match["variant"], int(match["steps"])), []).append((int(match["seed"]), clean, noisy))
    for (task, variant, steps), seeds in sorted(runs.items()):
        seeds.sort()
        clean, noisy = [s[1] for s in seeds], [s[2] for s in seeds]
        drop = [c - n for c, n in zip(clean, noisy)]
        ids = tuple(s[0] for s in seeds)
        rows.append(
            BudgetRow(task, variant, steps, ids, mean_sd(clean), mean_sd(noisy), mean_sd(drop), f"meta/budget/{task}/")
        )
    return rows


def render_budget(rows: List[BudgetRow]) -> str:
    head = (
        "| task | model | budget (steps) | seeds | best dev | at noise 0.5 | drop | from |\n"
        "|---|---|---:|---|---:|---:|---:|---|\n"
    )
    lines = ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return head + "\n".join(lines) + "\n" if lines else "No seeds at a chosen budget have been collected yet.\n"


# the bar each task's recipe must clear against its baseline, each at its own budget over 3
# seeds: (clean margin in points, largest ratio of its drop at noise 0.5 to the baseline's);
# WNUT-17's is the paper's own gain over its backbone (+1.6) rounded up
BARS = {"wnut17": (2.0, 0.5)}
BAR = (0.0, 0.6)


def pick_row(rows: List[BudgetRow], task: str, variant: str, steps: int) -> Optional[BudgetRow]:
    """The seeds of ``variant`` at ``steps`` (the most seeds where two sources hold them)."""
    found = [r for r in rows if r.task == task and r.variant == variant and r.steps == steps]
    return max(found, key=lambda r: len(r.seeds)) if found else None


@dataclass(frozen=True)
class Pair:
    """A task's recipe and its baseline, each at the budget read off its own curve, with
    their seeds there (None: not run yet)."""

    task: str
    title: str
    score_name: str
    recipe: Summary
    baseline: Summary
    recipe_seeds: Optional[BudgetRow]
    baseline_seeds: Optional[BudgetRow]

    def cells(self) -> List[str]:
        """`variant` budget (its curve has not levelled off), seeds: one per model."""
        return [
            f"`{s.curve.variant}` {s.budget}"
            + ("" if s.levelled else " (its curve has not levelled off)")
            + ", "
            + (", ".join(map(str, r.seeds)) if r else "not run")
            for s, r in ((self.recipe, self.recipe_seeds), (self.baseline, self.baseline_seeds))
        ]


def pairs(curves: List[Summary], rows: List[BudgetRow]) -> List[Pair]:
    """Per task whose curves both ran: its recipe (the first entangle curve of CURVES) and the
    baseline, each with its seeds at its own budget."""
    out = []
    for task in dict.fromkeys(c.task for c in CURVES):
        recipe = next(c for c in CURVES if c.task == task and c.role == "entangle")
        held = {s.curve.variant: s for s in curves if s.curve.task == task and not s.curve.earlier}
        if recipe.variant not in held or "baseline" not in held:
            continue
        ent, base = held[recipe.variant], held["baseline"]
        out.append(
            Pair(
                task,
                base.curve.title,
                base.curve.score_name,
                ent,
                base,
                pick_row(rows, task, ent.curve.variant, ent.budget),
                pick_row(rows, task, "baseline", base.budget),
            )
        )
    return out


def verdict_lines(curves: List[Summary], rows: List[BudgetRow]) -> List[str]:
    """Per task: its recipe against the baseline, each at the budget read off its own curve (the
    step of its best clean dev score), from their seeds there, against the task's bar."""
    head = [
        "| task | recipe: budget, seeds | baseline: budget, seeds | clean: recipe - baseline | "
        "noise 0.5: recipe - baseline | drop: recipe / baseline | bar (clean, drop) | met |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    lines = []
    for pair in pairs(curves, rows):
        cells = pair.cells()
        margin, ratio = BARS.get(pair.task, BAR)
        bar = f"{margin:+.1f}, <= {ratio}x"
        ent, base = pair.recipe_seeds, pair.baseline_seeds
        if ent is None or base is None:
            lines.append(f"| {pair.title} | {cells[0]} | {cells[1]} | | | | {bar} | not yet |")
            continue
        clean = 100 * (ent.clean[0] - base.clean[0])
        noisy = 100 * (ent.noisy[0] - base.noisy[0])
        drop = ent.drop[0] / base.drop[0] if base.drop[0] > 0 else float("inf")
        # judged on the figures as printed, so the row never contradicts itself
        clean, noisy, drop = round(clean, 1), round(noisy, 1), round(drop, 2)
        missed = [name for name, ok in (("clean", clean >= margin), ("drop", drop <= ratio)) if not ok]
        few = " (fewer than 3 seeds)" if min(len(ent.seeds), len(base.seeds)) < 3 else ""
        met = ("yes" if not missed else "no: " + ", ".join(missed)) + few
        lines.append(
            f"| {pair.title} | {cells[0]} | {cells[1]} | {clean:+.1f} | {noisy:+.1f} | {drop:.2f}x | {bar} | {met} |"
        )
    return head + lines if lines else ["No task has both curves yet."]


# the paper's figures of a task (meta/paper_parity.json's "paper", by its row key there)
PAPER_KEYS = {"wnut17": "wnut17"}


def parity_lines(curves: List[Summary], rows: List[BudgetRow], paper: Dict[str, Any]) -> List[str]:
    """The paper-parity table at each model's own budget: per task, the clean score and the score
    at noise 0.5 of its recipe and of the baseline (mean ± sample std over seeds), beside the
    paper's figures where it reports the task (its test split, its larger encoders)."""
    head = [
        "| task | score | paper: entangle | paper: baseline | ours: recipe, steps | ours: recipe "
        "| ours: baseline, steps | ours: baseline | ours − baseline |",
        "|---|---|---:|---:|---|---:|---|---:|---:|",
    ]

    def pm(row: BudgetRow, value: MeanSd) -> str:
        spread = f" ± {100 * value[1]:.1f}" if len(row.seeds) > 1 else ""
        return f"{100 * value[0]:.1f}{spread} ({len(row.seeds)})"

    lines = []
    for pair in pairs(curves, rows):
        ent, base = pair.recipe_seeds, pair.baseline_seeds
        if ent is None or base is None:
            continue
        figures = paper.get(PAPER_KEYS.get(pair.task, ""), {})
        for score, field, printed in (
            (pair.score_name, "clean", figures),
            (f"{pair.score_name}, noise 0.5", "noisy", {}),
        ):
            mine, theirs = getattr(ent, field), getattr(base, field)
            cells = [
                pair.title,
                score,
                f"{printed['entangle']:.2f}" if "entangle" in printed else "–",
                f"{printed['baseline']:.2f}" if "baseline" in printed else "–",
                f"`{ent.variant}` {ent.steps:,}",
                pm(ent, mine),
                f"`{base.variant}` {base.steps:,}",
                pm(base, theirs),
                f"{100 * (mine[0] - theirs[0]):+.1f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return head + lines if lines else ["No task has the seeds of both models at their budgets yet."]


@app.command()
def collect(
    root: Path = typer.Option(HERE, "--root", help="the WNUT-17 project; the task projects are its sub-folders"),
    meta: Path = typer.Option(META, "--meta"),
) -> None:
    """Copy every curve file the projects wrote into the committed meta/curves/."""
    for curve in (c for c in CURVES if not c.earlier):
        source = root / curve.folder / curve.path
        if not source.exists():
            print(f"ℹ {curve.task} {curve.variant}: no curve at {source}")
            continue
        _copy(source, meta_file(meta, curve))


@app.command()
def render(
    meta: Path = typer.Option(META, "--meta"),
    budget: Path = typer.Option(BUDGET, "--budget"),
    selection: Path = typer.Option(SELECTION, "--selection"),
    page: Path = typer.Option(PAGE, "--page"),
    tasks_page: Path = typer.Option(TASKS_PAGE, "--tasks-page", help="the paper tasks' page (its parity table)"),
    readme: Path = typer.Option(README, "--readme", help="the front page (the same parity table)"),
    parity: Path = typer.Option(PARITY, "--parity", help="the paper's figures (its `paper` entries)"),
    check: bool = typer.Option(False, "--check", help="fail when the page's table is not what the files give"),
) -> None:
    """Write the curves' summary table between the page's `curves` markers, the seeds at the
    chosen budgets between its `budget` markers, the verdict between its `verdict` markers, and
    the paper-parity table at each model's budget between the `parity-at-budget` markers of
    the tasks page and of the README."""
    command = "python scripts/curves.py render (in project/)"
    curves = summaries(meta)
    lines = render_table(curves).rstrip("\n").split("\n")
    write_marked_block(page, "curves", lines, meta, command, check)
    seeds = budget_rows(budget, selection)
    rows = render_budget(seeds).rstrip("\n").split("\n")
    write_marked_block(page, "budget", rows, budget, command, check)
    write_marked_block(page, "verdict", verdict_lines(curves, seeds), budget, command, check)
    paper = json.loads(parity.read_text(encoding="utf8")).get("paper", {}) if parity.exists() else {}
    table = parity_lines(curves, seeds, paper)
    for target in (tasks_page, readme):
        write_marked_block(target, "parity-at-budget", table, budget, command, check)


@app.command("collect-budget")
def collect_budget(
    variant: str = typer.Argument(...),
    steps: int = typer.Argument(...),
    task: str = typer.Option("wnut17", "--task"),
    root: Path = typer.Option(HERE, "--root", help="the project that ran them"),
    folder: str = typer.Option("metrics/budget", "--folder", help="where in ROOT (MasakhaNER: metrics/budget/LANG)"),
    budget: Path = typer.Option(BUDGET, "--budget"),
) -> None:
    """Copy the seed runs of VARIANT at STEPS (ROOT/FOLDER/VARIANT_STEPS_seedN.jsonl) into
    the committed meta/budget/TASK/."""
    if task not in {c.task for c in CURVES}:
        raise typer.BadParameter(f"unknown task {task!r} (one of {', '.join(dict.fromkeys(c.task for c in CURVES))})")
    found = sorted((root / folder).glob(f"{variant}_{steps}_seed*.jsonl"))
    if not found:
        raise typer.BadParameter(f"no runs of {variant} at {steps} steps in {root / folder}")
    for source in found:
        _copy(source, budget / task / source.name)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    print(f"✔ {source} -> {target} ({len(read_points(target))} points)")


@app.command()
def plot(
    meta: Path = typer.Option(META, "--meta"),
    output: Path = typer.Option(PLOT, "--output"),
    x: str = typer.Option("passes", "--x", help="passes | step | cpu_minutes"),
) -> None:
    """Each task's curves in one panel: entangle and the baseline, clean (solid) and at
    noise 0.5 (dashed), the best clean point marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(c.task for c in CURVES))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        drawn = False
        # the baseline blue, the task's recipe red, any other entangle recipe orange
        recipes = iter(["tab:red", "tab:orange", "tab:purple"])
        for curve in (c for c in CURVES if c.task == task):
            path = meta_file(meta, curve)
            if not path.exists():
                continue
            points = read_points(path)
            xs = [_x(p, x) for p in points]
            clean = [100 * (p["scores"]["dev"].get(curve.metric) or 0.0) for p in points]
            noisy = [100 * (p["scores"].get(NOISY, {}).get(curve.metric) or 0.0) for p in points]
            if curve.earlier:  # a run a longer one replaced: thin and faded, in its model's colour
                colour, style = ("tab:blue" if curve.role == "baseline" else "tab:red"), {"alpha": 0.35, "lw": 0.8}
                label = f"{curve.variant}, {curve.earlier}"
            else:
                colour, style, label = ("tab:blue" if curve.role == "baseline" else next(recipes)), {}, curve.variant
            ax.plot(xs, clean, color=colour, label=f"{label} clean", **style)
            ax.plot(xs, noisy, color=colour, linestyle="--", label=f"{label} noise 0.5", **style)
            s = summarise(curve, points)
            best = next(p for p in points if p["step"] == s.best_step)
            ax.plot([_x(best, x)], [100 * s.best], marker="o", color=colour, **style)
            ax.set_title(curve.title)
            ax.set_ylabel(curve.score_name)
            drawn = True
        ax.set_xlabel({"passes": "passes over the training data", "step": "steps", "cpu_minutes": "CPU-minutes"}[x])
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
        else:  # a task whose curves were not run yet keeps its panel, said so
            ax.set_title(next(c.title for c in CURVES if c.task == task))
            ax.text(0.5, 0.5, "not run yet", ha="center", va="center", transform=ax.transAxes, color="grey")
            ax.set_xticks([])
            ax.set_yticks([])
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    print(f"✔ {output}")


def _x(point: Dict[str, Any], x: str) -> float:
    if x == "cpu_minutes":
        return point["cpu_seconds"] / 60
    value = point.get(x)
    return float(value if value is not None else point["step"])


if __name__ == "__main__":
    app()
