"""Backbone loading (modeling/backbones.py): a name that can only be a local path, or any name
the cache lacks in offline mode, fails at once with the BackboneError instead of retrying the
Hugging Face hub."""

import json
import os
import subprocess
import sys
import time

import pytest

from spacy_entangle.modeling import BackboneError, load_encoder, load_tokenizer
from spacy_entangle.modeling.backbones import _in_hub_cache, hub_offline

# times each load in a fresh interpreter where offline mode is NOT set (the test session sets it)
_TIMED = """
import json, sys, time
from spacy_entangle.modeling import load_encoder, load_tokenizer
import transformers  # imported before the clock starts: only the failing load is timed
out = []
for name in sys.argv[1:]:
    for load in (lambda: load_encoder(name, role="char"), lambda: load_tokenizer(name)):
        start = time.perf_counter()
        try:
            load()
            error = None
        except Exception as err:
            error = f"{type(err).__name__}: {err}"
        out.append({"name": name, "seconds": time.perf_counter() - start, "error": error})
print(json.dumps(out))
"""


@pytest.mark.issue(29)
def test_a_mistyped_backbone_path_fails_at_once_without_asking_the_hub(tmp_path):
    """`backbones/canie` beside an existing `backbones/` is a valid hub id too: transformers
    retried the unreachable hub five times (~30-50 s) before the same error."""
    (tmp_path / "backbones" / "canine").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    names = ["backbones/canie", "./backbones/canie", str(tmp_path / "gone" / "x"), "a/b/c"]
    run = subprocess.run(
        [sys.executable, "-c", _TIMED, *names], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(results) == 2 * len(names)
    for result in results:
        assert result["seconds"] < 2, result
        error = result["error"]
        assert error.startswith("BackboneError: Cannot load the "), error
        assert f"backbone {result['name']!r}: no such local directory" in error
        assert "the Hugging Face hub was not asked" in error
    # the typo's neighbourhood is listed
    assert "'backbones' is a local directory" in results[0]["error"]
    assert "'backbones' holds: canine" in results[0]["error"]
    assert "huggingface.co" not in run.stderr  # no retry warnings


@pytest.mark.issue(29)
def test_offline_a_name_the_cache_lacks_fails_at_once(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    for load in (lambda: load_encoder("no-such-org/no-such-model", role="subword"), lambda: load_tokenizer("bert-x")):
        with pytest.raises(BackboneError, match="not a local directory, offline mode is set .* cache does not hold it"):
            load()
    assert time.perf_counter() - start < 2


@pytest.mark.issue(29)
def test_offline_a_cached_hub_name_is_left_to_transformers(tmp_path, monkeypatch):
    """Offline mode still loads what the cache holds: the fast failure must not refuse it."""
    import huggingface_hub.constants

    snapshot = tmp_path / "models--tiny-org--tiny-bert" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--tiny-org--tiny-bert" / "refs").mkdir()
    (tmp_path / "models--tiny-org--tiny-bert" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert _in_hub_cache("tiny-org/tiny-bert")
    assert not _in_hub_cache("tiny-org/other")


@pytest.mark.parametrize(
    "hf_hub,transformers_flag,on",
    [
        ("1", None, True),
        ("yes", None, True),
        (None, "1", True),
        ("", "TRUE", True),
        ("0", "1", False),  # huggingface_hub reads HF_HUB_OFFLINE first when it is set
        (None, None, False),
        ("off", None, False),
    ],
)
def test_offline_mode_is_read_as_huggingface_hub_reads_it(monkeypatch, hf_hub, transformers_flag, on):
    for name, value in (("HF_HUB_OFFLINE", hf_hub), ("TRANSFORMERS_OFFLINE", transformers_flag)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert hub_offline() is on


@pytest.mark.parametrize("name", ["google/canine-s", "roberta-base", "FacebookAI/xlm-roberta-base"])
def test_hub_ids_are_still_asked_online(name, monkeypatch):
    """Names that can be hub ids (and no local folder of that first part) go to transformers."""
    from spacy_entangle.modeling.backbones import _only_a_path

    assert _only_a_path(name) is None


def _timed_loads(cwd, names, **env_changes) -> list:
    """Each name loaded as encoder and tokenizer in a fresh interpreter where offline mode is
    not set (the test session sets it): seconds and error per load."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(env_changes)
    run = subprocess.run(
        [sys.executable, "-c", _TIMED, *names], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def _model_folders(root) -> None:
    """Local backbones where a user keeps them, none under `backbones/` of the working directory."""
    for folder in ("project/backbones/canine-random", "project/backbones/minilm", "models/bert-tiny"):
        (root / folder).mkdir(parents=True)
        (root / folder / "config.json").write_text("{}")


def test_a_path_that_looks_like_a_hub_id_fails_within_seconds_naming_local_folders(tmp_path):
    """`backbones/canine-randmo` where there is no `backbones/` folder is a valid hub id: with the
    hub unreachable (as here) it waited 110 s on the hub's retries. One short probe decides;
    where the hub answers, transformers' own answer (no such model) comes as fast."""
    _model_folders(tmp_path)
    results = _timed_loads(tmp_path, ["backbones/canine-randmo"])
    for result in results:
        assert result["seconds"] < 10, result
        error = result["error"]
        assert error.startswith("BackboneError: Cannot load the "), error
        assert "'backbones/canine-randmo' is not a local directory" in error
        nearest = error.split("local model folders nearest that name", 1)[1]
        assert nearest.split(": ", 1)[1].startswith("project/backbones/canine-random, "), error


def test_an_unreachable_hub_is_told_from_a_missing_model(tmp_path, monkeypatch):
    """A hub that does not answer (a closed local port as HF_ENDPOINT): the error says so, at
    once, before transformers is imported or asked."""
    from spacy_entangle.modeling.backbones import check_findable

    _model_folders(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    start = time.perf_counter()
    for role in ("char", "tokenizer"):  # the probe's answer is reused for the second name
        with pytest.raises(BackboneError) as err:
            check_findable("some-org/some-model", role)
        assert "the Hugging Face hub (http://127.0.0.1:9) did not answer" in str(err.value)
        assert "its cache does not hold it" in str(err.value) and "HF_HUB_OFFLINE=1" in str(err.value)
        assert "nearest that name" in str(err.value)
    assert time.perf_counter() - start < 10


def test_the_nearest_local_model_folders_are_named_first(tmp_path, monkeypatch):
    from spacy_entangle.modeling.backbones import _nearest_model_dirs, local_model_dirs

    _model_folders(tmp_path)
    (tmp_path / ".venv" / "lib" / "x").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x" / "config.json").write_text("{}")  # environments are not searched
    monkeypatch.chdir(tmp_path)
    assert sorted(local_model_dirs()) == [
        "models/bert-tiny",
        "project/backbones/canine-random",
        "project/backbones/minilm",
    ]
    assert "project/backbones/minilm, " in _nearest_model_dirs("backbones/minlm")
    assert _nearest_model_dirs("x").split(": ", 1)[1].count(",") == 2
    monkeypatch.chdir(tmp_path / "models")
    assert "nearest that name" in _nearest_model_dirs("bert")
    monkeypatch.chdir(tmp_path / "project" / "backbones" / "minilm")
    assert "no model folder (with a config.json) lies below" in _nearest_model_dirs("bert")


def test_a_linked_model_folder_is_found_and_a_link_cycle_ends(tmp_path, monkeypatch):
    """A model folder that is a symbolic link (to a download cache, say) is named like a real
    one; a link back to an ancestor does not make the search loop."""
    from spacy_entangle.modeling.backbones import _nearest_model_dirs, local_model_dirs

    real = tmp_path / "cache" / "grown-v1"
    real.mkdir(parents=True)
    (real / "config.json").write_text("{}")
    work = tmp_path / "work"
    (work / "backbones").mkdir(parents=True)
    (work / "backbones" / "grown").symlink_to(real, target_is_directory=True)
    (work / "backbones" / "loop").symlink_to(work, target_is_directory=True)
    monkeypatch.chdir(work)
    assert "backbones/grown" in local_model_dirs()
    assert "backbones/grown" in _nearest_model_dirs("backbones/grwn")
