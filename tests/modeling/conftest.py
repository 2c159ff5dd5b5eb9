"""Fixtures shared by the modeling tests."""

import pytest

from spacy_entangle.modeling.grown import grow_char_encoder


@pytest.fixture(scope="module")
def grown_dir(tmp_path_factory, bert_dir):
    """A tiny grown char encoder (one copied layer of the tiny BERT), saved."""
    out = tmp_path_factory.mktemp("grown")
    grow_char_encoder(bert_dir, out, k=1, char_width=32, char_heads=2, hash_buckets=512, seed=0)
    return out
