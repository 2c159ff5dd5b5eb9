"""Token vectors: ``EntangleData.token_vectors`` (one pooled row per token, as a listener reads
it) and the `entangle` component's opt-in ``doc_tensor`` setting (doc.tensor, so token.vector,
span.vector and doc.similarity work), with store_output off."""

import numpy
import pytest
import spacy
from _pipelines import TEXTS, build, entangle_cfg, examples
from thinc.api import reduce_first, reduce_mean

from spacy_entangle.layers import entangle_pool


@pytest.fixture(scope="module")
def nlp(canine_dir, bert_dir):
    """ner (subword) + tagger (char) + textcat: both sides computed, doc._.entangle kept."""
    nlp = build(canine_dir, bert_dir)
    nlp.initialize(lambda: examples(nlp))
    return nlp


def _tensor_pipeline(canine_dir, bert_dir, **settings):
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir), **settings})
    nlp.initialize()
    return nlp


@pytest.mark.parametrize("side", ["subword", "char", "both"])
@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_token_vectors_are_what_a_listener_reads(nlp, side, pooling):
    doc = nlp(TEXTS[0][0])
    data = doc._.entangle
    vectors = data.token_vectors(side, pooling)
    layer = {"first": reduce_first, "mean": reduce_mean}[pooling]()
    expected = entangle_pool(side, layer).predict([data])[0]
    width = data.subword.shape[1] * (2 if side == "both" else 1)
    assert vectors.shape == (len(doc), width)
    numpy.testing.assert_allclose(vectors, expected)


def test_token_vectors_pool_each_tokens_own_rows(nlp):
    data = nlp("Apple is buying a startup")._.entangle
    a = data.align
    first_rows = a.subword_rows[numpy.cumsum(a.subword_lengths) - a.subword_lengths]
    numpy.testing.assert_allclose(data.token_vectors("subword", "first"), data.subword[first_rows])
    starts = numpy.cumsum(a.char_lengths) - a.char_lengths
    means = [data.char[a.char_rows[s : s + n]].mean(axis=0) for s, n in zip(starts, a.char_lengths)]
    numpy.testing.assert_allclose(data.token_vectors("char", "mean"), numpy.stack(means), rtol=1e-5, atol=1e-6)
    both = data.token_vectors("both", "first")
    numpy.testing.assert_allclose(both[:, : data.subword.shape[1]], data.token_vectors("subword", "first"))


def test_token_vectors_bad_names_are_clear_errors(nlp):
    data = nlp("Apple is buying a startup")._.entangle
    with pytest.raises(ValueError, match="side must be 'subword', 'char' or 'both', got 'chars'"):
        data.token_vectors("chars")
    with pytest.raises(ValueError, match="pooling must be one of 'first', 'mean', got 'max'"):
        data.token_vectors("subword", "max")


def test_doc_tensor_is_off_by_default(nlp):
    assert nlp.get_pipe("entangle").doc_tensor is None
    assert nlp("Apple is buying a startup").tensor.size == 0


def test_doc_tensor_fills_token_span_and_doc_vectors_without_store_output(canine_dir, bert_dir):
    """No listener at all and store_output off: the tensor still comes (its side is computed)."""
    nlp = _tensor_pipeline(canine_dir, bert_dir, doc_tensor="char", doc_tensor_pooling="mean")
    entangle = nlp.get_pipe("entangle")
    assert entangle.cfg["store_output"] is False
    doc = nlp("Apple is buying a startup in London")
    assert doc._.entangle is None and len(entangle._outputs) == 0
    assert doc.tensor.shape == (len(doc), 32)
    numpy.testing.assert_allclose(doc[2].vector, doc.tensor[2])
    numpy.testing.assert_allclose(doc[1:3].vector, doc.tensor[1:3].mean(axis=0), rtol=1e-6)
    assert doc.has_vector and doc[0].has_vector
    other = nlp("Google buys a company in Paris")
    with pytest.warns(UserWarning, match="W007"):  # spaCy's note on similarity from tensors, not word vectors
        assert -1.0 <= doc.similarity(other) <= 1.0 and doc.similarity(doc) == pytest.approx(1.0, abs=1e-5)
    # a doc alone and in a batch: the same vectors
    batched = list(nlp.pipe(["so sad", doc.text, "ok"]))
    numpy.testing.assert_allclose(batched[1].tensor, doc.tensor, rtol=1e-4, atol=1e-5)
    # each doc holds its own copy, not a view of the batch's array
    assert batched[1].tensor.base is None
    assert nlp("").tensor.shape[0] == 0


def test_doc_tensor_side_is_computed_when_no_listener_reads_it(canine_dir, bert_dir):
    """The listeners read the subword side only: the char side is computed for doc.tensor."""
    nlp = build(canine_dir, bert_dir, components=("ner",), store_output=False)
    nlp.initialize(lambda: examples(nlp))
    nlp.get_pipe("entangle").doc_tensor = "char"  # a run-time setting, like store_attention
    doc = nlp("Apple is buying a startup")
    assert doc.tensor.shape == (len(doc), 32) and numpy.abs(doc.tensor).sum() > 0


def test_doc_tensor_equals_the_token_vectors(canine_dir, bert_dir):
    nlp = _tensor_pipeline(canine_dir, bert_dir, doc_tensor="both", doc_tensor_pooling="first", store_output=True)
    doc = nlp("@john went to Paris!!!")
    numpy.testing.assert_allclose(doc.tensor, doc._.entangle.token_vectors("both", "first"))
    assert doc.tensor.shape == (len(doc), 64)


def test_doc_tensor_is_a_load_time_setting(canine_dir, bert_dir, tmp_path):
    nlp = _tensor_pipeline(canine_dir, bert_dir)
    nlp.to_disk(tmp_path / "p")
    assert spacy.load(tmp_path / "p")("a b").tensor.size == 0
    loaded = spacy.load(tmp_path / "p", config={"components": {"entangle": {"doc_tensor": "subword"}}})
    assert loaded("a b c").tensor.shape == (3, 32)


def test_doc_tensor_settings_are_validated_naming_the_block(canine_dir, bert_dir):
    from confection import ConfigValidationError

    nlp = spacy.blank("en")
    for settings, value in [({"doc_tensor": "chars"}, "chars"), ({"doc_tensor_pooling": "max"}, "max")]:
        with pytest.raises(ConfigValidationError) as err:
            nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir), **settings})
        assert value in str(err.value) and list(settings)[0] in str(err.value)


def test_rows_gradient_sums_the_rows_read_and_leaves_unread_sides_none():
    """The one gradient helper of the layers after a listener (pooling, [CLS] head, char states)."""
    from thinc.api import NumpyOps

    from spacy_entangle.layers.gradients import rows_gradient

    ops = NumpyOps()
    grad = rows_gradient(ops, None, [("char", (3, 2), [0, 2, 0], ops.asarray2f([[1, 1], [2, 2], [3, 3]]))])
    assert grad.subword is None
    numpy.testing.assert_array_equal(grad.char, [[4, 4], [0, 0], [2, 2]])
