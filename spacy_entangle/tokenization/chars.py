"""Character ids for the character encoder.

CANINE reads Unicode codepoints directly (CLS = U+E000, SEP = U+E001, pad = 0),
so no tokenizer is involved: Python strings index by codepoint, exactly like
spaCy's ``token.idx``, which makes the token-to-character alignment exact for
emoji, ZWJ sequences and characters outside the BMP.
"""
from dataclasses import dataclass, replace
from typing import Any

import numpy

from .. import canine



@dataclass(frozen=True)
class CharSpec:
    """How to turn a text span into character-encoder ids.

    Padding invariance at the least padding: CANINE downsamples by ``pad_multiple``
    (4) characters, convolves across the end of the sequence, and runs local
    attention in blocks of ``block`` (128) positions starting at 0. A window padded
    by at least ``min_tail`` and to a multiple of the downsampling rate gives the same
    outputs however much further a batch pads it, unless a block made only of padding
    starts inside that tail: padding attends within its block, so such a block must be
    complete. ``padded_length`` pads to a whole block only then (tweets of 100-140
    characters mostly run at 112-152 positions instead of 256). ``max_length`` leaves
    room for the padding: a padded window never exceeds the encoder's position table.
    """

    cls_id: int
    sep_id: int
    pad_id: int
    max_length: int
    pad_multiple: int = 1
    min_tail: int = 0
    block: int = 1

    @classmethod
    def from_config(cls, config: Any, max_length: int = canine.MAX_CHARS) -> "CharSpec":
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
        rate = int(getattr(config, "downsampling_rate", canine.DOWNSAMPLING))
        spec = cls(
            cls_id=canine.CLS,
            sep_id=canine.SEP,
            pad_id=int(getattr(config, "pad_token_id", 0) or 0),
            max_length=min(max_length, limit),
            pad_multiple=rate,
            min_tail=2 * rate,
            block=int(getattr(config, "local_transformer_stride", canine.BLOCK)),
        )
        # the longest window whose padded length still fits the position table
        longest = spec.max_length
        while longest > 2 and spec.padded_length(longest) > limit:
            longest -= 1
        if longest <= 2:
            raise ValueError(
                f"the char encoder's position table ({limit}) leaves no room for a window "
                f"(specials + {spec.min_tail} characters of padding tail)"
            )
        return replace(spec, max_length=longest)

    def encode(self, text: str) -> numpy.ndarray:
        """[CLS] + one id per codepoint of ``text`` + [SEP] (int64)."""
        ids = numpy.empty(len(text) + 2, dtype="int64")
        ids[0] = self.cls_id
        ids[-1] = self.sep_id
        if text:
            ids[1:-1] = numpy.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        return ids

    def padded_length(self, n: int) -> int:
        """The shortest length a window of ``n`` ids may be padded to (a batch may pad
        it further, with the same outputs)."""
        length = -(-(n + self.min_tail) // self.pad_multiple) * self.pad_multiple
        next_block = -(-n // self.block) * self.block  # the first block of padding only
        if next_block < length:
            length = -(-length // self.block) * self.block
        return length
