"""Pipelines saved before the layers/pipeline refactor (663406e) still load, with identical outputs: a tiny
pipeline saved with the code of 663406e (tests/fixtures/tiny/make_pipeline_663406e.py)
is loaded with today's code and must give the entities, tags and per-token states it gave
then."""

import json
from pathlib import Path

import numpy
import pytest
import spacy

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tiny"
EXPECTED = json.loads((FIXTURES / "expected_663406e.json").read_text(encoding="utf8"))


@pytest.fixture(scope="module")
def docs():
    # store_output is off by default today; the states are what the listeners read
    nlp = spacy.load(FIXTURES / "pipeline_663406e", config={"components": {"entangle": {"store_output": True}}})
    return list(nlp.pipe([case["text"] for case in EXPECTED["texts"]]))


@pytest.mark.issue(23)
def test_pipeline_saved_at_663406e_predicts_the_same_entities_and_tags(docs):
    for doc, case in zip(docs, EXPECTED["texts"]):
        assert [[e.start_char, e.end_char, e.label_] for e in doc.ents] == case["entities"]
        assert [t.tag_ for t in doc] == case["tags"]
    assert any(case["entities"] for case in EXPECTED["texts"])  # the fixture is not vacuous


@pytest.mark.issue(23)
@pytest.mark.parametrize("side", ["subword", "char"])
def test_pipeline_saved_at_663406e_gives_the_same_token_states(docs, side):
    for doc, case in zip(docs, EXPECTED["texts"]):
        vectors = numpy.asarray(doc._.entangle.token_vectors(side, "mean"))
        assert vectors.shape == (len(doc), len(case[side][0]))
        numpy.testing.assert_allclose(vectors, numpy.asarray(case[side]), atol=1e-5, rtol=0)
