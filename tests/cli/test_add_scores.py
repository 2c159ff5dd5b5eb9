"""`python -m spacy_entangle add-scores IN OUT`: the saved pipeline's ner with a
confidence per entity; --show prints them from the saved copy; bad input ends with one line."""

import pytest
import spacy
from _cli import cli
from _pipelines import save_trained_ner


@pytest.fixture(scope="module")
def greedy_dir(tmp_path_factory, canine_dir, bert_dir):
    out = tmp_path_factory.mktemp("greedy") / "model"
    save_trained_ner(canine_dir, bert_dir, out)
    return out


@pytest.mark.issue(32)
def test_add_scores_saves_a_pipeline_whose_entities_have_scores(greedy_dir, tmp_path):
    text = "Apple is buying a U.K. startup 😀 for $1 billion"
    r = cli("add-scores", greedy_dir, tmp_path / "scored", "--beam-width", 4, "--show", text)
    assert r.returncode == 0, r.output
    assert 'a beam of 4, entity scores in doc.spans["ents"].attrs["scores"]' in r.stdout
    shown = [line.split("\t") for line in r.stdout.splitlines()[1:]]
    doc = spacy.load(tmp_path / "scored")(text)
    assert len(doc.ents) > 0
    assert [(ent, label) for ent, label, _ in shown] == [(e.text, e.label_) for e in doc.ents]
    assert all(0.0 <= float(score) <= 1.0 for _, _, score in shown)


@pytest.mark.issue(32)
@pytest.mark.parametrize(
    "args, message",
    [
        (["--beam-width", "1"], "beam_width must be an integer >= 2"),
        (["--component", "nope"], "no component named 'nope' to score"),
        (["--component", "entangle"], "not a transition-based entity recognizer"),
    ],
)
def test_add_scores_bad_input_is_one_line(greedy_dir, tmp_path, args, message):
    r = cli("add-scores", greedy_dir, tmp_path / "out", *args)
    assert r.returncode == 1 and "✘ add-scores failed" in r.stderr and message in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()


@pytest.mark.issue(32)
def test_add_scores_refuses_its_input_folder_as_output(greedy_dir):
    r = cli("add-scores", greedy_dir, greedy_dir)
    assert r.returncode == 1 and "OUT must be another folder than IN" in r.stderr
