"""Fixtures of the tokenization tests: CANINE with its real block stride, RoBERTa with and
without trimmed offsets."""

import shutil

import pytest
from tokenizers.processors import RobertaProcessing
from transformers import AutoTokenizer

from spacy_entangle.backbone_dirs import make_random_canine


@pytest.fixture(scope="module")
def canine_128(tmp_path_factory):
    """CANINE with its real local-attention stride (128) and a 2048-position table."""
    return make_random_canine(
        tmp_path_factory.mktemp("canine128"),
        layers=1,
        width=32,
        heads=2,
        local_stride=128,
        hash_buckets=2048,
        max_chars=2048,
    )


@pytest.fixture(scope="module", params=[True, False], ids=["trim_offsets", "untrimmed"])
def roberta_trim(request, roberta_dir, tmp_path_factory):
    """The fixture RoBERTa with roberta-base's post-processor (trim_offsets=True: a
    lone space piece gets zero width) or without trimming (it covers the space, which
    belongs to no spaCy token)."""
    tok = AutoTokenizer.from_pretrained(roberta_dir)
    tok.backend_tokenizer.post_processor = RobertaProcessing(
        ("</s>", tok.sep_token_id), ("<s>", tok.cls_token_id), trim_offsets=request.param, add_prefix_space=False
    )
    out = tmp_path_factory.mktemp("roberta_trim") / "backbone"
    shutil.copytree(roberta_dir, out)
    tok.save_pretrained(out)
    return out, tok
