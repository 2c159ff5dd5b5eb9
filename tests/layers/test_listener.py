"""The listener (layers/listener.py): zeros only while initialize infers shapes, never after it
(a disabled upstream is an error), and the usual initialize / train / predict."""

import pytest
import spacy
from _pipelines import build, examples

from spacy_entangle.layers import EntangleListener

NO_OUTPUT = "No output from the upstream component 'entangle'"


@pytest.mark.issue(12)
def test_disabled_upstream_right_after_initialize_raises(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    nlp.initialize(lambda: examples(nlp))
    with nlp.select_pipes(disable=["entangle"]):
        with pytest.raises(ValueError, match=NO_OUTPUT):
            nlp("Apple is nice")
    nlp.disable_pipe("entangle")
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp("Apple is nice")
    # nor do the docs initialize inferred shapes on read zeros once it is over
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp.get_pipe("ner").predict([eg.predicted for eg in examples(nlp)])


@pytest.mark.issue(12)
def test_saved_right_after_initialize_then_disabled_raises(canine_dir, bert_dir, tmp_path):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe", disable=["entangle"])
    with pytest.raises(ValueError, match=NO_OUTPUT):
        loaded("Apple is nice")
    # the listener's state is not in the saved model
    (listener,) = [n for n in loaded.get_pipe("ner").model.walk() if isinstance(n, EntangleListener)]
    assert "initializing" not in listener.attrs


@pytest.mark.issue(12)
def test_initialize_train_predict_still_works(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    for _ in range(3):
        nlp.update(exs, sgd=sgd, drop=0.1)
    doc = nlp("Apple is buying a U.K. startup")
    assert len(doc.cats) == 3 and doc._.entangle is not None
