"""research/benchmarks/long_doc_f1.py on a tiny trained pipeline (issue 30): dev docs joined into long
docs with their entities, scored at each window overlap and with a second pipeline."""

import json

import pytest
import spacy
from _pipelines import TEXTS, save_trained_ner
from long_doc_f1 import joined_docs, main, parse_args  # research/benchmarks/ (setup.cfg: pytest pythonpath)
from spacy.tokens import DocBin
from spacy.training import Example


def _corpus(nlp, path):
    refs = [Example.from_dict(nlp.make_doc(text), {"entities": ents}).reference for text, ents, _ in TEXTS]
    DocBin(docs=refs).to_disk(path)
    return refs


def test_joined_docs_keep_every_entity_and_reach_the_size(tmp_path):
    nlp = spacy.blank("en")
    refs = _corpus(nlp, tmp_path / "dev.spacy")
    joined = joined_docs(spacy.blank("xx"), tmp_path / "dev.spacy", 40)
    assert sum(len(d.ents) for d in joined) == sum(len(d.ents) for d in refs)
    assert [e.text for d in joined for e in d.ents] == [e.text for d in refs for e in d.ents]
    assert all(len(d.text) >= 40 for d in joined[:-1])
    assert sum(len(d) for d in joined) == sum(len(d) for d in refs)


@pytest.mark.issue(30)
def test_long_doc_f1_scores_each_overlap_and_the_baseline(tmp_path, canine_dir, bert_dir, capsys):
    model = save_trained_ner(canine_dir, bert_dir, tmp_path / "model")
    _corpus(model, tmp_path / "dev.spacy")
    out = tmp_path / "f1.json"
    args = [tmp_path / "model", "--data", tmp_path / "dev.spacy", "--doc-chars", 100, "--overlaps", 0.5, 0]
    results = main([str(a) for a in [*args, "--baseline", tmp_path / "model", "--output", out]])
    assert "entity F1 on" in capsys.readouterr().out
    assert json.loads(out.read_text(encoding="utf8")) == results
    assert set(results["runs"]) == {"entangle, overlap 0.5", "entangle, overlap 0", "baseline"}
    assert all(0.0 <= run["f1"] <= 100.0 for run in results["runs"].values())

    # smaller windows than its own (the encoders' limits): each overlap at each size; the
    # 16-char windows cut the 100-char docs, so they must still score every token
    results = main([str(a) for a in [*args[:-2], "0.1", "--windows", "16:8"]])
    assert set(results["runs"]) == {
        "entangle, overlap 0.1, its own windows",
        "entangle, overlap 0.1, windows 16 chars / 8 pieces",
    }
    assert all(0.0 <= run["f1"] <= 100.0 for run in results["runs"].values())


def test_long_doc_f1_refuses_bad_settings(tmp_path, capsys):
    base = [str(tmp_path), "--data", str(tmp_path / "dev.spacy")]
    bad = (
        (["--overlaps", "1"], "in [0, 1)"),
        (["--doc-chars", "0"], ">= 1"),
        (["--windows", "256"], "CHARS:PIECES"),
        (["--windows", "256:x"], "CHARS:PIECES"),
        (["--windows", "0:64"], "two positive integers"),
    )
    for extra, message in bad:
        with pytest.raises(SystemExit):
            parse_args(base + extra)
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args([str(tmp_path), "--data", str(tmp_path / "dev.conll")])
    assert "a .spacy corpus" in capsys.readouterr().err
