"""A saved pipeline predicts what it predicted when it was saved, on documents longer than one
window too: a change of windowing is a new registered version (spacy-entangle.windows.v2)
that new configs name, while windows.v1 and ``window_getter = null`` keep the windows that
pipelines saved with them were made with (tokenization/windows.py)."""

import json
import re
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.util import registry

from spacy_entangle.configs import CONFIGS_DIR
from spacy_entangle.tokenization.windows import greedy_windows

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tiny"
LONG = json.loads((FIXTURES / "expected_long_doc.json").read_text(encoding="utf8"))


@pytest.fixture(scope="module")
def long_doc():
    """The long doc through pipeline_663406e (window_getter = null), loaded with today's code."""
    nlp = spacy.load(FIXTURES / "pipeline_663406e", config={"components": {"entangle": {"store_output": True}}})
    return nlp(LONG["text"])


def test_the_fixture_doc_is_longer_than_one_window(long_doc):
    assert LONG["n_windows"] > 1
    assert len(long_doc._.entangle.align.window_rows) == LONG["n_windows"]


def test_a_pipeline_saved_with_null_windows_keeps_its_rows_and_predictions(long_doc):
    align = long_doc._.entangle.align
    assert {"subword": align.n_subword_rows, "char": align.n_char_rows} == LONG["rows"]
    assert [[e.start_char, e.end_char, e.label_] for e in long_doc.ents] == LONG["entities"]
    assert [t.tag_ for t in long_doc] == LONG["tags"]
    assert any(LONG["entities"])  # the fixture is not vacuous


@pytest.mark.parametrize("side", ["subword", "char"])
def test_a_pipeline_saved_with_null_windows_keeps_its_token_states(long_doc, side):
    vectors = numpy.asarray(long_doc._.entangle.token_vectors(side, "mean"))
    numpy.testing.assert_allclose(vectors, numpy.asarray(LONG[side]), atol=2e-5, rtol=0)


def test_each_windows_version_keeps_its_default_overlap():
    v1 = registry.misc.get("spacy-entangle.windows.v1")
    v2 = registry.misc.get("spacy-entangle.windows.v2")
    assert v1().overlap == 0.25
    assert v2().overlap == 0.1
    # the same cutting: only the default differs
    assert v1(max_pieces=16, overlap=0.1) == v2(max_pieces=16)
    starts = numpy.arange(0, 400, 4)
    ends, pieces = starts + 3, numpy.full(100, 2)
    quarter = greedy_windows(starts, ends, pieces, 20, 64, v1().overlap)
    tenth = greedy_windows(starts, ends, pieces, 20, 64, v2().overlap)
    assert len(quarter) > len(tenth) > 1


def test_null_window_getter_means_the_first_versions_windows(canine_dir, bert_dir):
    """What a pipeline saved with ``window_getter = null`` was made with."""
    from _pipelines import entangle_cfg

    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    assert nlp.config["components"]["entangle"]["model"]["window_getter"] is None
    assert nlp.get_pipe("entangle").model.attrs["window_settings"] == registry.misc.get("spacy-entangle.windows.v1")()


def test_new_configs_name_the_new_windows_version():
    """Pipelines made from the presets (and init-config's parts) get windows.v2."""
    named = {
        path.relative_to(CONFIGS_DIR).as_posix(): re.findall(r"spacy-entangle\.windows\.v\d+", path.read_text("utf8"))
        for path in sorted(CONFIGS_DIR.glob("**/*.cfg"))
    }
    named = {name: versions for name, versions in named.items() if versions}
    assert "ner_cpu.cfg" in named and "parts/bases/entangle_cpu.cfg" in named
    assert {v for versions in named.values() for v in versions} == {"spacy-entangle.windows.v2"}, named
