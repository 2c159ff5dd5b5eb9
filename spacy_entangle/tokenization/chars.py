"""Character ids for the character encoder, behind one extension point.

Every supported char encoder reads Unicode codepoints directly (CLS = U+E000, SEP = U+E001,
pad = 0), so no tokenizer is involved: Python strings index by codepoint, exactly like
spaCy's ``token.idx``, which makes the token-to-character alignment exact for emoji, ZWJ
sequences and characters outside the BMP. What differs between encoders (the padding rule,
the position limit) is a ``CharSpec`` made by a builder registered per Hugging Face
``model_type`` with ``register_char_spec``: CANINE and the grown encoder
(``spacy_entangle.modeling.grown``) are two implementations, not ``if`` branches.
"""

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict

import numpy

from .. import canine
from ..modeling.char_designs import GROWN_MODEL_TYPE

CharSpecBuilder = Callable[[Any, int], "CharSpec"]
_CHAR_SPECS: Dict[str, CharSpecBuilder] = {}


def register_char_spec(model_type: str) -> Callable[[CharSpecBuilder], CharSpecBuilder]:
    """Register ``builder(config, max_length) -> CharSpec`` for the encoders whose config
    has this ``model_type``; a second registration of the same type replaces the first."""

    def decorate(builder: CharSpecBuilder) -> CharSpecBuilder:
        _CHAR_SPECS[model_type] = builder
        return builder

    return decorate


def char_model_types() -> list:
    """The model types a char_backbone may have (sorted, for messages)."""
    return sorted(_CHAR_SPECS)


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
    An encoder that masks padding exactly (the grown one) keeps the defaults 1, 0, 1.
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
        """The spec of the registered builder for ``config.model_type``."""
        model_type = getattr(config, "model_type", None)
        builder = _CHAR_SPECS.get(model_type) if isinstance(model_type, str) else None
        if builder is None:
            raise ValueError(
                f"char_backbone must be a character encoder that reads Unicode codepoints: a "
                f"CANINE-style encoder (model_type 'canine') or one grown from a subword encoder "
                f"({GROWN_MODEL_TYPE!r}); got model_type {model_type!r}. Use google/canine-s, "
                "google/canine-c, a directory made with `python -m spacy_entangle init-backbone canine` "
                "or `pretrain-chars --init-from SUBWORD` (registered types: "
                f"{', '.join(char_model_types())})."
            )
        return builder(config, max_length)

    def fit(self, limit: int) -> "CharSpec":
        """This spec with the longest ``max_length`` whose padded window still fits a
        position table of ``limit`` entries."""
        longest = self.max_length
        while longest > 2 and self.padded_length(longest) > limit:
            longest -= 1
        if longest <= 2:
            raise ValueError(
                f"the char encoder's position table ({limit}) leaves no room for a window "
                f"(specials + {self.min_tail} characters of padding tail)"
            )
        return replace(self, max_length=longest)

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


@register_char_spec("canine")
def canine_spec(config: Any, max_length: int = canine.MAX_CHARS) -> CharSpec:
    """CANINE: downsampling by 4 with an 8-character tail, local attention blocks, a
    position table sized by the smaller of max_position_embeddings and num_hash_buckets
    (transformers sizes CANINE's character position table by the latter)."""
    limit = int(getattr(config, "max_position_embeddings", max_length))
    limit = min(limit, int(getattr(config, "num_hash_buckets", limit)))
    rate = int(getattr(config, "downsampling_rate", canine.DOWNSAMPLING))
    spec = CharSpec(
        cls_id=canine.CLS,
        sep_id=canine.SEP,
        pad_id=int(getattr(config, "pad_token_id", 0) or 0),
        max_length=min(max_length, limit),
        pad_multiple=rate,
        min_tail=2 * rate,
        block=int(getattr(config, "local_transformer_stride", canine.BLOCK)),
    )
    return spec.fit(limit)


@register_char_spec(GROWN_MODEL_TYPE)
def grown_spec(config: Any, max_length: int = canine.MAX_CHARS) -> CharSpec:
    """The grown encoder (modeling/grown.py): CANINE's specials and pad id, no padding
    rule (characters and words are masked exactly), and at most ``max_words`` ids per
    window: every id may be its own word (punctuation runs), and the words run over the
    subword encoder's position table."""
    limit = int(getattr(config, "max_words", max_length))
    spec = CharSpec(cls_id=canine.CLS, sep_id=canine.SEP, pad_id=0, max_length=min(max_length, limit))
    return spec.fit(limit)
