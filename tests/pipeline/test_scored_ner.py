"""The `scored_ner` component: a trained greedy `ner` decoded by beam search with
the same weights, each entity's confidence in doc.spans["ents"].attrs["scores"]; a saved
pipeline converted (load_scored), saved and loaded with spacy.load keeps the scores."""

import pickle

import numpy
import pytest
import spacy
from _pipelines import TEXTS, save_trained_ner
from spacy.tokens import Doc, DocBin

from spacy_entangle.pipeline.scored_ner import ScoredEntityRecognizer, load_scored

MORE = ["Anna went to Paris and London", "Bowie at Google in Paris", "", "   "]
ALL_TEXTS = [text for text, _, _ in TEXTS] + MORE


@pytest.fixture(scope="module")
def greedy_dir(tmp_path_factory, canine_dir, bert_dir):
    out = tmp_path_factory.mktemp("greedy") / "model"
    save_trained_ner(canine_dir, bert_dir, out)
    return out


@pytest.fixture(scope="module")
def scored_dir(greedy_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("scored") / "model"
    load_scored(greedy_dir, beam_width=4).to_disk(out)
    return out


def check_scores(doc: Doc, key: str = "ents") -> numpy.ndarray:
    """doc.spans[key] holds doc.ents, each with one score in [0, 1]."""
    group = doc.spans[key]
    assert [(s.start, s.end, s.label_) for s in group] == [(e.start, e.end, e.label_) for e in doc.ents]
    scores = group.attrs["scores"]
    assert isinstance(scores, numpy.ndarray) and scores.shape == (len(doc.ents),)
    assert ((scores >= 0.0) & (scores <= 1.0)).all()
    return scores


@pytest.mark.issue(32)
def test_a_converted_pipeline_saved_and_loaded_gives_one_score_per_entity(scored_dir):
    nlp = spacy.load(scored_dir)
    assert nlp.get_pipe_meta("ner").factory == "scored_ner"
    assert isinstance(nlp.get_pipe("ner"), ScoredEntityRecognizer) and nlp.get_pipe("ner").beam_width == 4
    docs = list(nlp.pipe(ALL_TEXTS, batch_size=3))
    scores = numpy.concatenate([check_scores(doc) for doc in docs])
    assert len(scores) > 0  # the tiny pipeline predicts entities: the test is not vacuous
    assert (scores < 0.999).any()  # the beam is unsure of some: the scores are not all 1.0
    # one doc at a time gives the same entities and scores as the batch
    for text, batched in zip(ALL_TEXTS, docs):
        alone = nlp(text)
        assert [(e.start, e.end, e.label_) for e in alone.ents] == [(e.start, e.end, e.label_) for e in batched.ents]
        numpy.testing.assert_allclose(
            alone.spans["ents"].attrs["scores"], batched.spans["ents"].attrs["scores"], atol=1e-5
        )


@pytest.mark.issue(32)
def test_empty_docs_get_an_empty_scored_group(scored_dir):
    nlp = spacy.load(scored_dir)
    for docs in ([nlp("")], list(nlp.pipe(["", "   "]))):  # a batch of empty docs is never decoded
        for doc in docs:
            assert len(doc.spans["ents"]) == 0 and check_scores(doc).shape == (0,)


@pytest.mark.issue(32)
def test_the_scores_survive_doc_serialisation(scored_dir):
    nlp = spacy.load(scored_dir)
    docs = list(nlp.pipe(ALL_TEXTS))
    restored = list(DocBin(docs=docs).get_docs(nlp.vocab))
    for doc, back in zip(docs, restored):
        numpy.testing.assert_array_equal(check_scores(back), doc.spans["ents"].attrs["scores"])


@pytest.mark.issue(32)
def test_the_load_config_sets_the_beam_and_the_spans_key(scored_dir, greedy_dir):
    """The decoding settings change no weight: the config the pipeline is loaded with wins
    over the saved cfg (a greedy ner's says beam_width 1)."""
    nlp = spacy.load(scored_dir, config={"components": {"ner": {"beam_width": 8, "spans_key": "conf"}}})
    assert nlp.get_pipe("ner").cfg["beam_width"] == 8
    doc = nlp(ALL_TEXTS[0])
    assert "ents" not in doc.spans
    check_scores(doc, "conf")
    # an installed or saved pipeline, converted at load time
    nlp = spacy.load(greedy_dir, config={"components": {"ner": {"factory": "scored_ner", "beam_width": 2}}})
    assert nlp.get_pipe("ner").cfg["beam_width"] == 2
    check_scores(nlp(ALL_TEXTS[0]))


@pytest.mark.issue(32)
def test_the_scored_component_pickles(scored_dir):
    ner = spacy.load(scored_dir).get_pipe("ner")
    copy = pickle.loads(pickle.dumps(ner))
    assert isinstance(copy, ScoredEntityRecognizer)
    assert copy.cfg == ner.cfg and copy.spans_key == "ents"


@pytest.mark.issue(32)
@pytest.mark.parametrize("width", [0, 1, -3, 2.5])
def test_a_beam_narrower_than_two_is_refused(greedy_dir, width):
    with pytest.raises(ValueError, match="beam_width must be an integer >= 2"):
        load_scored(greedy_dir, beam_width=width)
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="beam_width"):  # 2.5: spaCy's config check says it first
        nlp.add_pipe("scored_ner", config={"beam_width": width})


@pytest.mark.issue(32)
def test_a_pipeline_without_ner_is_refused(greedy_dir, tmp_path):
    spacy.blank("en").to_disk(tmp_path / "blank")
    with pytest.raises(ValueError, match="no component named 'ner' to score"):
        load_scored(tmp_path / "blank")
    with pytest.raises(ValueError, match="'entangle' factory, not a transition-based entity recognizer"):
        load_scored(greedy_dir, component="entangle")
    with pytest.raises(ValueError, match="not a saved spaCy pipeline"):
        load_scored(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="spans_key must be a non-empty string"):
        load_scored(greedy_dir, spans_key="")
