"""project/scripts/curves.py: the learning-curve summary on the results page is what the
committed meta/curves/ files give; `collect` finds each project's curve file; `summarise`
reads the best point as spaCy's patience does (the earliest of equal scores)."""

import json
import sys
from pathlib import Path

import pytest
from _cli import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "project" / "scripts" / "curves.py"
sys.path.insert(0, str(SCRIPT.parent))

import curves  # noqa: E402


def _run(*args):
    return script(SCRIPT, *args)


def _point(step, clean, noisy, cpu):
    return {
        "step": step,
        "passes": step / 100,
        "cpu_seconds": cpu,
        "score": clean,
        "scores": {"dev": {"ents_f": clean}, "dev_noise0.5": {"ents_f": noisy}},
    }


def _write(path: Path, points) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p) + "\n" for p in points), encoding="utf8")


def test_the_results_page_is_the_committed_curves():
    r = _run("render", "--check")
    assert r.returncode == 0, r.stdout + r.stderr


def test_summarise_takes_the_earliest_best_and_says_whether_the_curve_levelled_off():
    wnut = next(c for c in curves.CURVES if c.task == "wnut17" and c.role == "entangle")
    points = [
        _point(0, 0.0, 0.0, 1),
        _point(200, 0.5, 0.4, 60),
        _point(400, 0.55, 0.45, 120),
        _point(600, 0.55, 0.4, 180),
    ]
    points += [_point(800, 0.54, 0.44, 240), _point(1000, 0.53, 0.44, 300)]
    s = curves.summarise(wnut, points)
    assert (s.best_step, s.best, s.noisy_at_best, s.passes_at_best) == (400, 0.55, 0.45, 4.0)
    assert s.cpu_minutes_at_best == pytest.approx(2.0) and s.cpu_minutes_total == pytest.approx(5.0)
    assert s.levelled  # 400 <= 0.8 * 1000
    assert not curves.summarise(wnut, points[:3]).levelled  # the best is the last point: still rising
    with pytest.raises(ValueError, match="no points"):
        curves.summarise(wnut, [])


def test_the_budget_is_the_best_step_on_the_scoring_grid():
    """A loop resumed from a saved state scores one step past the grid (2,001): the seeds of
    that budget are run from scratch, to 2,000."""
    wnut = next(c for c in curves.CURVES if c.task == "wnut17" and c.role == "entangle")
    points = [_point(0, 0.0, 0.0, 1), _point(1800, 0.5, 0.4, 60), _point(2001, 0.56, 0.45, 70)]
    points.append(_point(2601, 0.54, 0.4, 90))
    assert curves.summarise(wnut, points).budget == 2000
    assert curves.summarise(wnut, points[:2]).budget == 1800
    assert curves.summarise(wnut, points[:1]).budget == 100  # never a budget of no steps


def test_collect_copies_each_projects_curve_and_render_writes_the_table(tmp_path):
    root = tmp_path / "project"
    _write(
        root / "metrics" / "curves" / "entangle-aug_seed0.jsonl", [_point(0, 0.1, 0.05, 5), _point(200, 0.5, 0.4, 65)]
    )
    _write(root / "masakhaner" / "metrics" / "curves" / "swa" / "baseline_seed0.jsonl", [_point(0, 0.2, 0.1, 3)])
    meta = tmp_path / "meta"
    r = _run("collect", "--root", root, "--meta", meta)
    assert r.returncode == 0, r.stderr
    assert sorted(str(p.relative_to(meta)) for p in meta.rglob("*.jsonl")) == [
        "masakhaner-swa/baseline_seed0.jsonl",
        "wnut17/entangle-aug_seed0.jsonl",
    ]
    page = tmp_path / "curves.md"
    page.write_text(
        "<!-- curves:start -->\n<!-- curves:end -->\n<!-- budget:start -->\n<!-- budget:end -->\n"
        "<!-- verdict:start -->\n<!-- verdict:end -->\n",
        encoding="utf8",
    )
    tasks, readme = tmp_path / "tasks.md", tmp_path / "README.md"
    for other in (tasks, readme):
        other.write_text("<!-- parity-at-budget:start -->\n<!-- parity-at-budget:end -->\n", encoding="utf8")
    alone = ("--budget", tmp_path / "no-budget", "--selection", tmp_path / "no-selection.json")
    alone += ("--tasks-page", tasks, "--readme", readme, "--parity", tmp_path / "no-parity.json")
    assert _run("render", "--meta", meta, "--page", page, *alone).returncode == 0
    text = page.read_text(encoding="utf8")
    assert "| WNUT-17 NER | entangle (`entangle-aug`) | dev F1 | 50.0 | 40.0 | 200 | 2.0 | 1 | 200 | 1 | no |" in text
    assert "| MasakhaNER swa | baseline (`baseline`) |" in text
    assert "No seeds at a chosen budget" in text
    assert "No task has the seeds of both models at their budgets yet." in readme.read_text(encoding="utf8")
    assert _run("render", "--meta", meta, "--page", page, "--check", *alone).returncode == 0
    _write(meta / "wnut17" / "entangle-aug_seed0.jsonl", [_point(0, 0.3, 0.2, 5)])
    assert _run("render", "--meta", meta, "--page", page, "--check", *alone).returncode != 0


def test_budget_rows_are_the_seeds_best_points_and_the_selection_file(tmp_path):
    """A seed's score is its best clean evaluation (model-best) and the noisy score there;
    rows give the mean and the sample standard deviation over seeds. The selection file adds
    its rows of the models with a WNUT-17 curve at the CPU preset's budget, not those it read
    from meta/budget/ (which are read from there)."""
    budget = tmp_path / "budget"
    _write(budget / "wnut17" / "baseline_1600_seed0.jsonl", [_point(200, 0.50, 0.30, 9), _point(400, 0.54, 0.32, 19)])
    _write(budget / "wnut17" / "baseline_1600_seed1.jsonl", [_point(200, 0.56, 0.36, 9), _point(400, 0.52, 0.30, 19)])
    _write(budget / "wnut17" / "baseline_1600_seed2.jsonl", [_point(200, 0.58, 0.34, 9)])
    _write(budget / "wnut17" / "notes.jsonl", [_point(200, 0.1, 0.1, 1)])  # not a seed run: ignored
    selection = tmp_path / "selection.json"
    entry = {"seeds": [0, 1, 2], "dev_f1": [0.5, 0.01], "dev_f1_noise0.5": [0.4, 0.02], "drop_noise0.5": [0.1, 0.0]}
    candidates = [
        {"name": "entangle-aug", **entry},
        {"name": "entangle-cons", **entry},  # no curve: not a row of its own
        {"name": "both-mild", "steps": 2000, "budget": "meta/budget/wnut17", **entry},  # read from there
    ]
    references = {"reference": {"name": "baseline", "steps": 1600, "budget": "b", **entry}}
    references["other_references"] = [{"name": "baseline", "steps": 600, **entry}]
    selection.write_text(json.dumps({"chosen": "both-mild", "candidates": candidates, **references}), encoding="utf8")
    rows = curves.budget_rows(budget, selection)
    assert [(r.variant, r.steps, r.source) for r in rows] == [
        ("baseline", 600, "meta/selection.json"),
        ("entangle-aug", 600, "meta/selection.json"),
        ("baseline", 1600, "meta/budget/wnut17/"),
    ]
    seeds = rows[2]
    assert seeds.seeds == (0, 1, 2)
    assert seeds.clean == pytest.approx((0.56, 0.02))  # 0.54, 0.56, 0.58
    assert seeds.noisy == pytest.approx((0.34, 0.02))  # 0.32, 0.36, 0.34: each at its best clean point
    table = curves.render_budget(rows)
    assert (
        "| wnut17 | `baseline` | 1600 | 0, 1, 2 | 56.0 ± 2.0 | 34.0 ± 2.0 | 22.0 ± 2.0 | meta/budget/wnut17/ |" in table
    )
    assert (
        "| wnut17 | `baseline` | 600 | 0, 1, 2 | 50.0 ± 1.0 | 40.0 ± 2.0 | 10.0 ± 0.0 | meta/selection.json |" in table
    )
    # one seed: its figures, with no spread to show
    one = curves.BudgetRow("tweebank", "baseline", 2200, (0,), (0.932, 0.0), (0.828, 0.0), (0.104, 0.0), "x")
    assert one.cells()[3:7] == ["0", "93.2", "82.8", "10.4"]


def test_every_curve_is_a_variant_of_its_project_and_the_recipe_is_the_curve_default():
    """A curve names a variant its project trains (variants.yml), and each project's `curve`
    command trains the task's recipe (the first entangle curve of the task) unless told."""
    import srsly

    for curve in curves.CURVES:
        project = ROOT / "project" / curve.folder
        assert curve.variant in srsly.read_yaml(project / "variants.yml")["variants"], curve
        recipe = next(c for c in curves.CURVES if c.task == curve.task and c.role == "entangle")
        assert srsly.read_yaml(project / "project.yml")["vars"]["curve_variant"] == recipe.variant, curve.task


def test_collect_budget_copies_a_task_projects_seeds_and_refuses_an_unknown_task(tmp_path):
    """`collect-budget VARIANT STEPS --task T --root P [--folder F]` copies P/F's seed files of
    that variant and budget (only those) into meta/budget/T/; an unknown task or no such run
    is a clear error, nothing copied."""
    runs = tmp_path / "masakhaner" / "metrics" / "budget" / "swa"
    for seed in (0, 1):
        _write(runs / f"baseline_300_seed{seed}.jsonl", [_point(100, 0.5, 0.3, 4)])
    _write(runs / "baseline_600_seed0.jsonl", [_point(100, 0.5, 0.3, 4)])  # another budget
    budget = tmp_path / "meta-budget"
    args = ["collect-budget", "baseline", "300", "--root", tmp_path / "masakhaner", "--budget", budget]
    r = _run(*args, "--task", "masakhaner-swa", "--folder", "metrics/budget/swa")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (budget / "masakhaner-swa").iterdir()) == [
        "baseline_300_seed0.jsonl",
        "baseline_300_seed1.jsonl",
    ]
    r = _run(*args, "--task", "masakhaner", "--folder", "metrics/budget/swa")
    assert r.returncode != 0 and "unknown task 'masakhaner'" in r.stdout + r.stderr
    r = _run(*args, "--task", "masakhaner-swa")  # the default folder holds none
    assert r.returncode != 0 and "no runs of baseline at 300 steps" in r.stdout + r.stderr
    assert not (budget / "masakhaner").exists()


def _recipe_and_baseline(task):
    """The task's recipe (its first entangle curve) and its baseline, by role."""
    found = [c for c in curves.CURVES if c.task == task]
    return {
        "entangle": next(c for c in found if c.role == "entangle"),
        "baseline": next(c for c in found if c.role == "baseline"),
    }


def test_the_verdict_compares_each_model_at_its_own_budget_against_the_tasks_bar():
    """The recipe's and the baseline's seeds at the step of each one's best curve point; the
    bar is WNUT-17's (+2.0 clean, <= 0.5x the drop) or the other tasks' (>= 0, <= 0.6x);
    a model whose seeds at its budget are missing is "not yet", and fewer than 3 seeds is said."""
    wnut, tweets = _recipe_and_baseline("wnut17"), _recipe_and_baseline("tweeteval")
    recipe = wnut["entangle"].variant
    summaries = [
        curves.summarise(
            wnut["entangle"], [_point(200, 0.4, 0.3, 9), _point(600, 0.52, 0.45, 30), _point(1200, 0.5, 0.4, 60)]
        ),
        curves.summarise(
            wnut["baseline"], [_point(800, 0.5, 0.3, 9), _point(1600, 0.55, 0.3, 30), _point(2400, 0.5, 0.3, 60)]
        ),
        curves.summarise(tweets["entangle"], [_point(600, 0.7, 0.6, 9)]),  # still rising: said so
        curves.summarise(tweets["baseline"], [_point(400, 0.7, 0.6, 9)]),
    ]

    def row(task, variant, steps, clean, noisy, seeds=(0, 1, 2)):
        return curves.BudgetRow(task, variant, steps, seeds, (clean, 0.0), (noisy, 0.0), (clean - noisy, 0.0), "x")

    rows = [
        row("wnut17", recipe, 600, 0.56, 0.46),  # drop 10
        row("wnut17", recipe, 600, 0.10, 0.00, seeds=(1,)),  # fewer seeds: not picked
        row("wnut17", "baseline", 600, 0.60, 0.40),  # not its budget: not picked
        row("wnut17", "baseline", 1600, 0.53, 0.33),  # drop 20
        row("tweeteval", "baseline", 400, 0.70, 0.60),
    ]
    lines = curves.verdict_lines(summaries, rows)
    (wnut_line,) = [line for line in lines if line.startswith("| WNUT-17")]
    assert f"| `{recipe}` 600, 0, 1, 2 | `baseline` 1600, 0, 1, 2 | +3.0 | +13.0 | 0.50x |" in wnut_line
    assert wnut_line.endswith("| +2.0, <= 0.5x | yes |")
    (tweet_line,) = [line for line in lines if line.startswith("| TweetEval")]
    assert "`mean-both-mild` 600 (its curve has not levelled off), not run" in tweet_line
    assert tweet_line.endswith("| not yet |")
    rows[0] = row("wnut17", recipe, 600, 0.54, 0.40, seeds=(0, 1))  # +1.0 clean, drop 14
    (wnut_line,) = [line for line in curves.verdict_lines(summaries, rows) if line.startswith("| WNUT-17")]
    assert wnut_line.endswith("| no: clean, drop (fewer than 3 seeds) |")


def test_the_parity_table_puts_each_models_seeds_at_its_budget_beside_the_papers_figures():
    """Two lines per task whose two models' seeds at their budgets are in (clean, noise 0.5):
    mean ± sample std and the seed count, the difference of the means, the paper's figures
    where it reports the task; a task missing a model's seeds is left out."""
    wnut, tweets = _recipe_and_baseline("wnut17"), _recipe_and_baseline("tweeteval")
    recipe = wnut["entangle"].variant
    summaries = [
        curves.summarise(wnut["entangle"], [_point(200, 0.4, 0.3, 9), _point(600, 0.52, 0.45, 30)]),
        curves.summarise(wnut["baseline"], [_point(1600, 0.55, 0.3, 30), _point(2400, 0.5, 0.3, 60)]),
        curves.summarise(tweets["entangle"], [_point(600, 0.7, 0.6, 9)]),
        curves.summarise(tweets["baseline"], [_point(400, 0.7, 0.6, 9)]),
    ]
    rows = [
        curves.BudgetRow("wnut17", recipe, 600, (0, 1, 2), (0.56, 0.01), (0.46, 0.02), (0.1, 0.0), "x"),
        curves.BudgetRow("wnut17", "baseline", 1600, (0, 1), (0.53, 0.004), (0.33, 0.0), (0.2, 0.0), "x"),
        curves.BudgetRow("tweeteval", "baseline", 400, (0, 1, 2), (0.7, 0.0), (0.6, 0.0), (0.1, 0.0), "x"),
    ]
    paper = {"wnut17": {"entangle": 57.97, "baseline": 56.38}}
    lines = curves.parity_lines(summaries, rows, paper)
    assert lines[2:] == [
        f"| WNUT-17 NER | dev F1 | 57.97 | 56.38 | `{recipe}` 600 | 56.0 ± 1.0 (3) | `baseline` 1,600 "
        "| 53.0 ± 0.4 (2) | +3.0 |",
        f"| WNUT-17 NER | dev F1, noise 0.5 | – | – | `{recipe}` 600 | 46.0 ± 2.0 (3) | `baseline` 1,600 "
        "| 33.0 ± 0.0 (2) | +13.0 |",
    ]
    assert curves.parity_lines(summaries[2:], rows, paper) == [
        "No task has the seeds of both models at their budgets yet."
    ]


def test_an_earlier_run_a_longer_one_replaced_is_in_the_table_not_collected_nor_paired(tmp_path):
    earlier = [c for c in curves.CURVES if c.earlier]
    assert {(c.task, c.role) for c in earlier} == {("masakhaner-swa", "entangle"), ("masakhaner-swa", "baseline")}
    for curve in earlier:  # committed, beside the run that replaced it
        assert curves.meta_file(curves.META, curve).exists(), curve
    root, meta = tmp_path / "project", tmp_path / "meta"
    folder = root / "masakhaner" / "metrics" / "curves" / "swa"
    _write(folder / "baseline_seed0_2000.jsonl", [_point(0, 0.2, 0.1, 3)])  # not the project's file: left
    _write(folder / "baseline_seed0.jsonl", [_point(0, 0.3, 0.1, 3), _point(200, 0.6, 0.4, 9)])
    assert _run("collect", "--root", root, "--meta", meta).returncode == 0
    assert [p.name for p in meta.rglob("*.jsonl")] == ["baseline_seed0.jsonl"]
    _write(meta / "masakhaner-swa" / "baseline_seed0_2000.jsonl", [_point(0, 0.2, 0.1, 3), _point(200, 0.7, 0.5, 9)])
    _write(meta / "masakhaner-swa" / "both-mild_seed0_2000.jsonl", [_point(200, 0.8, 0.7, 9)])
    rows = curves.summaries(meta)
    table = curves.render_table(rows)
    assert "| MasakhaNER swa | baseline (`baseline`) |" in table
    assert "| MasakhaNER swa | baseline (`baseline`, earlier: 2,000-step schedule) | dev F1 | 70.0 |" in table
    # the earlier entangle curve does not pair with the new baseline's: no verdict row for the task
    assert all(p.task != "masakhaner-swa" for p in curves.pairs(rows, []))
