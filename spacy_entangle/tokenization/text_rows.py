"""Which row of the `entangle` output each character of ``doc.text`` reads: the
character-level alignment rule (``char_tagger`` reads one row per character through it).

Characters are Unicode codepoints, indexed like Python strings and ``token.idx``
(an emoji outside the BMP is one character; a ZWJ sequence is several). Since
``doc.text`` is the concatenation of ``token.text_with_ws``, every character is
either inside a token or the single trailing space of one. Which row a character
reads (``text_rows``):

char side
  1. a character of token t reads its own row in t's home window (the rows of
     ``align.char_rows``: the window's codepoints, in order, so character i of the
     token is row ``first + i``);
  2. the space after token t reads the next row of the same window when that
     window contains it (the window's text is contiguous: row r + 1 is the
     character after row r, up to the window's [SEP]);
  3. anything else (the tail of a token clipped by a window that is too short,
     a trailing space past its window's end) reads the row of the nearest
     preceding character that has one; a character with none before it reads its
     token's first row.
  Rule 1 and 2 are exact: the row holds the state of that very codepoint.
subword side
  every character reads its token's first piece (the space after a token: that
  token's). This is token-level: it cannot tell the pieces of a word apart, and is
  there for ablations and for side = "both" (subword row ‖ char row).
"""

import numpy
from spacy.attrs import IDX, LENGTH, SPACY
from spacy.tokens import Doc

from .alignment import DocAlignment, ranges


def text_rows(doc: Doc, align: DocAlignment, side: str = "char") -> numpy.ndarray:
    """int64 (len(doc.text),): the row of ``side``'s states that each character of
    ``doc.text`` reads (see the module docstring for the rules)."""
    n_text = len(doc.text)
    n = len(doc)
    if n_text == 0 or n == 0:
        return numpy.zeros((0,), dtype="int64")
    arr = doc.to_array([IDX, LENGTH, SPACY]).astype("int64")
    starts, lens, spaces = arr[:, 0], arr[:, 1], arr[:, 2]
    # doc.text = concat(token.text_with_ws): the token each character belongs to
    per_token = lens + spaces
    if int(per_token.sum()) != n_text:  # pragma: no cover - spaCy guarantees it
        raise ValueError("doc.text is not the concatenation of its tokens' text_with_ws")
    token_of_char = numpy.repeat(numpy.arange(n), per_token)
    if side == "subword":
        sub_lengths = numpy.asarray(align.subword_lengths, dtype="int64")
        sub_first = numpy.asarray(align.subword_rows, dtype="int64")[numpy.cumsum(sub_lengths) - sub_lengths]
        return sub_first[token_of_char]
    if side != "char":
        raise ValueError(f"side must be 'char' or 'subword', got {side!r}")
    lengths = numpy.asarray(align.char_lengths, dtype="int64")
    rows = numpy.asarray(align.char_rows, dtype="int64")
    offs = numpy.cumsum(lengths) - lengths
    first_rows = rows[offs]
    window_starts = numpy.asarray(sorted(c for _, c in align.window_rows), dtype="int64")
    # a token whose only row is its window's [CLS] has no character rows of its own
    own = ~numpy.isin(first_rows, window_starts)
    k = numpy.where(own, numpy.minimum(lens, lengths), 0)
    out = numpy.full(n_text, -1, dtype="int64")
    out[ranges(starts, k)] = rows[ranges(offs, k)]
    # rule 2: the space after a (complete) token, when its window goes on past it
    if len(window_starts):
        window_ends = numpy.append(window_starts[1:], align.n_char_rows)  # exclusive; [SEP] = end - 1
        last_rows = rows[offs + lengths - 1]
        w = numpy.searchsorted(window_starts, last_rows, side="right") - 1
        nxt = last_rows + 1
        ok = (spaces > 0) & own & (k == lens) & (nxt < window_ends[numpy.maximum(w, 0)] - 1)
        out[(starts + lens)[ok]] = nxt[ok]
    # rule 3: the nearest preceding character's row, else the token's first row
    missing = out < 0
    if missing.any():
        idx = numpy.where(~missing, numpy.arange(n_text), -1)
        idx = numpy.maximum.accumulate(idx)
        filled = numpy.where(idx >= 0, out[numpy.maximum(idx, 0)], first_rows[token_of_char])
        out = numpy.where(missing, filled, out)
    return out
