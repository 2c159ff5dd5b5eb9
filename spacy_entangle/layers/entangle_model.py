"""The thinc model: List[Doc] -> List[EntangleData], one per doc.

Windows from all docs of a batch are sorted by length and run in chunks of at
most ``max_batch_chars`` padded characters, so one long doc never dominates a
batch and short docs are not padded to its length.
"""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model, get_torch_default_device, torch2xp, xp2torch

from ..data import SIDES, EntangleData
from ..tokenization import WindowGetter, WindowInput, prepare_docs
from ..tokenization.windows import configure_windows
from .replace import replace_listener, replace_listener_cfg
from .settings import EntangleSettings
from .shim import EntangleShim

CHUNK_SPREAD = 1.25  # longest / shortest padded window in one chunk


def EntangleModel(
    settings: EntangleSettings, window_getter: Optional[WindowGetter] = None
) -> Model[List[Doc], List[EntangleData]]:
    """The thinc model of the `entangle` component (settings checked when built)."""
    return Model(
        "entangle",
        forward,
        init=init,
        shims=[EntangleShim(settings)],
        dims={"nO": settings.hidden_width},
        attrs={
            "get_windows": window_getter if window_getter is not None else configure_windows(),
            "max_batch_chars": settings.max_batch_chars,
            "sides": SIDES,
            "replace_listener": replace_listener,
            "replace_listener_cfg": replace_listener_cfg,
        },
    )


def init(model: Model, X: Any = None, Y: Any = None) -> None:
    shim: EntangleShim = model.shims[0]
    if not shim.is_built:
        shim.build_from_pretrained()
    model.set_dim("nO", shim._model.width, force=True)


def _chunks(windows: Sequence[WindowInput], budget: int, pad_len: Callable[[int], int]) -> List[List[int]]:
    """Window indices grouped by length: each group's padded area within ``budget``
    and its longest window at most ``CHUNK_SPREAD`` x (+ 16) its shortest, so short
    docs are not padded to a long neighbour's length (tweets in one batch of 64 ran
    at 2.9x their own area, 6x their attention). The outputs do not depend on the
    grouping (padding invariance)."""
    order = sorted(range(len(windows)), key=lambda i: len(windows[i].char_ids))
    chunks: List[List[int]] = []
    current: List[int] = []
    shortest = 0
    for i in order:
        length = pad_len(len(windows[i].char_ids))
        if current and (length * (len(current) + 1) > budget or length > CHUNK_SPREAD * shortest + 16):
            chunks.append(current)
            current = []
        if not current:
            shortest = length
        current.append(i)
    if current:
        chunks.append(current)
    return chunks


def _pad(seqs: List[numpy.ndarray], length: int, pad_id: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    ids = numpy.full((len(seqs), length), pad_id, dtype="int64")
    mask = numpy.zeros((len(seqs), length), dtype="int64")
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[EntangleData], Callable]:
    shim: EntangleShim = model.shims[0]
    if not shim.is_built:
        raise ValueError(
            "The entangle model is not initialized: call nlp.initialize() (or load a "
            "trained pipeline with spacy.load) before using it."
        )
    ops = model.ops
    need = tuple(model.attrs["sides"])
    need_sub, need_char = "subword" in need, "char" in need
    chars = shim.chars
    with torch.profiler.record_function("entangle.prepare"):
        windows, aligns = prepare_docs(docs, shim.subwords, chars, model.attrs["get_windows"])
        chunks = _chunks(windows, model.attrs["max_batch_chars"], chars.padded_length)
    device = get_torch_default_device()
    width = model.get_dim("nO")

    win_sub: List[Any] = [None] * len(windows)
    win_char: List[Any] = [None] * len(windows)
    keep_maps = shim.store_attention and not is_train
    win_maps: List[Any] = [None] * len(windows)
    trained: List[Tuple[List[int], Any, Any]] = []  # (chunk, S, C) kept for the backward pass
    for chunk in chunks:
        subs = [windows[i].sub_ids for i in chunk]
        chs = [windows[i].char_ids for i in chunk]
        sub_ids, sub_mask = _pad(subs, max(len(s) for s in subs), shim.subwords.pad_id)
        char_len = max(chars.padded_length(len(c)) for c in chs)
        char_ids, char_mask = _pad(chs, char_len, chars.pad_id)
        inputs = ArgsKwargs(
            args=tuple(torch.from_numpy(a).to(device) for a in (sub_ids, sub_mask, char_ids, char_mask)),
            kwargs={"need_subword": need_sub, "need_char": need_char},
        )
        (S, C), _ = shim(inputs, is_train)
        S_xp = torch2xp(S) if S is not None else None
        C_xp = torch2xp(C) if C is not None else None
        for j, i in enumerate(chunk):
            if S_xp is not None:
                win_sub[i] = S_xp[j, : len(subs[j])]
            if C_xp is not None:
                win_char[i] = C_xp[j, : len(chs[j])]
        if is_train:
            trained.append((chunk, S, C))
        if keep_maps:
            for j, i in enumerate(chunk):
                win_maps[i] = attention_maps(shim, windows[i], shim.last_attention, j, docs[windows[i].doc_index])
            shim.last_attention = None  # the padded chunk's weights: only the cut-off copies stay

    # windows are in doc order: gather each doc's rows (a copy: a doc must not keep
    # the whole padded chunk alive through a view)
    by_doc: Dict[int, List[int]] = {}
    for i, w in enumerate(windows):
        by_doc.setdefault(w.doc_index, []).append(i)
    outputs = []
    for d, align in enumerate(aligns):
        idx = by_doc.get(d, [])
        sub = _gather(ops, [win_sub[i] for i in idx], width) if need_sub else None
        char = _gather(ops, [win_char[i] for i in idx], width) if need_char else None
        maps = [win_maps[i] for i in idx] if keep_maps else None
        outputs.append(EntangleData(subword=sub, char=char, align=align, attention=maps))

    def backprop(d_outputs: List[EntangleData]) -> List[Doc]:
        # doc-level gradients -> per-window slices -> padded chunk gradients
        d_win = {"subword": [None] * len(windows), "char": [None] * len(windows)}
        for d, d_out in enumerate(d_outputs):
            for side, store in d_win.items():
                grad = getattr(d_out, side)
                if grad is None:
                    continue
                start = 0
                for i in by_doc.get(d, []):
                    n = len(windows[i].sub_ids) if side == "subword" else len(windows[i].char_ids)
                    store[i] = grad[start : start + n]
                    start += n
        # every chunk's outputs and gradients go into ONE backward call: the gradient
        # (loss) scaling of mixed precision is applied once per update, not per chunk
        tensors, grads = [], []
        for chunk, S, C in trained:
            for out, store in ((S, d_win["subword"]), (C, d_win["char"])):
                if out is None or all(store[i] is None for i in chunk):
                    continue
                dY = ops.alloc3f(*out.shape)
                for j, i in enumerate(chunk):
                    if store[i] is not None:
                        dY[j, : len(store[i])] = store[i]
                tensors.append(out)
                grads.append(xp2torch(dY, device=out.device))
        if tensors:
            shim.backward(tensors, grads)
        return []

    return outputs, backprop


def _gather(ops, parts: List[Any], width: int):
    """One doc's rows, window after window, as an array of its own."""
    if not parts:
        return ops.alloc2f(0, width)
    if len(parts) == 1:
        return parts[0].copy()
    return ops.xp.concatenate(parts, axis=0)


def attention_maps(
    shim: EntangleShim, window: WindowInput, maps: List[Any], row: int, doc: Optional[Doc] = None
) -> Dict[str, Any]:
    """One window's co-attention maps, padding cut off, labelled and placed in the doc.

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
    n_sub, n_char = len(window.sub_ids), len(window.char_ids)
    specials = {shim.chars.cls_id: "[CLS]", shim.chars.sep_id: "[SEP]"}
    start = int(window.char_start)
    char_offsets = numpy.full(n_char, -1, dtype="int64")
    char_offsets[1:-1] = numpy.arange(start, start + n_char - 2)
    piece_offsets = numpy.full((n_sub, 2), -1, dtype="int64")
    if window.piece_offsets is not None and len(window.piece_offsets):
        prefix = shim.subwords.prefix
        piece_offsets[prefix : prefix + len(window.piece_offsets)] = window.piece_offsets
    zero_width = piece_offsets[:, 1] <= piece_offsets[:, 0]
    out: Dict[str, Any] = {
        "pieces": shim.subwords.tokenizer.convert_ids_to_tokens([int(i) for i in window.sub_ids]),
        "chars": [specials.get(int(c), chr(int(c))) for c in window.char_ids],
        "start": start,
        "piece_offsets": piece_offsets,
        "char_offsets": char_offsets,
        "piece_tokens": _token_at(doc, numpy.where(zero_width, -1, piece_offsets[:, 0])),
        "char_tokens": _token_at(doc, char_offsets),
        "sub2char": [s2c[row, :n_sub, :n_char].cpu().numpy().astype("float32") for s2c, _ in maps],
        "char2sub": [c2s[row, :n_char, :n_sub].cpu().numpy().astype("float32") for _, c2s in maps],
    }
    return out


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
