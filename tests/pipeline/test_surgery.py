"""Pipeline surgery users do every day, in every inference mode: a listener reads only the
states of its doc as the doc is now, computed by its own upstream component. Retokenizers
before and after `entangle`, components added, removed, renamed or replaced between
`entangle` and its listeners, docs passed between two pipelines, ``Doc.from_docs``,
``doc.copy()`` and ``DocBin`` round trips: each gives the states of the doc's own tokens
(recomputed where they are stale, with a warning), or a clear error; never rows shifted onto
other tokens, never a tag written past the doc's end."""

import warnings
from pathlib import Path
from typing import Any, List

import numpy
import pytest
import spacy
from _pipelines import build, train
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from spacy_entangle.modeling.inference import ENGINE_MODES

MODES = ["fp32", "int8", "bf16", "onnx", "onnx-int8"]
TEXT = "The New York Stock Exchange said @john bought Big Apple Fruit Company Limited 😀 today"
OTHER = "so sad that Bowie died at the Royal Albert Hall"
PATTERNS = [
    {"label": "ORG", "pattern": "New York Stock Exchange"},
    {"label": "ORG", "pattern": "Big Apple Fruit Company Limited"},
    {"label": "LOC", "pattern": "Royal Albert Hall"},
]
RECOMPUTES = "recomputes its states"


class _Saved:
    """Mode -> a saved pipeline; in the onnx modes one whose engine graphs were exported once
    (on first use) and saved with it, so that each load reads them instead of exporting."""

    def __init__(self, base: Path):
        self.base, self.paths = base, {mode: base for mode in MODES if mode not in ENGINE_MODES}

    def __getitem__(self, mode: str) -> Path:
        if mode not in self.paths:
            for name in ("onnxruntime", "onnx", "onnxscript"):
                pytest.importorskip(name)
            engine = _load(self.base, mode)
            engine("export the graphs once")
            engine.to_disk(self.base.parent / mode)
            self.paths[mode] = self.base.parent / mode
        return self.paths[mode]


@pytest.fixture(scope="module")
def saved(tmp_path_factory, grown_dir, bert_dir) -> _Saved:
    """The shipped shape on tiny backbones (a grown char encoder, `ner` on the subword side,
    `tagger` on the char side, `textcat` on the first subword state), trained a little and
    saved. textcat reads rows no token owns, so every prediction keeps every row: one set of
    engine graphs serves store_output on and off (each set costs an export)."""
    nlp = build(grown_dir, bert_dir, store_output=False, n_coattention=1)
    train(nlp, n_steps=2)
    base = tmp_path_factory.mktemp("surgery") / "fp32"
    nlp.to_disk(base)
    return _Saved(base)


@pytest.fixture(scope="module")
def other(grown_dir, bert_dir) -> Language:
    """Another pipeline with an `entangle` component of the same name: other weights, other width."""
    nlp = build(
        grown_dir, bert_dir, components=("ner", "tagger"), n_coattention=1, hidden_width=16, n_heads=2, ffn_width=32
    )
    train(nlp, n_steps=1, seed=1)
    return nlp


def _load(path: Path, mode: str, store_output: bool = False) -> Language:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bf16 on a CPU says it is slow there
        return spacy.load(path, config={"components": {"entangle": {"inference": mode, "store_output": store_output}}})


def _with_ruler(nlp: Language, **where: Any) -> Language:
    """An entity_ruler and merge_entities (a retokenizer) where ``where`` says (add_pipe's)."""
    nlp.add_pipe("entity_ruler", **where).add_patterns(PATTERNS)
    nlp.add_pipe("merge_entities", after="entity_ruler")
    return nlp


def _recomputes(record: List[warnings.WarningMessage]) -> List[str]:
    return [str(w.message) for w in record if RECOMPUTES in str(w.message)]


def _tag_scores(nlp: Language, doc: Doc) -> numpy.ndarray:
    """The tagger's scores on ``doc`` as it is now (read through its listener)."""
    return numpy.asarray(nlp.get_pipe("tagger").model.predict([doc])[0])


def _fresh_scores(nlp: Language, doc: Doc) -> numpy.ndarray:
    """The tagger's scores on ``doc`` from states computed for its tokens now."""
    entangle = nlp.get_pipe("entangle")
    entangle(doc)
    scores = _tag_scores(nlp, doc)
    entangle.release([doc])  # the other listener will not read it
    return scores


def _tags_and_ents(docs) -> list:
    return [([t.tag_ for t in doc], [(e.start_char, e.end_char, e.label_) for e in doc.ents]) for doc in docs]


@pytest.mark.parametrize("mode", MODES)
def test_a_retokenizer_between_entangle_and_its_listeners(saved, mode):
    nlp = _with_ruler(_load(saved[mode], mode), after="entangle")
    entangle = nlp.get_pipe("entangle")
    if mode not in ENGINE_MODES:  # (a new set of engine graphs would cost an export)
        nlp.remove_pipe("textcat")  # so a prediction keeps only the rows the listeners read
    for store_output in (False, True):
        entangle.cfg["store_output"] = store_output
        doc = nlp.make_doc(TEXT)
        n_before = len(doc)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            for name in ("entangle", "entity_ruler", "merge_entities", "ner"):
                doc = nlp.get_pipe(name)(doc)
            scores = _tag_scores(nlp, doc)
        assert len(doc) < n_before
        if not store_output:  # the listener's first warning (one per listener)
            (message,) = _recomputes(record)
            assert f"tokens changed after `entangle` computed its states ({n_before} tokens then" in message
            assert "`merge_entities` retokenizes" in message
        # the states of the merged tokens, as if the retokenizer had run before `entangle`
        reference = nlp.make_doc(TEXT)
        for name in ("entity_ruler", "merge_entities"):
            reference = nlp.get_pipe(name)(reference)
        assert scores.shape[0] == len(doc)
        numpy.testing.assert_allclose(scores, _fresh_scores(nlp, reference), atol=1e-5)
        if store_output:  # what the doc keeps is its tokens' states now
            assert doc._.entangle.align.n_tokens == len(doc)
        else:
            assert entangle.model.attrs["keep_rows"] == ("all" if mode in ENGINE_MODES else "first")
        entangle.release([doc])  # a textcat never read it
        whole = nlp(TEXT)
        assert len([t.tag_ for t in whole if t.tag_]) == len(whole)
        assert [e.text for e in whole.ents] == ["New York Stock Exchange", "Big Apple Fruit Company Limited"]
        assert len(entangle._outputs) == 0  # nothing left waiting


@pytest.mark.parametrize("mode", MODES)
def test_a_retokenizer_before_entangle_recomputes_nothing(saved, mode):
    nlp = _with_ruler(_load(saved[mode], mode), first=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        docs = list(nlp.pipe([TEXT, OTHER]))
    assert not _recomputes(record)
    assert all(len([t for t in doc if t.tag_]) == len(doc) for doc in docs)
    assert "New York Stock Exchange" in [t.text for t in docs[0]]


@pytest.mark.parametrize("mode", MODES)
def test_stale_states_without_their_upstream_are_a_clear_error(saved, mode):
    nlp = _with_ruler(_load(saved[mode], mode, store_output=True), after="entangle")
    with nlp.select_pipes(enable=["entangle", "entity_ruler", "merge_entities"]):
        merged = nlp(TEXT)  # states kept for the tokens before the merge
    by_hand = nlp.get_pipe("entangle")(nlp.make_doc(OTHER))
    with by_hand.retokenize() as retokenizer:
        retokenizer.merge(by_hand[6:9])
    nlp.remove_pipe("entangle")  # nothing can recompute them now
    tagger = nlp.get_pipe("tagger")
    with pytest.raises(
        ValueError, match=r"^`tagger` cannot .* tokens changed after `entangle`.*`merge_entities` retok"
    ):
        tagger(merged)
    nlp.remove_pipe("merge_entities")
    with pytest.raises(
        ValueError, match=r"tokens changed after `entangle`.*`entity_ruler`, `ner` ran.*`doc.retokenize\(\)`"
    ):
        tagger(by_hand)
    assert not any(t.tag_ for t in merged) and not any(t.tag_ for t in by_hand)  # nothing written


@pytest.mark.parametrize("mode", MODES)
def test_components_added_renamed_replaced_removed_between_entangle_and_listeners(saved, mode):
    nlp = _load(saved[mode], mode)
    expected = _tags_and_ents(nlp.pipe([TEXT, OTHER]))
    entangle = nlp.get_pipe("entangle")

    def same() -> None:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            assert _tags_and_ents(nlp.pipe([TEXT, OTHER])) == expected
        assert not _recomputes(record)
        assert len(entangle._outputs) == 0  # every listener read its doc once

    nlp.add_pipe("sentencizer", after="entangle")
    same()
    nlp.rename_pipe("sentencizer", "sents")
    same()
    # a component that clears the kept states (and doc.tensor) between them
    nlp.replace_pipe("sents", "doc_cleaner", config={"attrs": {"_.entangle": None, "tensor": None}})
    same()
    nlp.remove_pipe("sents")
    same()
    # a listening component replaced by the same component sourced from another copy
    nlp.remove_pipe("tagger")
    nlp.add_pipe("tagger", source=_load(saved[mode], mode))
    same()
    # a listening component removed: the other listener's states are not left waiting for it
    nlp.remove_pipe("tagger")
    assert [[e.text for e in doc.ents] for doc in nlp.pipe([TEXT, OTHER])] == [
        [TEXT[s:e] for s, e, _ in ents] for _, ents in expected
    ]
    assert len(entangle._outputs) == 0


@pytest.mark.parametrize("mode", MODES)
def test_docs_passed_between_pipelines(saved, other, mode):
    nlp = _load(saved[mode], mode, store_output=True)
    expected = _tags_and_ents([nlp(TEXT)])
    own = _fresh_scores(nlp, nlp.make_doc(TEXT))

    def foreign() -> Doc:
        """A doc another pipeline's `entangle` (same name, other weights and width) processed."""
        return other.get_pipe("entangle")(other.make_doc(TEXT))

    with pytest.warns(UserWarning, match="computed by another pipeline or model"):
        scores = _tag_scores(nlp, foreign())
    numpy.testing.assert_allclose(scores, own, atol=1e-5)
    assert _tags_and_ents([nlp.get_pipe("ner")(nlp.get_pipe("tagger")(foreign()))]) == expected
    # and back: this pipeline's states are the other pipeline's to recompute
    back = other.get_pipe("tagger")(nlp(TEXT))
    assert back._.entangle.made_by == other.get_pipe("entangle").made_by
    # the same saved pipeline loaded twice: one model, its states are read as they are
    twin = _load(saved[mode], mode, store_output=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with nlp.select_pipes(disable=["ner", "tagger"]):
            doc = nlp(TEXT)
        assert _tags_and_ents([twin.get_pipe("ner")(twin.get_pipe("tagger")(doc))]) == expected
    assert not _recomputes(record)


@pytest.mark.parametrize("mode", MODES)
def test_doc_copies_merged_docs_and_docbin_round_trips(saved, other, mode):
    nlp = _load(saved[mode], mode, store_output=True)
    expected = _tags_and_ents([nlp(TEXT), nlp(OTHER)])
    with nlp.select_pipes(disable=["ner", "tagger"]):
        kept = list(nlp.pipe([TEXT, OTHER]))

    def listen(doc: Doc) -> Doc:
        return nlp.get_pipe("ner")(nlp.get_pipe("tagger")(doc))

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        # a copy keeps the kept states of the same tokens
        assert _tags_and_ents([listen(kept[0].copy())]) == expected[:1]
        # read back from a DocBin: the same tokens, the same model
        data = DocBin(store_user_data=True, docs=kept).to_bytes()
        back = list(DocBin().from_bytes(data).get_docs(nlp.vocab))
        assert _tags_and_ents([listen(doc) for doc in back]) == expected
    assert not _recomputes(record)
    # read back and retokenized: recomputed for the merged tokens
    again = next(DocBin().from_bytes(data).get_docs(nlp.vocab))
    with again.retokenize() as retokenizer:
        retokenizer.merge(again[1:5])
    with pytest.warns(UserWarning, match="tokens changed"):
        scores = _tag_scores(nlp, again)
    assert scores.shape[0] == len(again)
    # read into another pipeline: its own states
    foreign = next(DocBin().from_bytes(data).get_docs(other.vocab))
    assert other.get_pipe("tagger")(foreign)._.entangle.made_by == other.get_pipe("entangle").made_by
    # Doc.from_docs keeps no doc-level states (spaCy warns): a clear error, then the pipeline's own
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        merged = Doc.from_docs(kept)
    with pytest.raises(ValueError, match="No output from the upstream component 'entangle'"):
        nlp.get_pipe("tagger")(merged)
    merged = nlp(merged)
    assert len([t for t in merged if t.tag_]) == len(merged) == len(kept[0]) + len(kept[1])
    # with store_output off, a copy has no states (they are the original doc's): a clear error
    nlp.get_pipe("entangle").cfg["store_output"] = False
    with nlp.select_pipes(disable=["tagger"]):
        doc = nlp(TEXT)
    with pytest.raises(ValueError, match="No output from the upstream component 'entangle'"):
        nlp.get_pipe("tagger")(doc.copy())
