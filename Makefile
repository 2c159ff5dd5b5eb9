# The two set-up commands of the README:
#   make wnut   - the main job: train, evaluate, package and install en_entangle_wnut (CPU preset)
#   make test   - the test suite
# Both create the virtual environment .venv first if it is missing.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
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

.PHONY: venv test wnut clean

$(BIN)/.installed: setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
	$(BIN)/pip install -q -e ".[test,project,ray]"
	touch $@

venv: $(BIN)/.installed

test: venv
	$(BIN)/python -m pytest -q -p no:cacheprovider

wnut: venv
	cd project && PATH="$(abspath $(BIN)):$$PATH" python -m weasel run all . $(if $(WNUT17_DIR),--vars.wnut17_dir $(WNUT17_DIR),) $(if $(TWEETS_DIR),--vars.tweets_dir $(TWEETS_DIR),)

clean:
	rm -rf $(VENV) project/backbones project/corpus project/training project/metrics project/packages
