"""research/benchmarks/scored_ner.py end to end on a tiny trained pipeline (issue 32): the F1 of the
greedy ner and of each beam, the score bands, words/s side by side and the ner alone."""

import json

import pytest
import scored_ner  # research/benchmarks/scored_ner.py (setup.cfg: pytest pythonpath)
from _pipelines import TEXTS, save_trained_ner
from spacy.tokens import DocBin
from spacy.training import Example


@pytest.mark.issue(32)
def test_scored_ner_benchmark_end_to_end(tmp_path, canine_dir, bert_dir, capsys):
    nlp = save_trained_ner(canine_dir, bert_dir, tmp_path / "model")
    refs = [Example.from_dict(nlp.make_doc(text), {"entities": ents}).reference for text, ents, _ in TEXTS]
    DocBin(docs=refs).to_disk(tmp_path / "dev.spacy")
    out = tmp_path / "scored.json"
    args = ["--data", tmp_path / "dev.spacy", "--noisy", tmp_path / "dev.spacy", "--beam-widths", 2, 4]
    args += ["--limit", 4, "--repeats", 1, "--batch-size", 2, "--output", out]
    results = scored_ner.main([str(a) for a in [tmp_path / "model", *args]])
    printed = capsys.readouterr().out
    for title in ("entity F1", "score band", "words/s", "'ner' component alone"):
        assert title in printed
    assert json.loads(out.read_text(encoding="utf8")) == results
    assert set(results["scores"]["f1"]) == {"greedy", "beam2", "beam4"}
    bands = results["scores"]["score_bands"]["beam4"]["dev.spacy"]
    assert sum(b["entities"] for b in bands) > 0
    assert results["speed"]["pipelines"]["greedy"]["vs_greedy"] == 1.0
    assert set(results["component"]) == {"greedy", "beam2", "beam4"}


def test_scored_ner_refuses_a_beam_of_one(tmp_path, capsys):
    (tmp_path / "dev.spacy").write_bytes(b"")
    with pytest.raises(SystemExit):
        scored_ner.parse_args([str(tmp_path), "--data", str(tmp_path / "dev.spacy"), "--beam-widths", "1"])
    assert "--beam-widths: each must be >= 2" in capsys.readouterr().err
