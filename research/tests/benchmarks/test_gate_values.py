"""research/benchmarks/gate_values.py on a tiny gated pipeline: the gate's subword weight on clean
tokens, and on an attacked copy's attacked and untouched tokens."""

import gate_values  # research/benchmarks/gate_values.py (setup.cfg: pytest pythonpath)
import pytest
import spacy
from _pipelines import build, examples, listener, ner_model, train
from spacy.tokens import DocBin

from spacy_entangle.noise import perturb_docs


def test_prints_the_gate_on_clean_and_attacked_tokens(canine_dir, bert_dir, tmp_path, capsys):
    nlp = build(canine_dir, bert_dir, components=(), store_output=False)
    tok2vec = {**listener("both"), "@architectures": "spacy-entangle.EntangleListener.v2", "combine": "gate"}
    nlp.add_pipe("ner", config={"model": {**ner_model("both"), "tok2vec": tok2vec}})
    train(nlp, n_steps=5)
    nlp.to_disk(tmp_path / "pipe")
    clean = [eg.reference for eg in examples(nlp)]
    DocBin(docs=clean).to_disk(tmp_path / "clean.spacy")
    DocBin(docs=list(perturb_docs(clean, rate=1.0, seed=0))).to_disk(tmp_path / "noisy.spacy")
    result = gate_values.main([str(tmp_path / "pipe"), str(tmp_path / "clean.spacy"), str(tmp_path / "noisy.spacy")])
    (n_clean, *_), (n_kept, *_), (n_attacked, *_), (n_same, *_) = result.values()
    assert n_clean == sum(len(doc) for doc in clean) == n_kept + n_attacked and n_attacked == n_same > 0
    assert all(0.0 < mean < 1.0 and 0.0 <= spread < 0.5 for _, mean, spread in result.values())
    assert "| attacked copy, attacked tokens |" in capsys.readouterr().out


def test_refuses_a_pipeline_without_a_gate(canine_dir, bert_dir, tmp_path):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", store_output=False)
    train(nlp, n_steps=1)
    nlp.to_disk(tmp_path / "pipe")
    with pytest.raises(SystemExit, match="no component listens through a side gate"):
        gate_values.gated_tok2vec(spacy.load(tmp_path / "pipe"))
