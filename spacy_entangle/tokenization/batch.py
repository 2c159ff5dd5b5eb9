"""Docs -> encoder windows + token alignments (array code, no per-token Python loops).

Alignment rules (documented in the README):
- subword side: a token maps to every piece whose character offsets overlap it
  (a piece spanning two spaCy tokens belongs to both). A token with no piece of its
  own (a whitespace token, characters the tokenizer drops) maps to the nearest
  piece before it in its window, or to the window's first special piece ([CLS]).
  Zero-width pieces (RoBERTa's lone ``Ġ`` on a double space, offsets trimmed) stay in
  the encoder input, exactly as the tokenizer made it, but are never aligned to.
- windows are budgeted by piece index: every piece that starts inside a window's
  text counts, whitespace pieces included, so a window never holds more pieces than
  its budget and never clips its last tokens.
- char side: a token maps to its own characters (codepoint offsets), always >= 1.
Rows index the doc's concatenated window outputs: window after window, specials
included, padding excluded.
"""
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc

from .chars import CharSpec
from .subwords import SubwordSpec
from .windows import WindowGetter, home_windows


@dataclass
class WindowInput:
    """One encoder input: the same text span as subword ids and as char ids."""

    doc_index: int
    sub_ids: numpy.ndarray
    char_ids: numpy.ndarray
    # where it sits in the doc (labels of the co-attention maps, ``store_attention``):
    # char_ids[1:-1] are doc.text[char_start : char_start + len(char_ids) - 2]; piece_offsets
    # (n_pieces, 2) are the doc character offsets of the pieces between the specials
    char_start: int = 0
    piece_offsets: Optional[numpy.ndarray] = None


@dataclass
class DocAlignment:
    """Where each token of one doc reads its rows in that doc's outputs."""

    n_subword_rows: int
    n_char_rows: int
    subword_lengths: numpy.ndarray  # (n_tokens,) int32, each >= 1
    subword_rows: numpy.ndarray  # (sum(lengths),) int32, first piece first
    char_lengths: numpy.ndarray
    char_rows: numpy.ndarray
    window_rows: List[Tuple[int, int]] = field(default_factory=list)  # (sub, char) row of each window's first special

    @classmethod
    def empty(cls) -> "DocAlignment":
        z = numpy.zeros((0,), dtype="int32")
        return cls(0, 0, z, z, z, z, [])


def ranges(starts: numpy.ndarray, lengths: numpy.ndarray) -> numpy.ndarray:
    """Concatenated aranges [s, s + n) for each (s, n)."""
    lengths = numpy.asarray(lengths, dtype="int64")
    total = int(lengths.sum())
    if total == 0:
        return numpy.zeros((0,), dtype="int64")
    excl = numpy.cumsum(lengths) - lengths
    return numpy.repeat(numpy.asarray(starts, dtype="int64") - excl, lengths) + numpy.arange(total)


def prepare_docs(
    docs: Sequence[Doc],
    subwords: SubwordSpec,
    chars: CharSpec,
    get_windows: WindowGetter,
) -> Tuple[List[WindowInput], List[DocAlignment]]:
    """Windows for every doc (in doc order) and each doc's token alignment."""
    texts = [doc.text for doc in docs]
    tokenized = subwords.tokenize(texts) if any(len(d) for d in docs) else []
    windows: List[WindowInput] = []
    aligns: List[DocAlignment] = []
    for i, doc in enumerate(docs):
        if len(doc) == 0:
            aligns.append(DocAlignment.empty())
            continue
        ids, offsets = tokenized[i]
        doc_windows, align = _prepare_doc(i, doc, ids, offsets, subwords, chars, get_windows)
        windows.extend(doc_windows)
        aligns.append(align)
    return windows, aligns


def _prepare_doc(
    doc_index: int,
    doc: Doc,
    ids: numpy.ndarray,
    offsets: numpy.ndarray,
    subwords: SubwordSpec,
    chars: CharSpec,
    get_windows: WindowGetter,
) -> Tuple[List[WindowInput], DocAlignment]:
    text = doc.text
    n = len(doc)
    arr = doc.to_array([IDX, LENGTH]).astype("int64")
    starts, lens = arr[:, 0], arr[:, 1]
    ends = starts + lens
    # zero-width pieces stay in the input; they get no (piece, token) pair below
    plen = numpy.maximum(offsets[:, 1] - offsets[:, 0], 0)
    piece_starts = offsets[:, 0]
    # char -> token (-1 between tokens)
    c2t = numpy.full(len(text), -1, dtype="int64")
    c2t[ranges(starts, lens)] = numpy.repeat(numpy.arange(n), lens)
    # (piece, token) pairs, deduplicated, sorted by token then piece
    pair_piece = numpy.repeat(numpy.arange(len(ids)), plen)
    pair_tok = c2t[ranges(piece_starts, plen)]
    ok = pair_tok >= 0
    pair_piece, pair_tok = pair_piece[ok], pair_tok[ok]
    if len(pair_piece):
        new = numpy.ones(len(pair_piece), dtype=bool)
        new[1:] = (pair_piece[1:] != pair_piece[:-1]) | (pair_tok[1:] != pair_tok[:-1])
        pair_piece, pair_tok = pair_piece[new], pair_tok[new]
        order = numpy.lexsort((pair_piece, pair_tok))
        pair_piece, pair_tok = pair_piece[order], pair_tok[order]
    # the budget counts pieces by index: token t is charged every piece that starts
    # after the previous token's end and before its own end (whitespace pieces too),
    # an upper bound of what a window starting or ending at t holds
    pieces_before_end = numpy.searchsorted(piece_starts, ends, side="left")
    pieces_before_end[-1] = len(ids)  # trailing (whitespace) pieces go with the last token
    pieces_per_token = numpy.diff(pieces_before_end, prepend=0)

    piece_budget, char_budget = get_windows.budgets(
        (subwords.max_length, subwords.n_special), (chars.max_length, 2)
    )
    spans = get_windows.spans(starts, ends, pieces_per_token, piece_budget, char_budget)
    home = home_windows(n, spans)

    n_w = len(spans)
    cs = numpy.array([starts[t0] for t0, _ in spans], dtype="int64")
    ce = numpy.array([min(ends[t1 - 1], starts[t0] + char_budget) for t0, t1 in spans], dtype="int64")
    # a window's pieces start right after the previous token's end: the space pieces
    # in a gap between tokens go with the token after it, as the budget counted them
    first_tok = numpy.array([t0 for t0, _ in spans], dtype="int64")
    p0 = numpy.where(first_tok > 0, pieces_before_end[numpy.maximum(first_tok - 1, 0)], 0)
    p1 = numpy.searchsorted(piece_starts, ce, side="left")
    p1[[t1 == n for _, t1 in spans]] = len(ids)  # the last window takes the trailing pieces
    p1 = numpy.minimum(p1, p0 + piece_budget)
    window_inputs = []
    sub_off = numpy.zeros(n_w, dtype="int64")
    char_off = numpy.zeros(n_w, dtype="int64")
    s_total = c_total = 0
    for w in range(n_w):
        sub_ids = subwords.with_specials(ids[p0[w] : p1[w]])
        char_ids = chars.encode(text[cs[w] : ce[w]])
        window_inputs.append(
            WindowInput(doc_index, sub_ids, char_ids, int(cs[w]), offsets[p0[w] : p1[w]])
        )
        sub_off[w], char_off[w] = s_total, c_total
        s_total += len(sub_ids)
        c_total += len(char_ids)

    # subword rows: pairs whose piece lies in the token's home window
    pw = home[pair_tok]
    valid = (pair_piece >= p0[pw]) & (pair_piece < p1[pw])
    tok_a = pair_tok[valid]
    rows_a = sub_off[pw[valid]] + subwords.prefix + pair_piece[valid] - p0[pw[valid]]
    sub_lengths = numpy.bincount(tok_a, minlength=n)
    lonely = numpy.nonzero(sub_lengths == 0)[0]
    if len(lonely):
        lw = home[lonely]
        wide = numpy.nonzero(plen > 0)[0]  # fall back on a piece that holds text
        k = numpy.searchsorted(piece_starts[wide], starts[lonely], side="left") - 1
        before = wide[numpy.maximum(k, 0)] if len(wide) else numpy.zeros_like(k)
        before = numpy.where(k >= 0, before, -1)
        inside = (before >= p0[lw]) & (before < p1[lw])
        rows_b = numpy.where(inside, sub_off[lw] + subwords.prefix + before - p0[lw], sub_off[lw])
        tok_all = numpy.concatenate([tok_a, lonely])
        rows_all = numpy.concatenate([rows_a, rows_b])
        order = numpy.argsort(tok_all, kind="stable")
        tok_a, rows_a = tok_all[order], rows_all[order]
        sub_lengths = numpy.bincount(tok_a, minlength=n)

    # char rows: the token's own characters inside its home window
    cw = home
    first = char_off[cw] + 1 + starts - cs[cw]
    clen = numpy.minimum(ends, ce[cw]) - starts
    no_chars = clen <= 0
    first = numpy.where(no_chars, char_off[cw], first)
    clen = numpy.where(no_chars, 1, clen)
    char_rows = ranges(first, clen)

    align = DocAlignment(
        n_subword_rows=s_total,
        n_char_rows=c_total,
        subword_lengths=sub_lengths.astype("int32"),
        subword_rows=rows_a.astype("int32"),
        char_lengths=clen.astype("int32"),
        char_rows=char_rows.astype("int32"),
        window_rows=[(int(s), int(c)) for s, c in zip(sub_off, char_off)],
    )
    return window_inputs, align
