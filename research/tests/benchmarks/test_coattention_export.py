"""research/benchmarks/coattention_export.py: onnx-int8 with traced co-attention graphs beside
torch.export's, in one process: both export, predict the same entities on a tiny pipeline,
report words/s and their ratio, score each corpus in fp32 and both; bad input is one error."""

import json
from pathlib import Path

import coattention_export  # research/benchmarks/ (setup.cfg: pytest pythonpath)
import pytest
from spacy.tokens import DocBin

REPO = Path(__file__).resolve().parents[3]
SAVED = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"


@pytest.mark.slow
def test_both_kinds_of_graph_side_by_side(tmp_path, paris_dev, capsys):
    pytest.importorskip("onnxruntime")
    out = tmp_path / "out.json"
    args = [
        str(SAVED),
        "--data",
        str(paris_dev),
        "--rounds",
        "2",
        "--corpora",
        str(paris_dev),
    ]
    result = coattention_export.main([*args, "--output", str(out)])
    printed = capsys.readouterr().out
    assert set(result["first"]) == set(result["words_per_second"]) == {"traced", "torch.export"}
    assert all(v > 0 for v in result["words_per_second"].values()) and result["traced_vs_torch_export"] > 0
    assert result["docs"] == 6 and 0 <= result["same_entities"] <= 6
    assert set(result["scores"]) == {"fp32", "traced", "torch.export"}
    assert "traced / torch.export" in printed and json.loads(out.read_text()) == result
    # the patch that makes the torch.export copy is undone
    import spacy_entangle.modeling.engines.onnx as engine
    from spacy_entangle.modeling.engines.traceable import traceable

    assert engine.traceable is traceable


def test_bad_arguments_are_one_error(tmp_path, capsys):
    DocBin().to_disk(tmp_path / "empty.spacy")
    with pytest.raises(SystemExit):
        coattention_export.main([str(SAVED), "--data", str(tmp_path / "empty.spacy")])
    assert "holds no docs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        coattention_export.main([str(SAVED), "--data", str(tmp_path / "empty.spacy"), "--rounds", "0"])
    assert "--rounds and --limit must be at least 1" in capsys.readouterr().err
