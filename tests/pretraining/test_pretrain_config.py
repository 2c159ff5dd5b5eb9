"""`pretrain-chars CONFIG.cfg OUT --pretrain.max_steps 2`: a run read from a config file with
dotted overrides (pretraining/config.py), as `spacy pretrain` reads one; bad keys are clear
errors that name them."""

import json

import pytest
from _cli import cli

from spacy_entangle.backbone_dirs import sample_lines
from spacy_entangle.pretraining.checkpoint import CHECKPOINT, LOG_NAME


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "sample.txt"
    path.write_text("\n".join(sample_lines()) + "\n", encoding="utf8")
    return path


def write_config(path, text_file, extra=""):
    path.write_text(
        f'[paths]\ntexts = ["{text_file}"]\n\n[encoder]\nconfig = "canine-tiny"\n\n'
        "[pretrain]\nmax_steps = 100\nbatch_size = 8\nlr = 0.003\nwarmup_steps = 0\nlog_every = 1\n" + extra,
        encoding="utf8",
    )
    return path


def test_config_file_with_dotted_overrides_runs(text_file, tmp_path):
    cfg = write_config(tmp_path / "pretrain.cfg", text_file)
    out = tmp_path / "out"
    result = cli("pretrain-chars", cfg, out, "--pretrain.max_steps", "2", "--pretrain.noise_rate=0.2", "--seed", "3")
    assert result.returncode == 0, result.output
    state = json.loads((out / CHECKPOINT / "state.json").read_text(encoding="utf8"))
    settings = state["settings"]
    assert (settings["max_steps"], settings["noise_rate"], settings["seed"]) == (2, 0.2, 3)  # overrides, flag
    assert (settings["lr"], settings["batch_size"], settings["mask_rate"]) == (0.003, 8, 0.15)  # file, default
    assert [json.loads(line)["step"] for line in (out / LOG_NAME).read_text().splitlines()] == [1, 2]
    assert state["config"] == "canine-tiny"


@pytest.mark.parametrize(
    "extra,args,message",
    [
        ("max_step = 3\n", [], "unknown key pretrain.max_step (known in [pretrain]: max_steps"),
        ("", ["--pretrain.nope", "1"], "unknown key pretrain.nope"),
        ("", ["--training.max_steps", "1"], "training -> max_steps"),
        ("[train]\nx = 1\n", [], "unknown section [train]"),
        ("", ["--max-step", "3"], "No such option"),
        ("", ["--paths.texts", "[]"], "give the text files as [paths] texts"),
    ],
)
def test_bad_config_keys_are_clear_errors(extra, args, message, text_file, tmp_path):
    cfg = write_config(tmp_path / "pretrain.cfg", text_file, extra)
    result = cli("pretrain-chars", cfg, tmp_path / "out", *args)
    assert result.returncode == 1, result.output
    assert message in result.output and "Traceback" not in result.output


def test_dotted_overrides_need_a_config_file(text_file, tmp_path):
    result = cli("pretrain-chars", text_file, tmp_path / "out", "--pretrain.max_steps", "2")
    assert result.returncode == 1
    assert "apply to a config file" in result.output
    missing = cli("pretrain-chars", tmp_path / "nope.cfg", tmp_path / "out")
    assert missing.returncode == 1 and "no such config file" in missing.output
