"""Character ids for the character encoder.

CANINE reads Unicode codepoints directly (CLS = U+E000, SEP = U+E001, pad = 0),
so no tokenizer is involved: Python strings index by codepoint, exactly like
spaCy's ``token.idx``, which makes the token-to-character alignment exact for
emoji, ZWJ sequences and characters outside the BMP.
"""
from dataclasses import dataclass
from typing import Any

import numpy

CANINE_CLS = 0xE000
CANINE_SEP = 0xE001


@dataclass(frozen=True)
class CharSpec:
    """How to turn a text span into character-encoder ids.

    pad_multiple / min_tail: CANINE downsamples by 4 and runs local attention in
    blocks of ``local_transformer_stride``; padding a window by at least
    ``min_tail`` and to a multiple of the block size makes its outputs independent
    of how much further it is padded inside a batch (padding invariance).
    """

    cls_id: int
    sep_id: int
    pad_id: int
    max_length: int
    pad_multiple: int = 1
    min_tail: int = 0

    @classmethod
    def from_config(cls, config: Any, max_length: int = 2048) -> "CharSpec":
        model_type = getattr(config, "model_type", None)
        if model_type != "canine":
            raise ValueError(
                f"char_backbone must be a CANINE-style encoder that reads Unicode "
                f"codepoints (model_type 'canine'); got model_type {model_type!r}. "
                "Use google/canine-s, google/canine-c, or a directory made with "
                "`python -m spacy_entangle init-backbone canine`."
            )
        limit = int(getattr(config, "max_position_embeddings", max_length))
        # transformers' CANINE sizes its character position table by num_hash_buckets
        limit = min(limit, int(getattr(config, "num_hash_buckets", limit)))
        return cls(
            cls_id=CANINE_CLS,
            sep_id=CANINE_SEP,
            pad_id=int(getattr(config, "pad_token_id", 0) or 0),
            max_length=min(max_length, limit),
            pad_multiple=int(getattr(config, "local_transformer_stride", 128)),
            min_tail=2 * int(getattr(config, "downsampling_rate", 4)),
        )

    def encode(self, text: str) -> numpy.ndarray:
        """[CLS] + one id per codepoint of ``text`` + [SEP] (int64)."""
        ids = numpy.empty(len(text) + 2, dtype="int64")
        ids[0] = self.cls_id
        ids[-1] = self.sep_id
        if text:
            ids[1:-1] = numpy.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        return ids

    def padded_length(self, n: int) -> int:
        """The length a window of ``n`` ids is padded to, whatever the batch."""
        n = n + self.min_tail
        return -(-n // self.pad_multiple) * self.pad_multiple
