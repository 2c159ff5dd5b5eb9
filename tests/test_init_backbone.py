"""init-backbone: directories that load offline, labelled, reproducible."""
import json
import os
import subprocess
import sys

import pytest
import torch
from transformers import AutoModel, AutoTokenizer
from typer.testing import CliRunner

from spacy_entangle.cli import app
from spacy_entangle.cli.init_backbone import RANDOM_NOTE, make_random_canine


def test_random_backbones_load_and_are_labelled(canine_dir, bert_dir, roberta_dir):
    for path in (canine_dir, bert_dir, roberta_dir):
        model = AutoModel.from_pretrained(path)
        assert getattr(model.config, "spacy_entangle_note") == RANDOM_NOTE
        assert "NOT pretrained" in (path / "README.md").read_text()
    for path in (bert_dir, roberta_dir):
        tok = AutoTokenizer.from_pretrained(path)
        assert tok.is_fast
        enc = tok("hello @world 😀", return_offsets_mapping=True)
        assert len(enc["offset_mapping"]) == len(enc["input_ids"])
    assert AutoTokenizer.from_pretrained(roberta_dir).pad_token_id == 1


def test_minilm_export_is_pretrained(minilm_dir):
    model = AutoModel.from_pretrained(minilm_dir)
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6
    assert not hasattr(model.config, "spacy_entangle_note")
    assert AutoTokenizer.from_pretrained(minilm_dir).model_max_length == 512


def test_same_seed_same_weights(tmp_path):
    kw = dict(layers=1, width=16, heads=2, hash_buckets=64, local_stride=16)
    a = AutoModel.from_pretrained(make_random_canine(tmp_path / "a", seed=3, **kw)).state_dict()
    b = AutoModel.from_pretrained(make_random_canine(tmp_path / "b", seed=3, **kw)).state_dict()
    c = AutoModel.from_pretrained(make_random_canine(tmp_path / "c", seed=4, **kw)).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_bad_width_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="divisible by 8"):
        make_random_canine(tmp_path / "x", width=30)
    result = CliRunner().invoke(app, ["init-backbone", "canine", str(tmp_path / "y"), "--width", "30"])
    assert result.exit_code == 1
    assert "divisible by 8" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_subprocess(tmp_path):
    out = tmp_path / "canine"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    run = subprocess.run(
        [sys.executable, "-m", "spacy_entangle", "init-backbone", "canine", str(out),
         "--layers", "1", "--width", "16", "--heads", "2", "--local-stride", "16"],
        capture_output=True, text=True, env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "random-initialised" in run.stdout
    assert json.loads((out / "config.json").read_text())["hidden_size"] == 16
