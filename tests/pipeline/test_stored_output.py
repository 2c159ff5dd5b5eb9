"""A listener re-reads what its upstream kept on the doc (store_output = true): after
nlp.pipe(..., disable=[...]), after nlp(), with two `entangle` components each reading
its own, and after a DocBin round trip; without a kept output it is still a clear error."""

import numpy
import pytest
import spacy
from _pipelines import build, entangle_cfg, examples, listener, ner_model
from spacy.tokens import DocBin

from spacy_entangle.layers import EntangleListener

TEXTS = ["Apple is buying a U.K. startup 😀 for $1 billion", "@john went to Paris!!! http://t.co/x"]
NO_OUTPUT = "No output from the upstream component"


def _listener(nlp, component: str) -> EntangleListener:
    (node,) = [n for n in nlp.get_pipe(component).model.walk() if isinstance(n, EntangleListener)]
    return node


def _two_upstreams(canine_dir, bert_dir, store_a: bool = True, store_b: bool = True):
    """ent_a feeds ner, ent_b feeds the tagger (same backbones, their own random weights)."""
    nlp = spacy.blank("en")
    for name, store in (("ent_a", store_a), ("ent_b", store_b)):
        nlp.add_pipe("entangle", name=name, config={"model": entangle_cfg(canine_dir, bert_dir), "store_output": store})
    nlp.add_pipe("ner", config={"model": ner_model("subword", upstream="ent_a")})
    tagger = {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("subword", upstream="ent_b")}
    nlp.add_pipe("tagger", config={"model": tagger})
    nlp.initialize(lambda: examples(nlp))
    return nlp


def _expected(nlp, name: str, text: str):
    return nlp.get_pipe(name).predict([nlp.make_doc(text)])[0].subword


@pytest.mark.issue(29)
def test_ner_pipe_rereads_the_stored_output_after_pipe_with_ner_disabled(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "tagger"), store_output=True)
    nlp.initialize(lambda: examples(nlp))
    reference = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(TEXTS)]
    docs = list(nlp.pipe(TEXTS, disable=["ner"]))
    for _ in range(2):  # the second pass finds nothing in the component's store: doc._.entangle
        docs = list(nlp.get_pipe("ner").pipe(docs))
        assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs] == reference
    with nlp.select_pipes(disable=["ner"]):  # ner is not even a reader of this batch
        docs = list(nlp.pipe(TEXTS))
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.get_pipe("ner").pipe(docs)] == reference


@pytest.mark.issue(29)
def test_predict_after_nlp_reads_the_stored_output(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), store_output=True)
    nlp.initialize(lambda: examples(nlp))
    doc = nlp(TEXTS[0])
    ner = nlp.get_pipe("ner")
    assert ner.predict([doc]) is not None and ner.predict([doc]) is not None
    (read,) = _listener(nlp, "ner").predict([doc])
    assert read is doc._.entangle


@pytest.mark.issue(29)
def test_two_entangle_components_each_listener_rereads_its_own(canine_dir, bert_dir):
    nlp = _two_upstreams(canine_dir, bert_dir)
    for text in TEXTS:
        a, b = _expected(nlp, "ent_a", text), _expected(nlp, "ent_b", text)
        assert not numpy.allclose(a, b, atol=1e-3)  # the test tells them apart
        doc = nlp(text)
        assert doc._.entangle.source == "ent_b"  # the last one to run, as before
        for _ in range(2):
            numpy.testing.assert_allclose(_listener(nlp, "ner").predict([doc])[0].subword, a, atol=1e-5)
            numpy.testing.assert_allclose(_listener(nlp, "tagger").predict([doc])[0].subword, b, atol=1e-5)
    with nlp.select_pipes(disable=["ner", "tagger"]):
        docs = list(nlp.pipe(TEXTS))
    reference = [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]
    assert [[t.tag_ for t in doc] for doc in nlp.get_pipe("tagger").pipe(nlp.get_pipe("ner").pipe(docs))] == reference
    # what store_output keeps is saved with the doc, each component's under its name
    restored = list(DocBin(store_user_data=True, docs=docs).get_docs(nlp.vocab))
    for doc, text in zip(restored, TEXTS):
        (read,) = _listener(nlp, "ner").predict([doc])
        assert read.source == "ent_a"
        numpy.testing.assert_allclose(read.subword, _expected(nlp, "ent_a", text), atol=1e-5)


@pytest.mark.issue(29)
def test_without_a_kept_output_a_listener_still_raises(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "tagger"), store_output=False)
    nlp.initialize(lambda: examples(nlp))
    with nlp.select_pipes(disable=["ner"]):
        docs = list(nlp.pipe(TEXTS))
    assert all(doc._.entangle is None for doc in docs)
    with pytest.raises(ValueError, match=f"{NO_OUTPUT} 'entangle'.*store_output = true"):
        list(nlp.get_pipe("ner").pipe(docs))


@pytest.mark.issue(29)
def test_a_listener_never_reads_another_components_kept_output(canine_dir, bert_dir):
    """ent_b keeps its output, ent_a (which ner reads) does not: ner must not take ent_b's."""
    nlp = _two_upstreams(canine_dir, bert_dir, store_a=False, store_b=True)
    with nlp.select_pipes(disable=["ner"]):
        docs = list(nlp.pipe(TEXTS))
    assert all(doc._.entangle.source == "ent_b" for doc in docs)
    with pytest.raises(ValueError, match=f"{NO_OUTPUT} 'ent_a'"):
        list(nlp.get_pipe("ner").pipe(docs))
    assert all(t.tag_ for doc in nlp.get_pipe("tagger").pipe(docs) for t in doc)
