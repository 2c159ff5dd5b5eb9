"""Prediction keeps only the rows the listeners read (keep_rows): a long doc's states are
gathered chunk by chunk, so memory is bounded by a window batch, not by the document."""

import numpy
import pytest
from _pipelines import TEXTS, build, examples

from spacy_entangle.layers.entangle_model import entangle_shim

WINDOWS = {"@misc": "spacy-entangle.windows.v1", "max_pieces": 24, "max_chars": 64, "overlap": 0.25}


@pytest.fixture(scope="module")
def nlp(canine_dir, bert_dir):
    """NER on both sides and a tagger on the char side, first pooling (the shipped shape)."""
    nlp = build(
        canine_dir, bert_dir, components=("ner", "tagger"), side="both", store_output=False, window_getter=WINDOWS
    )
    nlp.initialize(lambda: examples(nlp))
    return nlp


@pytest.fixture(scope="module")
def long_doc(nlp):
    return nlp.make_doc(" ".join(text for text, _, _ in TEXTS) * 25)


def _predict(nlp, doc, keep_rows, max_batch_chars):
    """The entangle model's output under these settings (the component sets keep_rows from
    its listeners in predict: here it is forced)."""
    ent = nlp.get_pipe("entangle")
    shim = entangle_shim(ent.model)
    saved = shim.cfg["max_batch_chars"], ent.model.attrs["keep_rows"]
    shim.cfg["max_batch_chars"] = max_batch_chars
    ent.model.attrs["keep_rows"] = keep_rows
    try:
        return ent.model.predict([doc])[0]
    finally:
        shim.cfg["max_batch_chars"], ent.model.attrs["keep_rows"] = saved


def test_the_component_keeps_what_its_listeners_read(nlp, long_doc):
    ent = nlp.get_pipe("entangle")
    ent.predict([long_doc])
    assert ent.model.attrs["keep_rows"] == "first"
    ent.cfg["store_output"] = True  # kept on the doc: anyone may read any row later
    try:
        ent.predict([long_doc])
        assert ent.model.attrs["keep_rows"] == "all"
    finally:
        ent.cfg["store_output"] = False
    ent.doc_tensor = "char"  # doc.tensor's mean pooling reads every row of a token
    try:
        ent.predict([long_doc])
        assert ent.model.attrs["keep_rows"] == "tokens"
    finally:
        ent.doc_tensor = None


@pytest.mark.parametrize("keep_rows,pooling", [("first", "first"), ("tokens", "mean"), ("tokens", "first")])
def test_kept_rows_give_the_token_vectors_of_all_rows_in_any_window_batch(nlp, long_doc, keep_rows, pooling):
    full = _predict(nlp, long_doc, "all", 16384)
    n_windows = len(full.align.window_rows)
    assert n_windows > 20, "the doc must run in many windows and chunks"
    expected = full.token_vectors("both", pooling)
    for budget in (100, 16384):  # one window per chunk .. every window in one chunk
        kept = _predict(nlp, long_doc, keep_rows, budget)
        numpy.testing.assert_allclose(kept.token_vectors("both", pooling), expected, atol=1e-5)
        if keep_rows == "first":  # one row per token per side, at most
            assert kept.char.shape[0] == len(long_doc) and kept.subword.shape[0] <= len(long_doc)
        else:
            assert kept.char.shape[0] == sum(len(t) for t in long_doc)
        assert kept.char.shape[0] < full.char.shape[0] and kept.subword.shape[0] < full.subword.shape[0]


def test_predictions_do_not_depend_on_the_window_batch_when_keeping_rows(nlp, long_doc):
    ent = nlp.get_pipe("entangle")
    shim = entangle_shim(ent.model)
    results = []
    for budget in (100, 16384):
        shim.cfg["max_batch_chars"] = budget
        doc = nlp(long_doc.text)
        results.append(([t.tag_ for t in doc], [(e.start, e.end, e.label_) for e in doc.ents]))
    shim.cfg["max_batch_chars"] = 16384
    assert ent.model.attrs["keep_rows"] == "first"
    assert results[0] == results[1]


def test_empty_docs_and_whitespace_keep_rows(nlp):
    docs = [nlp.make_doc(t) for t in ("", "   ", "hi", "\n")]
    out = nlp.get_pipe("entangle").model.predict(docs)
    for doc, data in zip(docs, out):
        assert data.token_vectors("both", "first").shape[0] == len(doc)
    assert [len(d) for d in nlp.pipe(["", "   ", "hi there"])] == [0, 1, 2]
