"""Subword pieces with character offsets, from a Hugging Face fast tokenizer."""
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import numpy

_MARK = -987654321  # a sentinel id: never a real vocabulary id


@dataclass
class SubwordSpec:
    """A fast tokenizer plus what the windowing needs to know about it.

    ``prefix``/``n_special``: how many special pieces the tokenizer adds before /
    in total around a single sequence ([CLS] x [SEP] -> 1 / 2; <s> x </s> -> 1 / 2).
    """

    tokenizer: Any
    max_length: int
    prefix: int
    n_special: int
    pad_id: int

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, config: Any, max_length: int = 512) -> "SubwordSpec":
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                f"subword_backbone needs a fast (Rust) tokenizer for character offsets; "
                f"{type(tokenizer).__name__} is not one. Save the backbone with a "
                "tokenizer.json (AutoTokenizer.from_pretrained(..., use_fast=True))."
            )
        built = tokenizer.build_inputs_with_special_tokens([_MARK])
        prefix = built.index(_MARK)
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
            prefix=prefix,
            n_special=len(built) - 1,
            pad_id=int(pad_id),
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
        return numpy.asarray(
            self.tokenizer.build_inputs_with_special_tokens(ids.tolist()), dtype="int64"
        )


_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert", "longformer", "xlm-roberta-xl", "data2vec-text"}
