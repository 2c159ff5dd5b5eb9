"""Docs -> encoder windows + token alignments (array code, no per-token Python loops).

Alignment rules (documented in the README):
- subword side: a token maps to every piece whose character offsets overlap it
  (a piece spanning two spaCy tokens belongs to both), read in the token's home
  window. A token whose pieces all lie outside its home window (a piece that starts
  in the token before a window's cut, e.g. one piece for a whole ZWJ emoji sequence
  that spaCy splits) reads them in the nearest window that holds them. A token with
  no piece of its own (a whitespace token, characters the tokenizer drops) maps to
  the nearest piece before it in its window, or to the window's first special piece ([CLS]).
  Zero-width pieces (RoBERTa's lone ``Ġ`` on a double space, offsets trimmed) stay in
  the encoder input, exactly as the tokenizer made it, but are never aligned to.
- windows are budgeted by piece index: every piece that starts inside a window's
  text counts, whitespace pieces included, so a window never holds more pieces than
  its budget and never clips its last tokens.
- char side: a token maps to its own characters (codepoint offsets), always >= 1.
Rows index the doc's concatenated window outputs: window after window, specials
included, padding excluded. An alignment holds for the tokens it was made for alone: it
records their identity (``tokens``, tokenization/identity.py), which a reader compares with
the doc's tokens before it reads a row by token position.
"""

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc

from .chars import CharSpec
from .identity import key_of, token_array, token_bounds, token_key
from .subwords import SubwordSpec
from .windows import WindowSettings, home_windows


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
    # the identity of the tokens it aligns (tokenization.identity.token_key; None: made
    # before alignments recorded it, so only the token count can be checked)
    tokens: Optional[str] = None

    @property
    def n_tokens(self) -> int:
        return len(self.subword_lengths)

    def fits(self, doc: Doc) -> bool:
        """Whether its rows are the rows of ``doc``'s tokens as they are now (no identity
        recorded: only the token count is known, so it never fits)."""
        return self.tokens is not None and self.n_tokens == len(doc) and self.tokens == token_key(doc)

    @classmethod
    def empty(cls, tokens: Optional[str] = None) -> "DocAlignment":
        z = numpy.zeros((0,), dtype="int32")
        return cls(0, 0, z, z, z, z, [], tokens)


@dataclass(frozen=True)
class KeptRows:
    """The rows of one doc's states on one side that a prediction keeps (what its
    listeners read) and where its tokens find them then. ``rows``: the kept doc rows,
    ascending; ``lengths`` / ``token_rows``: each token's rows as indices into them;
    ``bounds``: the kept rows of the doc's k-th window are ``rows[bounds[k]:bounds[k + 1]]``;
    ``window_starts``: the doc row of each window's first row."""

    rows: numpy.ndarray
    lengths: numpy.ndarray
    token_rows: numpy.ndarray
    bounds: numpy.ndarray
    window_starts: numpy.ndarray

    @classmethod
    def plan(cls, align: DocAlignment, side: str, keep: str) -> "KeptRows":
        """keep = "tokens": every row a token reads; "first": each token's first row."""
        lengths = numpy.asarray(getattr(align, f"{side}_lengths"), dtype="int64")
        rows = numpy.asarray(getattr(align, f"{side}_rows"), dtype="int64")
        if keep == "first":
            rows = rows[numpy.cumsum(lengths) - lengths]
            lengths = numpy.ones_like(lengths)
        elif keep != "tokens":
            raise ValueError(f"keep must be 'tokens' or 'first', got {keep!r}")
        kept, token_rows = numpy.unique(rows, return_inverse=True)
        column = 0 if side == "subword" else 1
        starts = numpy.asarray([w[column] for w in align.window_rows], dtype="int64")
        bounds = numpy.append(numpy.searchsorted(kept, starts, side="left"), len(kept))
        return cls(kept, lengths, token_rows.reshape(-1), bounds, starts)

    def window(self, k: int) -> Tuple[slice, numpy.ndarray]:
        """Where the doc's k-th window's kept rows go, and their rows in that window."""
        target = slice(int(self.bounds[k]), int(self.bounds[k + 1]))
        return target, self.rows[target] - self.window_starts[k]

    @staticmethod
    def aligned(align: DocAlignment, kept: Dict[str, "KeptRows"]) -> DocAlignment:
        """``align`` for outputs that hold only the kept rows of the sides in ``kept``;
        the windows' specials are not kept (no ``window_rows``)."""
        changes: Dict[str, Any] = {}
        for side, plan in kept.items():
            changes[f"n_{side}_rows"] = len(plan.rows)
            changes[f"{side}_lengths"] = plan.lengths.astype("int32")
            changes[f"{side}_rows"] = plan.token_rows.astype("int32")
        return replace(align, window_rows=[], **changes) if kept else align


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
    window_settings: WindowSettings,
) -> Tuple[List[WindowInput], List[DocAlignment]]:
    """Windows for every doc (in doc order) and each doc's token alignment."""
    texts = [doc.text for doc in docs]
    tokenized = subwords.tokenize(texts) if any(len(d) for d in docs) else []
    windows: List[WindowInput] = []
    aligns: List[DocAlignment] = []
    for i, doc in enumerate(docs):
        if len(doc) == 0:
            aligns.append(DocAlignment.empty(token_key(doc)))
            continue
        ids, offsets = tokenized[i]
        doc_windows, align = _prepare_doc(i, doc, texts[i], ids, offsets, subwords, chars, window_settings)
        windows.extend(doc_windows)
        aligns.append(align)
    return windows, aligns


def _prepare_doc(
    doc_index: int,
    doc: Doc,
    text: str,
    ids: numpy.ndarray,
    offsets: numpy.ndarray,
    subwords: SubwordSpec,
    chars: CharSpec,
    window_settings: WindowSettings,
) -> Tuple[List[WindowInput], DocAlignment]:
    """One doc's encoder windows and where each of its tokens reads its rows (``text`` is
    doc.text, which spaCy builds anew on every access)."""
    n_tokens = len(doc)
    tokens = token_array(doc)
    token_starts, token_ends = token_bounds(tokens)
    piece_starts = offsets[:, 0]
    # zero-width pieces stay in the input; they get no (piece, token) pair
    piece_lengths = numpy.maximum(offsets[:, 1] - offsets[:, 0], 0)
    pair_piece, pair_token = _piece_token_pairs(len(text), token_starts, token_ends, piece_starts, piece_lengths)
    # the budget counts pieces by index: token t is charged every piece that starts
    # after the previous token's end and before its own end (whitespace pieces too),
    # an upper bound of what a window starting or ending at t holds
    pieces_before_end = numpy.searchsorted(piece_starts, token_ends, side="left")
    pieces_before_end[-1] = len(ids)  # trailing (whitespace) pieces go with the last token
    pieces_per_token = numpy.diff(pieces_before_end, prepend=0)

    piece_budget, char_budget = window_settings.budgets(
        (subwords.max_length, subwords.n_special), (chars.max_length, 2)
    )
    spans = window_settings.spans(token_starts, token_ends, pieces_per_token, piece_budget, char_budget)
    home = home_windows(n_tokens, spans)
    windows = _Windows.place(
        spans, token_starts, token_ends, piece_starts, pieces_before_end, piece_budget, char_budget
    )
    inputs = [
        WindowInput(doc_index, subwords.with_specials(ids[p0:p1]), chars.encode(text[c0:c1]), int(c0), offsets[p0:p1])
        for c0, c1, p0, p1 in zip(windows.char_start, windows.char_end, windows.piece_start, windows.piece_end)
    ]
    # where each window's outputs start in the doc's concatenated rows (its first special)
    subword_row, n_subword_rows = _starts([len(w.sub_ids) for w in inputs])
    char_row, n_char_rows = _starts([len(w.char_ids) for w in inputs])
    subword_lengths, subword_rows = _subword_rows(
        pair_piece, pair_token, home, windows, subword_row, token_starts, piece_starts, piece_lengths, subwords.prefix
    )
    char_lengths, char_rows = _char_rows(home, windows, char_row, token_starts, token_ends)
    align = DocAlignment(
        n_subword_rows=n_subword_rows,
        n_char_rows=n_char_rows,
        subword_lengths=subword_lengths.astype("int32"),
        subword_rows=subword_rows.astype("int32"),
        char_lengths=char_lengths.astype("int32"),
        char_rows=char_rows.astype("int32"),
        window_rows=[(int(s), int(c)) for s, c in zip(subword_row, char_row)],
        tokens=key_of(tokens),
    )
    return inputs, align


def _piece_token_pairs(
    n_chars: int,
    token_starts: numpy.ndarray,
    token_ends: numpy.ndarray,
    piece_starts: numpy.ndarray,
    piece_lengths: numpy.ndarray,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(piece, token) for every piece sharing a character with a token, without repeats,
    sorted by token then piece: the overlap rule of the subword side."""
    token_of_char = numpy.full(n_chars, -1, dtype="int64")  # -1 between tokens
    token_lengths = token_ends - token_starts
    token_of_char[ranges(token_starts, token_lengths)] = numpy.repeat(numpy.arange(len(token_starts)), token_lengths)
    pair_piece = numpy.repeat(numpy.arange(len(piece_starts)), piece_lengths)
    pair_token = token_of_char[ranges(piece_starts, piece_lengths)]
    on_token = pair_token >= 0
    pair_piece, pair_token = pair_piece[on_token], pair_token[on_token]
    if len(pair_piece):
        new = numpy.ones(len(pair_piece), dtype=bool)
        new[1:] = (pair_piece[1:] != pair_piece[:-1]) | (pair_token[1:] != pair_token[:-1])
        pair_piece, pair_token = pair_piece[new], pair_token[new]
        order = numpy.lexsort((pair_piece, pair_token))
        pair_piece, pair_token = pair_piece[order], pair_token[order]
    return pair_piece, pair_token


@dataclass(frozen=True)
class _Windows:
    """Where each window of one doc lies (one entry per window): its text
    [char_start, char_end) and its pieces [piece_start, piece_end)."""

    char_start: numpy.ndarray
    char_end: numpy.ndarray
    piece_start: numpy.ndarray
    piece_end: numpy.ndarray

    @classmethod
    def place(
        cls,
        spans: List[Tuple[int, int]],
        token_starts: numpy.ndarray,
        token_ends: numpy.ndarray,
        piece_starts: numpy.ndarray,
        pieces_before_end: numpy.ndarray,
        piece_budget: int,
        char_budget: int,
    ) -> "_Windows":
        """Text and pieces of each token span [t0, t1), within the budgets."""
        n_tokens, n_pieces = len(token_starts), len(piece_starts)
        first_token = numpy.array([t0 for t0, _ in spans], dtype="int64")
        last_token = numpy.array([t1 - 1 for _, t1 in spans], dtype="int64")
        char_start = token_starts[first_token]
        char_end = numpy.minimum(token_ends[last_token], char_start + char_budget)
        # a window's pieces start right after the previous token's end: the space pieces
        # in a gap between tokens go with the token after it, as the budget counted them
        piece_start = numpy.where(first_token > 0, pieces_before_end[numpy.maximum(first_token - 1, 0)], 0)
        piece_end = numpy.searchsorted(piece_starts, char_end, side="left")
        piece_end[last_token == n_tokens - 1] = n_pieces  # the last window takes the trailing pieces
        piece_end = numpy.minimum(piece_end, piece_start + piece_budget)
        return cls(char_start, char_end, piece_start, piece_end)

    def holds(self, pieces: numpy.ndarray, window: numpy.ndarray) -> numpy.ndarray:
        """Whether each window holds the piece beside it."""
        return (pieces >= self.piece_start[window]) & (pieces < self.piece_end[window])

    def nearest_holding(self, pieces: numpy.ndarray, home: numpy.ndarray) -> numpy.ndarray:
        """For each piece, the window nearest its ``home`` that holds it (-1: none does).
        Windows' piece starts and ends both grow with the window index (their tokens do),
        so the nearest one before home is the last that starts at or before the piece,
        and the nearest one after home the first that ends after it."""
        n_windows = len(self.piece_start)
        before = numpy.searchsorted(self.piece_start, pieces, side="right") - 1
        after = numpy.searchsorted(self.piece_end, pieces, side="right")
        window = numpy.where(pieces >= self.piece_end[home], after, home)
        window = numpy.where(pieces < self.piece_start[home], before, window)
        valid = (window >= 0) & (window < n_windows)
        window = numpy.where(valid, window, 0)
        return numpy.where(valid & self.holds(pieces, window), window, -1)


def _starts(sizes: List[int]) -> Tuple[numpy.ndarray, int]:
    """The start of each block when blocks of these sizes are laid end to end, and the total."""
    ends = numpy.cumsum(numpy.asarray(sizes, dtype="int64"))
    return ends - sizes, int(ends[-1]) if len(ends) else 0


def _subword_rows(
    pair_piece: numpy.ndarray,
    pair_token: numpy.ndarray,
    home: numpy.ndarray,
    windows: _Windows,
    window_row: numpy.ndarray,
    token_starts: numpy.ndarray,
    piece_starts: numpy.ndarray,
    piece_lengths: numpy.ndarray,
    prefix: int,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(rows per token, rows): the token's pieces inside its home window (``window_row``:
    each window's first subword row); a token with none there reads its pieces in the
    nearest window that holds them; a token with no piece at all reads the nearest piece
    with text before it in its home window, else that window's first special."""
    n_tokens = len(home)
    pair_window = home[pair_token]
    in_home = windows.holds(pair_piece, pair_window)
    # a token whose pieces all lie outside its home window reads them where they lie
    away = ~in_home & (numpy.bincount(pair_token[in_home], minlength=n_tokens)[pair_token] == 0)
    if away.any():
        pair_window = numpy.where(away, windows.nearest_holding(pair_piece, pair_window), pair_window)
    keep = in_home | (away & (pair_window >= 0))
    tokens, window = pair_token[keep], pair_window[keep]  # still sorted by token, then piece
    rows = window_row[window] + prefix + pair_piece[keep] - windows.piece_start[window]
    lengths = numpy.bincount(tokens, minlength=n_tokens)
    lonely = numpy.nonzero(lengths == 0)[0]
    if len(lonely):
        window = home[lonely]
        with_text = numpy.nonzero(piece_lengths > 0)[0]  # fall back on a piece that holds text
        k = numpy.searchsorted(piece_starts[with_text], token_starts[lonely], side="left") - 1
        before = with_text[numpy.maximum(k, 0)] if len(with_text) else numpy.zeros_like(k)
        before = numpy.where(k >= 0, before, -1)
        inside = windows.holds(before, window)
        fallback = numpy.where(
            inside, window_row[window] + prefix + before - windows.piece_start[window], window_row[window]
        )
        tokens = numpy.concatenate([tokens, lonely])
        rows = numpy.concatenate([rows, fallback])
        order = numpy.argsort(tokens, kind="stable")
        tokens, rows = tokens[order], rows[order]
        lengths = numpy.bincount(tokens, minlength=n_tokens)
    return lengths, rows


def _char_rows(
    home: numpy.ndarray,
    windows: _Windows,
    window_row: numpy.ndarray,
    token_starts: numpy.ndarray,
    token_ends: numpy.ndarray,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(rows per token, rows): the token's own characters inside its home window (after
    the window's first special, at ``window_row``); a token with none there reads that special."""
    first = window_row[home] + 1 + token_starts - windows.char_start[home]
    lengths = numpy.minimum(token_ends, windows.char_end[home]) - token_starts
    no_chars = lengths <= 0
    first = numpy.where(no_chars, window_row[home], first)
    lengths = numpy.where(no_chars, 1, lengths)
    return lengths, ranges(first, lengths)
