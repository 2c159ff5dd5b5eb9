"""research/benchmarks/load_compare.py: load + first doc of pipelines side by side, fresh
processes, the code each one loads with set per pipeline."""

import argparse
import json
from pathlib import Path

import load_compare
import pytest
import spacy

REPO = Path(__file__).resolve().parents[3]


def test_pipelines_are_timed_side_by_side_each_with_its_code(tmp_path, capsys):
    spacy.blank("en").to_disk(tmp_path / "blank")
    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    (tmp_path / "src").mkdir()  # a PYTHONPATH entry first: the child still imports the plugin
    out = tmp_path / "load.json"
    rows = load_compare.main(
        [f"base={tmp_path / 'blank'}", f"ent={saved}@{tmp_path / 'src'}", "--repeats", "1", "--output", str(out)]
    )
    assert list(rows) == ["base", "ent"] and rows["base"]["ratio"] == 1.0
    assert rows["ent"]["best"] > 0 and len(rows["ent"]["all"]) == 1
    assert json.loads(out.read_text())["seconds"]["ent"]["best"] == rows["ent"]["best"]
    assert "ent" in capsys.readouterr().out


def test_a_pipeline_argument_needs_a_label_and_a_path():
    with pytest.raises(argparse.ArgumentTypeError, match="LABEL=PATH"):
        load_compare.parse_pipeline("just/a/path")
    assert load_compare.parse_pipeline("a=p@src") == ("a", "p", "src")
