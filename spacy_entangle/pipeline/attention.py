"""The co-attention maps a prediction kept (``store_attention``), labelled for people:
``doc._.entangle_attention`` and ``python -m spacy_entangle explain`` read them.

The thinc layer only cuts each window's maps out of its padded chunk
(``layers.entangle_model.WindowAttention``); naming the pieces and characters and placing
them in the doc is done here, once per doc, by the component."""

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc

from ..layers.entangle_model import WindowAttention
from ..tokenization import CharSpec, SubwordSpec


def label_attention(
    maps: Sequence[Union[WindowAttention, Dict[str, Any]]], doc: Optional[Doc], subwords: SubwordSpec, chars: CharSpec
) -> List[Dict[str, Any]]:
    """One dict per window of the doc (see ``label_window``); maps labelled already stay."""
    return [label_window(m, doc, subwords, chars) if isinstance(m, WindowAttention) else m for m in maps]


def label_window(maps: WindowAttention, doc: Optional[Doc], subwords: SubwordSpec, chars: CharSpec) -> Dict[str, Any]:
    """One window's co-attention maps, labelled and placed in the doc.

    - ``pieces``: the tokenizer's strings of the window's pieces, specials included;
      ``chars``: its characters, CANINE's specials named ``[CLS]`` / ``[SEP]``;
    - ``start``: the doc character offset of the window: ``chars[1:-1]`` are
      ``doc.text[start : start + len(chars) - 2]``;
    - ``piece_offsets`` (n_pieces, 2) and ``char_offsets`` (n_chars,): doc character
      offsets (-1 for the specials); ``piece_tokens`` / ``char_tokens``: the index of the
      doc token each piece starts in / each character lies in (-1: a special, whitespace
      between tokens, a zero-width piece);
    - per module m, head-averaged: ``sub2char[m]`` (n_pieces, n_chars), which characters
      each piece reads, and ``char2sub[m]`` (n_chars, n_pieces), the reverse; float32,
      each row sums to 1 over the other side's real positions.
    """
    window = maps.window
    n_sub, n_char = len(window.sub_ids), len(window.char_ids)
    specials = {chars.cls_id: "[CLS]", chars.sep_id: "[SEP]"}
    start = int(window.char_start)
    char_offsets = numpy.full(n_char, -1, dtype="int64")
    char_offsets[1:-1] = numpy.arange(start, start + n_char - 2)
    piece_offsets = numpy.full((n_sub, 2), -1, dtype="int64")
    if window.piece_offsets is not None and len(window.piece_offsets):
        piece_offsets[subwords.prefix : subwords.prefix + len(window.piece_offsets)] = window.piece_offsets
    zero_width = piece_offsets[:, 1] <= piece_offsets[:, 0]
    return {
        "pieces": subwords.tokenizer.convert_ids_to_tokens([int(i) for i in window.sub_ids]),
        "chars": [specials.get(int(c), chr(int(c))) for c in window.char_ids],
        "start": start,
        "piece_offsets": piece_offsets,
        "char_offsets": char_offsets,
        "piece_tokens": _token_at(doc, numpy.where(zero_width, -1, piece_offsets[:, 0])),
        "char_tokens": _token_at(doc, char_offsets),
        "sub2char": maps.sub2char,
        "char2sub": maps.char2sub,
    }


def _token_at(doc: Optional[Doc], offsets: numpy.ndarray) -> numpy.ndarray:
    """The index of the doc token holding each character offset (-1: none, or < 0)."""
    found = numpy.full(len(offsets), -1, dtype="int64")
    if doc is None or len(doc) == 0:
        return found
    arr = doc.to_array([IDX, LENGTH]).astype("int64")
    starts, ends = arr[:, 0], arr[:, 0] + arr[:, 1]
    tok = numpy.searchsorted(starts, offsets, side="right") - 1
    ok = (offsets >= 0) & (tok >= 0)
    ok[ok] &= offsets[ok] < ends[tok[ok]]
    found[ok] = tok[ok]
    return found
