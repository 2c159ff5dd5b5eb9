"""project/scripts/paper_parity.py: the paper-parity table of docs/results/tasks.md is what the committed
meta/paper_parity.json gives, and `collect` reads every seed of every row from the metrics
layout that the projects' `seeds-*` commands write (real files in a temporary tree)."""

import json
from pathlib import Path

import srsly
from _cli import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "project" / "scripts" / "paper_parity.py"


def _run(*args, cwd=None):
    return script(SCRIPT, *args, cwd=cwd)


def _write(path: Path, scores: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores), encoding="utf8")


def test_results_page_table_is_the_committed_record():
    r = _run("render", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    parity = srsly.read_json(ROOT / "project" / "meta" / "paper_parity.json")
    page = (ROOT / "docs" / "results" / "tasks.md").read_text(encoding="utf8")
    # every seed figure of the record is a real 0..1 score, and the WNUT-17 row is there
    for row in parity["ours"].values():
        for side in ("ours", "baseline"):
            assert all(0.0 <= v <= 1.0 for v in row[side]["seeds"].values())
    assert "| WNUT-17 NER | dev F1 | 57.97 | 56.38 |" in page


def test_collect_and_render(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    srsly.write_yaml(root / "project.yml", {"vars": {"ship_variant": "entangle-aug"}})
    for seed, (ours, noisy, base) in enumerate([(0.55, 0.45, 0.53), (0.53, 0.43, 0.54), (0.52, 0.42, 0.55)]):
        _write(root / "metrics" / "entangle-aug" / f"seed{seed}_dev.json", {"ents_f": ours})
        _write(root / "metrics" / "entangle-aug" / f"seed{seed}_dev_noise0.5.json", {"ents_f": noisy})
        _write(root / "metrics" / "baseline" / f"seed{seed}_dev.json", {"ents_f": base})
    _write(root / "masakhaner" / "metrics" / "shipped" / "swa" / "seed0_dev.json", {"ents_f": 0.8})
    _write(root / "masakhaner" / "metrics" / "baseline" / "swa" / "seed0_dev.json", {"ents_f": 0.7})
    _write(root / "tweebank" / "metrics" / "shipped" / "seed0_dev.json", {"tag_acc": None})  # no figure
    # the shipped recipe less the augmenter, beside the shipped recipe and the baseline
    for variant, macro_f in [("shipped", 0.70), ("shipped-noaug", 0.74), ("baseline", 0.71)]:
        _write(
            root / "tweeteval" / "metrics" / variant / "seed0_dev.json", {"cats_macro_f": macro_f, "cats_accuracy": 0.8}
        )
    parity = tmp_path / "parity.json"
    srsly.write_json(parity, {"paper": {"wnut17": {"entangle": 57.97, "baseline": 56.38}}})
    r = _run("collect", "--root", root, "--parity", parity)
    assert r.returncode == 0, r.stderr
    record = srsly.read_json(parity)
    assert record["paper"]["wnut17"]["entangle"] == 57.97  # the hand-entered figures are kept
    assert record["ours"]["wnut17"]["ours"] == {"variant": "entangle-aug", "seeds": {"0": 0.55, "1": 0.53, "2": 0.52}}
    assert record["ours"]["wnut17-noise0.5"]["baseline"]["seeds"] == {}
    assert "tweebank" in record["not_run"] and "masakhaner-hau" in record["not_run"]
    readme = tmp_path / "README.md"
    readme.write_text(
        "intro\n<!-- paper-parity:start -->\nold\n<!-- paper-parity:end -->\nmiddle\n"
        "<!-- paper-parity-noaug:start -->\nold\n<!-- paper-parity-noaug:end -->\nrest\n",
        encoding="utf8",
    )
    assert _run("render", "--parity", parity, "--page", readme, "--check").returncode != 0
    assert _run("render", "--parity", parity, "--page", readme).returncode == 0
    text = readme.read_text(encoding="utf8")
    assert text.startswith("intro\n") and text.endswith("rest\n") and "old" not in text
    # mean ± sample std over the seeds, the seed count, and the difference of the means
    assert "| WNUT-17 NER | dev F1 | 57.97 | 56.38 | 53.3 ± 1.5 (3) | 54.0 ± 1.0 (3) | -0.7 |" in text
    assert "| MasakhaNER (swa) | dev F1 | – | – | 80.0 (1) | 70.0 (1) | +10.0 |" in text
    assert "Tweebank" not in text and "(hau)" not in text  # nothing ran: no line
    assert "| TweetEval emotion | val macro-F1 | – | – | 70.0 (1) | 71.0 (1) | -1.0 |" in text
    noaug = text.split("paper-parity-noaug:start")[1]
    assert "| TweetEval emotion | val macro-F1 | 70.0 (1) | 74.0 (1) | 71.0 (1) | +3.0 |" in noaug
    assert "| TweetEval emotion | val accuracy | 80.0 (1) | 80.0 (1) | 80.0 (1) | +0.0 |" in noaug
    assert "Tweebank" not in noaug and "middle" in text
    assert _run("render", "--parity", parity, "--page", readme, "--check").returncode == 0
    # --readme, the option's old name, still names the page
    assert _run("render", "--parity", parity, "--readme", readme, "--check").returncode == 0


def test_errors_are_clear(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    srsly.write_yaml(root / "project.yml", {"vars": {"ship_variant": "entangle-aug"}})
    r = _run("collect", "--root", root, "--parity", tmp_path / "p.json")
    assert r.returncode != 0 and "no seed metrics" in r.stderr
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf8")
    srsly.write_json(tmp_path / "p.json", {"ours": {}})
    r = _run("render", "--parity", tmp_path / "p.json", "--readme", readme)
    assert r.returncode != 0 and "paper-parity:start" in r.stderr
    assert readme.read_text(encoding="utf8") == "no markers\n"
