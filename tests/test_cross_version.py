"""A pipeline saved under one supported transformers loads under the other and predicts the
same: saved under 5.x (.venv-core), loaded under 4.x (.venv), and the reverse, with a BERT
WordPiece, a RoBERTa byte-level BPE and a generic PreTrainedTokenizerFast (template
post-processor). Each half runs in its venv's python (tests/_cross_version.py).

`make test-cross` runs it (a step of `make test`): it names both pythons in
ENTANGLE_CROSS_PYTHONS ("python-a,python-b"); without it the module is skipped, so the full
and core suites do not run it once more each."""

import json
import os
import subprocess
from pathlib import Path

import numpy
import pytest
from packaging.version import Version

HELPER = Path(__file__).parent / "_cross_version.py"
KINDS = ("bert", "roberta", "generic")
PYTHONS = [p for p in os.environ.get("ENTANGLE_CROSS_PYTHONS", "").split(",") if p]

pytestmark = pytest.mark.skipif(
    len(PYTHONS) != 2, reason="run by `make test-cross` (ENTANGLE_CROSS_PYTHONS names the two venvs' pythons)"
)


def _run(python: str, command: str, folder: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    run = subprocess.run(
        [python, str(HELPER), command, str(folder)],
        cwd=HELPER.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"{python} {command}:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"


def _transformers(python: str) -> str:
    code = "from importlib.metadata import version; print(version('transformers'))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def round_trips(tmp_path_factory):
    """{(saved by, loaded by): folder}: each python saves once and loads the other's saves."""
    versions = [_transformers(python) for python in PYTHONS]
    assert versions[0].split(".")[0] != versions[1].split(".")[0], f"two transformers majors expected: {versions}"
    folders = {}
    for python in PYTHONS:
        folder = tmp_path_factory.mktemp("saved_by")
        _run(python, "save", folder)
        folders[python] = folder
    out = {}
    for saver, loader in ((PYTHONS[0], PYTHONS[1]), (PYTHONS[1], PYTHONS[0])):
        _run(loader, "load", folders[saver])
        out[(_transformers(saver), _transformers(loader))] = folders[saver]
    return out


@pytest.mark.issue(34)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("direction", [0, 1], ids=["older_to_newer", "newer_to_older"])
def test_a_pipeline_saved_under_one_transformers_predicts_the_same_under_the_other(round_trips, kind, direction):
    (saved_by, loaded_by), folder = sorted(round_trips.items(), key=lambda item: Version(item[0][0]))[direction]
    saved = json.loads((folder / kind / "saved.json").read_text(encoding="utf8"))
    loaded = json.loads((folder / kind / "loaded.json").read_text(encoding="utf8"))
    assert "error" not in loaded, f"saved under transformers {saved_by}, loaded under {loaded_by}: {loaded['error']}"
    assert (saved["transformers"], loaded["transformers"]) == (saved_by, loaded_by)
    for before, after in zip(saved["docs"], loaded["docs"]):
        assert after["ents"] == before["ents"]
        assert after["tags"] == before["tags"]
        for side in ("subword", "char"):
            # same rows (the specials included), same values up to float noise between versions
            assert numpy.shape(after[side]) == numpy.shape(before[side]), side
            numpy.testing.assert_allclose(after[side], before[side], atol=1e-4)
    assert len(saved["docs"]) == len(loaded["docs"]) > 0
