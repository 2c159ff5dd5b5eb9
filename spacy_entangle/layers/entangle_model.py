"""The thinc model: List[Doc] -> List[EntangleData], one per doc.

Windows from all docs of a batch are sorted by length and run in chunks of at
most ``max_batch_chars`` padded characters, so one long doc never dominates a
batch and short docs are not padded to its length.

At prediction, ``keep_rows`` (layers/contract.py; set by the `entangle` component from what its
listeners read) may ask for fewer rows than every window's states: "tokens" keeps each
token's rows, "first" each token's first row. Each chunk's rows are then gathered into
the docs' outputs as soon as it has run, and its full states freed: memory is bounded by
a chunk, not by the document (a 1M-character doc held every window's states twice).
"""

import ctypes
import ctypes.util
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy
import torch
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model, Ops, get_torch_default_device, torch2xp, xp2torch
from thinc.types import Floats2d, Floats3d

from ..data import SIDES, EntangleData
from ..tokenization import WindowInput, WindowSettings, prepare_docs
from ..tokenization.alignment import DocAlignment, KeptRows
from ..tokenization.padding import pad_rows
from ..tokenization.windows import configure_windows
from .contract import get_keep_rows, get_sides
from .replace import replace_listener, replace_listener_cfg
from .settings import EntangleSettings
from .shim import NOT_INITIALIZED, EntangleShim

CHUNK_SPREAD = 1.25  # longest / shortest padded window (in characters) in one chunk
# which rows of each window a prediction keeps: what the listeners read ("first": each
# token's first row, "tokens": all its rows) or every row ("all": the states as computed)
LONG_BATCH = 4  # chunks' worth of characters from which a prediction returns freed memory per chunk


def EntangleModel(
    settings: EntangleSettings, window_settings: Optional[WindowSettings] = None
) -> Model[List[Doc], List[EntangleData]]:
    """The thinc model of the `entangle` component (settings checked when built)."""
    return Model(
        "entangle",
        forward,
        init=init,
        shims=[EntangleShim(settings)],
        dims={"nO": settings.hidden_width},
        attrs={
            "window_settings": window_settings if window_settings is not None else configure_windows(),
            "sides": SIDES,
            "replace_listener": replace_listener,
            "replace_listener_cfg": replace_listener_cfg,
            "keep_rows": "all",
        },
    )


def entangle_shim(model: Model) -> EntangleShim:
    """The model's shim, typed (thinc types ``model.shims`` as plain Shims)."""
    return cast(EntangleShim, model.shims[0])


def init(model: Model, X: Any = None, Y: Any = None) -> None:
    shim = entangle_shim(model)
    if not shim.is_built:
        shim.build_from_pretrained()
    model.set_dim("nO", shim._model.width, force=True)


def _chunks(windows: Sequence[WindowInput], budget: int, pad_len: Callable[[int], int]) -> List[List[int]]:
    """Window indices grouped by length: each group's padded character area within
    ``budget`` and its longest window at most ``CHUNK_SPREAD`` x (+ 16) its shortest, so
    short docs are not padded to a long neighbour's length (tweets in one batch of 64 ran
    at 2.9x their own area, 6x their attention). A group of similar character lengths is
    cut into chunks in the order of its windows' pieces: a long doc's windows are all about
    as long in characters but not in pieces, and cut in character order its subword side
    ran 18% padding (3% so). The float modes' outputs do not depend on the grouping (padding
    invariance); the int8 modes' a little (they quantize activations per batch)."""
    chars = [pad_len(len(w.char_ids)) for w in windows]
    pieces = [len(w.sub_ids) for w in windows]
    chunks: List[List[int]] = []
    for group in _similar_lengths(sorted(range(len(windows)), key=chars.__getitem__), chars):
        current: List[int] = []
        longest = 0
        for i in sorted(group, key=pieces.__getitem__):
            if current and max(longest, chars[i]) * (len(current) + 1) > budget:
                chunks.append(current)
                current, longest = [], 0
            current.append(i)
            longest = max(longest, chars[i])
        chunks.append(current)
    return chunks


def _similar_lengths(order: List[int], lengths: List[int]) -> List[List[int]]:
    """``order`` (indices by ascending length) cut where a length exceeds ``CHUNK_SPREAD``
    x (+ 16) the first of its group."""
    groups: List[List[int]] = []
    for i in order:
        if not groups or lengths[i] > CHUNK_SPREAD * lengths[groups[-1][0]] + 16:
            groups.append([])
        groups[-1].append(i)
    return groups


@dataclass
class WindowAttention:
    """One window's co-attention maps as computed (store_attention), padding cut off: per
    module, head-averaged, ``sub2char`` (n_pieces, n_chars) and ``char2sub`` (n_chars,
    n_pieces). The component labels them for ``doc._.entangle_attention``
    (pipeline/attention.py)."""

    window: WindowInput
    sub2char: List[numpy.ndarray]
    char2sub: List[numpy.ndarray]


@dataclass
class _Chunk:
    """One padded chunk of windows as the encoder saw it, kept for the backward pass."""

    windows: List[int]
    subword: Optional[torch.Tensor]
    char: Optional[torch.Tensor]


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[EntangleData], Callable]:
    """Prepare the windows, run them chunk by chunk, regroup the rows per doc."""
    shim = _built_shim(model)
    need = get_sides(model)
    with torch.profiler.record_function("entangle.prepare"):
        subwords, chars = shim.built_specs()
        windows, aligns = prepare_docs(docs, subwords, chars, model.attrs["window_settings"])
        # the shim's settings: those of the config loaded with (model.attrs are the saved ones)
        chunks = _chunks(windows, shim.settings.max_batch_chars, chars.padded_length)
    keep_maps = shim.store_attention and not is_train
    keep_rows = get_keep_rows(model)
    if not is_train and not keep_maps and keep_rows != "all":
        return _predict_kept(model, shim, windows, aligns, chunks, need, keep_rows), _no_backprop
    rows: Dict[str, List[Any]] = {side: [None] * len(windows) for side in SIDES}
    maps: List[Optional[WindowAttention]] = [None] * len(windows)
    ran: List[_Chunk] = []
    backward: Optional[Callable] = None
    for chunk in chunks:
        ran_chunk, backward = _run_chunk(shim, windows, chunk, need, is_train)
        _cut_rows(ran_chunk, windows, rows)
        if keep_maps:
            _cut_maps(shim, windows, chunk, maps)
        if is_train:
            ran.append(ran_chunk)
    outputs = _per_doc(model, windows, aligns, rows, maps if keep_maps else None, need)

    def backprop(d_outputs: List[EntangleData]) -> List[Doc]:
        if backward is not None:
            _backward(model.ops, windows, ran, d_outputs, backward)
        return []

    return outputs, backprop


def _no_backprop(d_outputs: List[EntangleData]) -> List[Doc]:
    return []


def _predict_kept(
    model: Model,
    shim: EntangleShim,
    windows: Sequence[WindowInput],
    aligns: Sequence[DocAlignment],
    chunks: List[List[int]],
    need: Sequence[str],
    keep_rows: str,
) -> List[EntangleData]:
    """Prediction that keeps only the rows the listeners read: each chunk's kept rows are
    copied into the docs' arrays right after it runs, then its states are dropped."""
    ops, width = model.ops, model.get_dim("nO")
    by_doc = _windows_by_doc(windows)
    kept = {side: [KeptRows.plan(align, side, keep_rows) for align in aligns] for side in need}
    out = {side: [ops.alloc2f(len(plan.rows), width, zeros=False) for plan in plans] for side, plans in kept.items()}
    place = {i: (d, k) for d, idx in by_doc.items() for k, i in enumerate(idx)}  # window -> (doc, k-th of it)
    # a batch of many chunks' worth (a long doc) hands each chunk's memory back; a batch of
    # tweets is not worth the heap walks
    long_batch = sum(len(w.char_ids) for w in windows) > LONG_BATCH * shim.settings.max_batch_chars
    for chunk in chunks:
        # per side, each window's kept rows (the model returns only those, in this order)
        sources = {side: [kept[side][place[i][0]].window(place[i][1]) for i in chunk] for side in kept}
        rows = {side: _rows_tensor([source for _, source in parts]) for side, parts in sources.items()}
        ran, _ = _run_chunk(shim, windows, chunk, need, False, rows)
        for side, states in (("subword", ran.subword), ("char", ran.char)):
            if states is not None and side in out:
                _copy_kept(cast(Floats3d, torch2xp(states)), sources[side], [out[side][place[i][0]] for i in chunk])
        del ran, states
        if long_batch:
            _return_freed_memory()
    return [
        EntangleData(
            subword=out["subword"][d] if "subword" in out else None,
            char=out["char"][d] if "char" in out else None,
            align=KeptRows.aligned(align, {side: plans[d] for side, plans in kept.items()}),
        )
        for d, align in enumerate(aligns)
    ]


def _copy_kept(states: Floats3d, sources: List[Tuple[slice, numpy.ndarray]], targets: List[Floats2d]) -> None:
    """Each window's kept rows (the chunk's output: (windows, kept rows, width)) into its doc's array."""
    for j, ((target, source), doc_rows) in enumerate(zip(sources, targets)):
        if len(source):
            doc_rows[target] = states[j, : len(source)]


@cache
def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's malloc_trim (None elsewhere)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _return_freed_memory() -> None:
    """Give a chunk's freed states back to the system. glibc keeps them in its heap (its
    mmap threshold grows with the first large block freed), so a long doc's RSS grew with
    its length (+630 MB at 90,000 chars) though only the kept rows stay alive."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _rows_tensor(sources: List[numpy.ndarray]) -> torch.Tensor:
    """(windows, most kept rows) positions, padded with row 0 (computed, never read)."""
    rows = numpy.zeros((len(sources), max([len(s) for s in sources] + [1])), dtype="int64")
    for j, source in enumerate(sources):
        rows[j, : len(source)] = source
    return torch.from_numpy(rows).to(get_torch_default_device())


def _built_shim(model: Model) -> EntangleShim:
    shim = entangle_shim(model)
    if not shim.is_built:
        raise ValueError(NOT_INITIALIZED)
    return shim


def _run_chunk(
    shim: EntangleShim,
    windows: Sequence[WindowInput],
    chunk: List[int],
    need: Sequence[str],
    is_train: bool,
    rows: Optional[Dict[str, torch.Tensor]] = None,
) -> Tuple[_Chunk, Callable]:
    """One chunk of windows padded and run through the encoder; the shim's backprop.
    rows: per side, (windows, K) positions: that side's output is then those rows only."""
    subs = [windows[i].sub_ids for i in chunk]
    chs = [windows[i].char_ids for i in chunk]
    subwords, chars = shim.built_specs()
    sub_ids, sub_mask = pad_rows(subs, max(len(s) for s in subs), subwords.pad_id)
    char_ids, char_mask = pad_rows(chs, max(chars.padded_length(len(c)) for c in chs), chars.pad_id)
    device = get_torch_default_device()
    inputs = ArgsKwargs(
        args=tuple(torch.from_numpy(a).to(device) for a in (sub_ids, sub_mask, char_ids, char_mask)),
        kwargs={
            "need_subword": "subword" in need,
            "need_char": "char" in need,
            **{f"{'sub' if side == 'subword' else side}_rows": r for side, r in (rows or {}).items()},
        },
    )
    (S, C), backward = shim(inputs, is_train)
    return _Chunk(chunk, S, C), backward


def _cut_rows(chunk: _Chunk, windows: Sequence[WindowInput], rows: Dict[str, List[Any]]) -> None:
    """Each window's real rows of the padded chunk, per side (views, as thinc arrays)."""
    for side, out in (("subword", chunk.subword), ("char", chunk.char)):
        if out is None:
            continue
        out_xp = cast(Floats3d, torch2xp(out))  # (windows, rows, width)
        for j, i in enumerate(chunk.windows):
            rows[side][i] = out_xp[j, : _n_rows(windows[i], side)]


def _cut_maps(
    shim: EntangleShim, windows: Sequence[WindowInput], chunk: List[int], maps: List[Optional[WindowAttention]]
) -> None:
    """Each window's co-attention maps, padding cut off; the padded chunk's are dropped."""
    kept = shim.last_attention
    if kept is None:
        raise RuntimeError("store_attention is on, but the entangle model kept no co-attention maps")
    for j, i in enumerate(chunk):
        n_sub, n_char = len(windows[i].sub_ids), len(windows[i].char_ids)
        maps[i] = WindowAttention(
            windows[i],
            sub2char=[s2c[j, :n_sub, :n_char].cpu().numpy().astype("float32") for s2c, _ in kept],
            char2sub=[c2s[j, :n_char, :n_sub].cpu().numpy().astype("float32") for _, c2s in kept],
        )
    shim.last_attention = None


def _per_doc(
    model: Model,
    windows: Sequence[WindowInput],
    aligns: Sequence[DocAlignment],
    rows: Dict[str, List[Any]],
    maps: Optional[List[Optional[WindowAttention]]],
    need: Sequence[str],
) -> List[EntangleData]:
    """Each doc's rows, window after window (windows are in doc order), as arrays of its
    own: a doc must not keep the whole padded chunk alive through a view."""
    width = model.get_dim("nO")
    by_doc = _windows_by_doc(windows)
    outputs = []
    for d, align in enumerate(aligns):
        idx = by_doc.get(d, [])
        sides = {
            side: _gather(model.ops, [rows[side][i] for i in idx], width) if side in need else None for side in SIDES
        }
        attention = [maps[i] for i in idx] if maps is not None else None
        outputs.append(EntangleData(subword=sides["subword"], char=sides["char"], align=align, attention=attention))
    return outputs


def _backward(
    ops: Ops, windows: Sequence[WindowInput], ran: List[_Chunk], d_outputs: List[EntangleData], backward: Callable
) -> None:
    """Doc gradients -> per-window slices -> padded chunk gradients, and every chunk's
    outputs with their gradients into ONE backward call: the gradient (loss) scaling of
    mixed precision is applied once per update, not per chunk."""
    by_doc = _windows_by_doc(windows)
    d_rows: Dict[str, List[Any]] = {side: [None] * len(windows) for side in SIDES}
    for d, d_out in enumerate(d_outputs):
        for side, store in d_rows.items():
            grad = getattr(d_out, side)
            if grad is None:
                continue
            start = 0
            for i in by_doc.get(d, []):
                n = _n_rows(windows[i], side)
                store[i] = grad[start : start + n]
                start += n
    tensors, grads = [], []
    for chunk in ran:
        for out, store in ((chunk.subword, d_rows["subword"]), (chunk.char, d_rows["char"])):
            if out is None or all(store[i] is None for i in chunk.windows):
                continue
            dY = ops.alloc3f(*out.shape)
            for j, i in enumerate(chunk.windows):
                if store[i] is not None:
                    dY[j, : len(store[i])] = store[i]
            tensors.append(out)
            grads.append(xp2torch(dY, device=out.device))
    if tensors:
        backward(tensors, grads)


def _n_rows(window: WindowInput, side: str) -> int:
    return len(window.sub_ids) if side == "subword" else len(window.char_ids)


def _windows_by_doc(windows: Sequence[WindowInput]) -> Dict[int, List[int]]:
    by_doc: Dict[int, List[int]] = {}
    for i, w in enumerate(windows):
        by_doc.setdefault(w.doc_index, []).append(i)
    return by_doc


def _gather(ops: Ops, parts: List[Any], width: int) -> Floats2d:
    """One doc's rows, window after window, as an array of its own."""
    if not parts:
        return ops.alloc2f(0, width)
    if len(parts) == 1:
        return parts[0].copy()
    return ops.xp.concatenate(parts, axis=0)
