"""Subword pieces with character offsets, from a Hugging Face fast tokenizer."""

from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import numpy

_PROBE = "a"  # one piece in every vocabulary we know; only used to find where the specials go


@dataclass
class SubwordSpec:
    """A fast tokenizer plus what the windowing needs to know about it.

    ``prefix``/``n_special``: how many special pieces the tokenizer adds before /
    in total around a single sequence ([CLS] x [SEP] -> 1 / 2; <s> x </s> -> 1 / 2).
    ``before``/``after``: those pieces' ids, read once from the tokenizer's own
    post-processor, so windows get the same specials as ``tokenizer(text)`` would add.
    """

    tokenizer: Any
    max_length: int
    prefix: int
    n_special: int
    pad_id: int
    before: Tuple[int, ...] = ()
    after: Tuple[int, ...] = ()

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, config: Any, max_length: int = 512) -> "SubwordSpec":
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                f"subword_backbone needs a fast (Rust) tokenizer for character offsets; "
                f"{type(tokenizer).__name__} is not one. Save the backbone with a "
                "tokenizer.json (AutoTokenizer.from_pretrained(..., use_fast=True))."
            )
        before, after = special_ids(tokenizer)
        limits = [max_length]
        model_max = getattr(tokenizer, "model_max_length", None)
        if model_max is not None and model_max < 100_000:
            limits.append(int(model_max))
        positions = getattr(config, "max_position_embeddings", None)
        if positions:
            # RoBERTa-style position ids start after the padding index.
            offset = (config.pad_token_id + 1) if config.model_type in _OFFSET_POSITIONS else 0
            limits.append(int(positions) - offset)
        pad_id = tokenizer.pad_token_id
        if pad_id is None:
            pad_id = 0
        return cls(
            tokenizer=tokenizer,
            max_length=min(limits),
            prefix=len(before),
            n_special=len(before) + len(after),
            pad_id=int(pad_id),
            before=before,
            after=after,
        )

    def tokenize(self, texts: Sequence[str]) -> List[Tuple[numpy.ndarray, numpy.ndarray]]:
        """Piece ids and (start, end) character offsets for each whole text, no specials."""
        enc = self.tokenizer(
            list(texts),
            add_special_tokens=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        out = []
        for ids, offsets in zip(enc["input_ids"], enc["offset_mapping"]):
            out.append(
                (
                    numpy.asarray(ids, dtype="int64"),
                    numpy.asarray(offsets, dtype="int64").reshape(-1, 2),
                )
            )
        return out

    def with_specials(self, ids: numpy.ndarray) -> numpy.ndarray:
        """The window's pieces between the tokenizer's specials ([CLS] ids [SEP])."""
        return numpy.concatenate(
            [
                numpy.asarray(self.before, dtype="int64"),
                numpy.asarray(ids, dtype="int64"),
                numpy.asarray(self.after, dtype="int64"),
            ]
        )


def special_ids(tokenizer: Any) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """The ids the tokenizer puts before and after one sequence, read by encoding a probe
    with and without specials: this asks the post-processor itself, which works across
    transformers versions (5.x dropped ``build_inputs_with_special_tokens`` from fast
    tokenizers) and for any single-sequence template, not only [CLS] x [SEP]."""
    bare = tokenizer(_PROBE, add_special_tokens=False, verbose=False)["input_ids"]
    full = tokenizer(_PROBE, add_special_tokens=True, verbose=False)["input_ids"]
    n = len(bare)
    for start in range(len(full) - n + 1):
        if n and full[start : start + n] == bare:
            return tuple(full[:start]), tuple(full[start + n :])
    raise ValueError(
        f"cannot tell where {type(tokenizer).__name__} puts its special tokens: {_PROBE!r} encodes "
        f"to {bare} without them and {full} with them"
    )


_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert", "longformer", "xlm-roberta-xl", "data2vec-text"}
