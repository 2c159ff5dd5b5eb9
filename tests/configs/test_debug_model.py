"""spaCy's `debug model` on the shipped configs: it runs one listening component alone on
docs no upstream component has seen, and must end with "model looks good"; outside it, a
listener with no upstream output still raises (tests/layers/test_listener.py)."""

import pytest
from _pipelines import build, examples
from spacy.cli._util import app as spacy_app
from typer.testing import CliRunner

import spacy_entangle  # noqa: F401  (registers the factories and the char_tags extension)
from spacy_entangle.configs import config_path
from spacy_entangle.layers.listener import _under_spacy_debug_model

# the corpus fixture (every annotation the configs train on) and the tiny backbones' overrides
from tests.configs.test_configs import _overrides, corpus  # noqa: F401


@pytest.mark.parametrize(
    "cfg_name, component",
    [
        ("ner_cpu.cfg", "ner"),
        ("textcat_cpu.cfg", "textcat"),
        ("char_tagger_cpu.cfg", "char_tagger"),
    ],
)
def test_spacy_debug_model_runs_on_a_shipped_config(corpus, canine_dir, bert_dir, cfg_name, component):  # noqa: F811 (the imported fixture)
    """`python -m spacy debug model CONFIG COMPONENT -P3`, in-process through spaCy's own CLI."""
    cfg = config_path(cfg_name)
    overrides = [
        arg for key, value in _overrides(cfg, corpus, canine_dir, bert_dir).items() for arg in (f"--{key}", str(value))
    ]
    result = CliRunner().invoke(spacy_app, ["debug", "model", str(cfg), component, "-P3", *overrides])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # wasabi wraps long lines
    assert "Initialized the model with the training corpus" in output
    assert "computes the 'entangle' component's output" in output
    assert "model looks good" in output


def test_outside_debug_model_a_listener_without_upstream_output_still_raises(canine_dir, bert_dir):
    """The same situation in a real pipeline (the component alone on a fresh doc) is an error."""
    nlp = build(canine_dir, bert_dir, components=("ner",), store_output=False)
    nlp.initialize(lambda: examples(nlp))
    assert not _under_spacy_debug_model()
    with pytest.raises(ValueError, match="No output from the upstream component 'entangle'"):
        nlp.get_pipe("ner").model.predict([nlp.make_doc("Apple is buying a startup")])
    with pytest.raises(ValueError, match="No output from the upstream component 'entangle'"):
        nlp.get_pipe("ner").update(examples(nlp))
