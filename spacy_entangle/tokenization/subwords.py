"""Subword pieces with character offsets, from a Hugging Face fast tokenizer."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from .padding import pad_rows

_PROBE = "a"  # one piece in every vocabulary we know; only used to find where the specials go
_MARK = -987654321  # a sentinel id: never a real vocabulary id (the rule of the first saves)
# the class names of a generic fast tokenizer (no model-specific class) in transformers 4 / 5
GENERIC_FAST = ("PreTrainedTokenizerFast", "TokenizersBackend")

Specials = Tuple[Tuple[int, ...], Tuple[int, ...]]


@dataclass
class SubwordSpec:
    """A fast tokenizer plus what the windowing needs to know about it.

    ``prefix``/``n_special``: how many special pieces the tokenizer adds before /
    in total around a single sequence ([CLS] x [SEP] -> 1 / 2; <s> x </s> -> 1 / 2).
    ``before``/``after``: those pieces' ids, read once from the tokenizer's own
    post-processor, so windows get the same specials as ``tokenizer(text)`` would add; a
    loaded model takes the ones it was trained with (``recorded_special_ids``).
    """

    tokenizer: Any
    max_length: int
    prefix: int
    n_special: int
    pad_id: int
    before: Tuple[int, ...] = ()
    after: Tuple[int, ...] = ()

    @classmethod
    def from_tokenizer(
        cls, tokenizer: Any, config: Any, max_length: int = 512, specials: Optional[Specials] = None
    ) -> "SubwordSpec":
        """``specials``: the (before, after) ids a saved model was trained with; None reads them
        from the tokenizer's post-processor (``special_ids``)."""
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                f"subword_backbone needs a fast (Rust) tokenizer for character offsets; "
                f"{type(tokenizer).__name__} is not one. Save the backbone with a "
                "tokenizer.json (AutoTokenizer.from_pretrained(..., use_fast=True))."
            )
        before, after = special_ids(tokenizer) if specials is None else specials
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
        """The window's pieces between the tokenizer's specials ([CLS] ids [SEP]). A window
        with neither (a whitespace-only text under a tokenizer that adds no specials) gets one
        placeholder piece, the unknown piece (else the pad id), attended: an encoder cannot run
        on an empty sequence, and the window's tokens need a row to read."""
        out = numpy.concatenate(
            [
                numpy.asarray(self.before, dtype="int64"),
                numpy.asarray(ids, dtype="int64"),
                numpy.asarray(self.after, dtype="int64"),
            ]
        )
        if len(out) == 0:
            unk = getattr(self.tokenizer, "unk_token_id", None)
            out = numpy.asarray([self.pad_id if unk is None else unk], dtype="int64")
        return out

    def padded(self, texts: Sequence[str]) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """Piece ids (N, L) of whole texts between the specials, cut to ``max_length`` and
        padded, and their mask (1 = a piece): a batch as the encoder sees windows (what the
        onnx-int8 engine calibrates on)."""
        pieces = self.tokenize(texts) if len(texts) else []
        rows = [self.with_specials(ids[: self.max_length - self.n_special]) for ids, _ in pieces]
        return pad_rows(rows, max((len(r) for r in rows), default=0), self.pad_id)


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


def legacy_special_ids(tokenizer: Any) -> Specials:
    """The specials of pipelines saved before ``versions.json`` (transformers 4 only): the
    code then asked ``build_inputs_with_special_tokens``, which a generic
    PreTrainedTokenizerFast does not override, so it added none even where the post-processor
    adds [CLS] x [SEP]. Under transformers 5 (no such method on fast tokenizers) the same rule
    is followed: none for a generic tokenizer, the post-processor's for a model's own class
    (whose 4.x method built the same ids)."""
    build = getattr(tokenizer, "build_inputs_with_special_tokens", None)
    if build is not None:
        built = list(build([_MARK]))
        at = built.index(_MARK)
        return tuple(built[:at]), tuple(built[at + 1 :])
    if type(tokenizer).__name__ in GENERIC_FAST:
        return (), ()
    return special_ids(tokenizer)


def specials_record(before: Sequence[int], after: Sequence[int], tokenizer: Any) -> Dict[str, Any]:
    """What a saved model records of the specials it was trained with: ids and their pieces."""
    return {
        "before": [int(i) for i in before],
        "after": [int(i) for i in after],
        "before_pieces": tokenizer.convert_ids_to_tokens([int(i) for i in before]),
        "after_pieces": tokenizer.convert_ids_to_tokens([int(i) for i in after]),
    }


def recorded_special_ids(record: Dict[str, Any], tokenizer: Any, vocab_size: Optional[int] = None) -> Specials:
    """The specials a saved model records (``specials_record``), checked against the saved
    tokenizer and the encoder's vocabulary: ids it does not have, or that now name other pieces,
    cannot be honoured, and running the model with other specials would change its predictions
    silently."""
    try:
        before = tuple(int(i) for i in record["before"])
        after = tuple(int(i) for i in record["after"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the record of the special pieces cannot be read: {type(err).__name__}: {err}") from err
    ids = before + after
    size = len(tokenizer) if vocab_size is None else min(len(tokenizer), vocab_size)
    outside = [i for i in ids if not 0 <= i < size]
    if outside:
        raise ValueError(
            f"the model was trained with the special piece ids {list(before)} x {list(after)}, but "
            f"{outside} are outside the saved tokenizer's / encoder's vocabulary (size {size}): "
            "the model cannot be run as it was trained"
        )
    pieces = (record.get("before_pieces"), record.get("after_pieces"))
    now = (tokenizer.convert_ids_to_tokens(list(before)), tokenizer.convert_ids_to_tokens(list(after)))
    if pieces != (None, None) and [list(p or []) for p in pieces] != [list(p) for p in now]:
        raise ValueError(
            f"the model was trained with the special pieces {pieces[0]} x {pieces[1]} (ids {list(before)} x "
            f"{list(after)}), but the saved tokenizer maps those ids to {now[0]} x {now[1]}: "
            "the model cannot be run as it was trained"
        )
    return before, after


def portable_tokenizer_config(data: bytes) -> bytes:
    """tokenizer_config.json as every supported transformers reads it: 5.x names a generic
    fast tokenizer's class "TokenizersBackend", which 4.x refuses; "PreTrainedTokenizerFast"
    loads the same tokenizer.json in both (5.x maps it to TokenizersBackend). Model-specific
    classes (BertTokenizer, RobertaTokenizer, ...) have one name in both and stay as written."""
    try:
        config = json.loads(data.decode("utf8"))
    except ValueError:  # not JSON (UnicodeDecodeError is one too): left for the tokenizer's error
        return data
    if not isinstance(config, dict) or config.get("tokenizer_class") != "TokenizersBackend":
        return data
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    return (json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf8")


def make_portable(directory: Union[str, Path]) -> None:
    """Rewrite ``directory``'s tokenizer_config.json in place with ``portable_tokenizer_config``."""
    path = Path(directory) / "tokenizer_config.json"
    if path.is_file():
        data = path.read_bytes()
        portable = portable_tokenizer_config(data)
        if portable != data:
            path.write_bytes(portable)


_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert", "longformer", "xlm-roberta-xl", "data2vec-text"}
