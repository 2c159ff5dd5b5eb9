"""project/scripts/variants.py select-table: the table of the shipped choice in docs/results/wnut17.md is what
the committed meta/selection.json gives, and the rendering of a selection that `select` wrote
(real metrics files in a temporary tree): mean ± sample std over the seeds, the choice in bold
as en_entangle_wnut, every reference's drop ratio, the earlier round's rows marked."""

import json
import shutil
from pathlib import Path

import srsly
from _cli import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "project" / "scripts" / "variants.py"


def _run(*args):
    return script(SCRIPT, *args)


def _seeds(metrics: Path, name: str, pairs) -> None:
    (metrics / name).mkdir(parents=True, exist_ok=True)
    for seed, (clean, noisy) in enumerate(pairs):
        for suffix, f in (("", clean), ("_noise0.5", noisy)):
            (metrics / name / f"seed{seed}_dev{suffix}.json").write_text(json.dumps({"ents_f": f}), encoding="utf8")


def test_results_page_table_is_the_committed_record():
    r = _run("select-table", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    selection = srsly.read_json(ROOT / "project" / "meta" / "selection.json")
    ship = srsly.read_yaml(ROOT / "project" / "project.yml")["vars"]["ship_variant"]
    page = (ROOT / "docs" / "results" / "wnut17.md").read_text(encoding="utf8")
    block = page[page.index("<!-- selection:start -->") : page.index("<!-- selection:end -->")]
    # the bold row is the committed choice, the one project.yml ships; every row is there
    assert selection["chosen"] == ship and f"| **`{ship}` = `en_entangle_wnut`** |" in block
    names = [row["name"] for row in selection["candidates"] + [selection["reference"]]]
    names += [row["name"] for row in selection.get("other_references", [])]
    assert "baseline-aug" in names and all(f"| `{name}`" in block or f"**`{name}`" in block for name in names)


def test_select_records_references_and_table_renders(tmp_path):
    metrics = tmp_path / "metrics"
    _seeds(metrics, "entangle-aug", [(0.50, 0.40), (0.52, 0.41), (0.54, 0.45)])  # 52.0 / 42.0: 47.0
    _seeds(metrics, "entangle-both", [(0.55, 0.30)] * 3)  # 42.5
    _seeds(metrics, "baseline", [(0.53, 0.35), (0.54, 0.34), (0.52, 0.36)])  # drop 18.0 ± 2.0
    _seeds(metrics, "baseline-aug", [(0.50, 0.36)] * 3)  # drop 14.0
    first = tmp_path / "first.json"
    common = ["--char-encoder", "grown", "--reference", "baseline", "--reference", "baseline-aug"]
    r = _run("select", "entangle-aug", "entangle-both", "--metrics-dir", metrics, *common, "--output", first)
    assert r.returncode == 0, r.stdout + r.stderr
    record = srsly.read_json(first)
    assert record["reference"]["name"] == "baseline" and record["reference"]["drop_noise0.5"] == [0.18, 0.02]
    assert [row["name"] for row in record["other_references"]] == ["baseline-aug"]
    # the next round: entangle-both and baseline-aug, not measured again, come from --prior
    for name in ("entangle-both", "baseline-aug"):
        shutil.rmtree(metrics / name)
    out = tmp_path / "selection.json"
    r = _run("select", "entangle-aug", "--prior", first, "--metrics-dir", metrics, *common, "--output", out)
    assert r.returncode == 0, r.stdout + r.stderr
    record = srsly.read_json(out)
    assert record["other_references"][0]["from"] == str(first) and record["chosen"] == "entangle-aug"
    assert "baseline-aug" in r.stdout and f"from {first}" in r.stdout

    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- selection:start -->\nOLD TABLE\n<!-- selection:end -->\nrest\n", encoding="utf8")
    assert _run("select-table", "--selection", out, "--page", readme, "--check").returncode != 0
    r = _run("select-table", "--selection", out, "--page", readme)
    assert r.returncode == 0, r.stdout + r.stderr
    text = readme.read_text(encoding="utf8")
    assert text.startswith("intro\n") and text.endswith("rest\n") and "OLD TABLE" not in text
    lines = text.splitlines()
    assert lines[3] == (
        "| model | recipe | seeds | dev F1 | F1 at noise 0.5 | drop at 0.5 | drop / baseline's | "
        "drop / baseline-aug's | select score |"
    )
    # best score first, the choice in bold and named; mean ± sample std over the seeds
    assert lines[5] == (
        "| **`entangle-aug` = `en_entangle_wnut`** | **both sides, grown char encoder + augmenter** | **3** | "
        "**52.0 ± 2.0** | **42.0 ± 2.6** | **10.0 ± 1.0** | **0.56** | **0.71** | **47.0** |"
    )
    assert lines[6] == (
        "| `entangle-both` (earlier round) | both sides, grown char encoder | 3 | 55.0 ± 0.0 | 30.0 ± 0.0 | "
        "25.0 ± 0.0 | 1.39 | 1.79 | 42.5 |"
    )
    assert lines[7] == (
        "| `baseline` (reference) | spacy-transformers | 3 | 53.0 ± 1.0 | 35.0 ± 1.0 | 18.0 ± 2.0 | 1.00 | 1.29 | 44.0 |"
    )
    assert lines[8].startswith("| `baseline-aug` (reference, earlier round) | spacy-transformers + augmenter | 3 |")
    assert f"`{first}` of that round" in text
    assert _run("select-table", "--selection", out, "--page", readme, "--check").returncode == 0
    # --readme, the option's old name, still names the page
    assert _run("select-table", "--selection", out, "--readme", readme, "--check").returncode == 0
    # a recorded figure is rounded half up from its decimals (an earlier round's 4: 0.0055 is 0.6)
    assert record["candidates"][1]["name"] == "entangle-both"
    record["candidates"][1]["dev_f1"] = [0.5349, 0.0055]
    srsly.write_json(out, record)
    assert _run("select-table", "--selection", out, "--readme", readme).returncode == 0
    assert "| 53.5 ± 0.6 |" in readme.read_text(encoding="utf8")


def test_select_table_errors_are_clear(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf8")
    selection = ROOT / "project" / "meta" / "selection.json"
    r = _run("select-table", "--selection", selection, "--readme", readme)
    assert r.returncode != 0 and "selection:start" in r.stderr
    assert readme.read_text(encoding="utf8") == "no markers\n"
    r = _run("select-table", "--selection", tmp_path / "none.json", "--readme", readme)
    assert r.returncode != 0 and "none.json" in r.stderr


def test_recipe_cell_shows_a_registered_setting_by_its_arguments():
    from variants_report import _recipe_cell  # project/scripts (setup.cfg: pytest pythonpath)

    row = {"side": "both", "char_encoder": "grown", "settings": {}}
    row["settings"]["components.entangle.model.backbone_lr_scale"] = "0.667"
    row["settings"]["components.entangle.consistency"] = json.dumps(
        {"@misc": "spacy-entangle.noise_consistency.v1", "weight": 3.0, "rate": 0.5}
    )
    assert _recipe_cell(row) == (
        "both sides, grown char encoder (backbone_lr_scale 0.667, consistency: weight 3.0, rate 0.5)"
    )
    gated = {"side": "both", "char_encoder": "grown", "augment": True, "settings": {}}
    gated["settings"]["components.ner.model.tok2vec.@architectures"] = "spacy-entangle.EntangleListener.v2"
    gated["settings"]["components.ner.model.tok2vec.combine"] = "gate"
    assert _recipe_cell(gated) == "both sides, grown char encoder + augmenter (EntangleListener.v2, combine gate)"


def _budget_seeds(budget: Path, name: str, steps: int, curves) -> None:
    """Curve-logger files of NAME trained to STEPS, one per seed: [(step, clean, noisy), ...]."""
    budget.mkdir(parents=True, exist_ok=True)
    for seed, points in enumerate(curves):
        lines = [
            json.dumps({"step": step, "scores": {"dev": {"ents_f": clean}, "dev_noise0.5": {"ents_f": noisy}}})
            for step, clean, noisy in points
        ]
        (budget / f"{name}_{steps}_seed{seed}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf8")


def test_select_takes_a_models_seeds_at_its_own_budget_beside_an_earlier_round(tmp_path):
    """VARIANT@STEPS competes with its seeds in --budget-dir, each at its best dev evaluation
    (the noisy score at that evaluation, not the best noisy one); the earlier round's rows get
    --prior-steps; the table has a steps column and bolds the chosen budget's row only."""
    metrics, budget = tmp_path / "metrics", tmp_path / "budget"
    _seeds(metrics, "entangle-aug", [(0.50, 0.40), (0.52, 0.41), (0.54, 0.45)])  # 47.0
    _seeds(metrics, "baseline", [(0.53, 0.35), (0.54, 0.34), (0.52, 0.36)])
    first = tmp_path / "first.json"
    common = ["--char-encoder", "grown", "--reference", "baseline"]
    r = _run("select", "entangle-aug", "--metrics-dir", metrics, *common, "--output", first)
    assert r.returncode == 0, r.stdout + r.stderr
    _budget_seeds(
        budget,
        "both-mild",
        2000,
        [
            [(200, 0.40, 0.50), (1800, 0.56, 0.44), (2000, 0.55, 0.46)],  # best 56 / 44
            [(1000, 0.56, 0.46), (2000, 0.56, 0.40)],  # equal best: the earlier, 56 / 46
            [(2000, 0.57, 0.45)],
        ],
    )
    _budget_seeds(budget, "baseline", 1600, [[(1600, 0.55, 0.33)]] * 3)
    _budget_seeds(budget, "entangle-aug", 1200, [[(1200, 0.50, 0.40)]] * 2)  # 2 seeds: too few
    out = tmp_path / "selection.json"
    args = ["--prior", first, "--metrics-dir", tmp_path / "none", "--budget-dir", budget, "--prior-steps", "600"]
    args += ["--char-encoder", "grown", "--reference", "baseline@1600", "--reference", "baseline", "--output", out]
    r = _run("select", "both-mild@2000", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    record = srsly.read_json(out)
    assert (record["chosen"], record["steps"]) == ("both-mild", 2000)
    new = record["candidates"][-1]
    assert (new["name"], new["steps"], new["budget"], new["seeds"]) == ("both-mild", 2000, str(budget), [0, 1, 2])
    assert new["dev_f1"][0] == 0.563333 and new["dev_f1_noise0.5"][0] == 0.45
    assert record["candidates"][0]["steps"] == 600 and record["candidates"][0]["from"] == str(first)
    assert (record["reference"]["name"], record["reference"]["steps"]) == ("baseline", 1600)
    assert record["other_references"][0]["steps"] == 600
    assert "both-mild@2000" in r.stdout and "baseline@1600" in r.stdout
    # a budget with fewer seeds than --min-seeds is refused, naming its files
    r = _run("select", "entangle-aug@1200", *args)
    assert r.returncode != 0 and "entangle-aug_1200_seedN.jsonl" in r.stdout + r.stderr
    page = tmp_path / "wnut17.md"
    page.write_text("<!-- selection:start -->\n<!-- selection:end -->\n", encoding="utf8")
    assert _run("select-table", "--selection", out, "--page", page).returncode == 0
    lines = page.read_text(encoding="utf8").splitlines()
    assert lines[2].startswith("| model | recipe | steps | seeds | dev F1 |")
    assert lines[4].startswith(
        "| **`both-mild` = `en_entangle_wnut`** | **both sides, grown char encoder + augmenter (level 0.25, rate 0.5)** "
        "| **2,000** | **3** |"
    )
    assert lines[5].startswith(
        "| `entangle-aug` (earlier round) | both sides, grown char encoder + augmenter | 600 | 3 |"
    )
    assert lines[6].startswith("| `baseline` (reference) | spacy-transformers | 1,600 | 3 | 55.0 ± 0.0 |")
