"""The thinc model: List[Doc] -> List[EntangleData], one per doc.

Windows from all docs of a batch are sorted by length and run in chunks of at
most ``max_batch_chars`` padded characters, so one long doc never dominates a
batch and short docs are not padded to its length.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy
import torch
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model, Ops, get_torch_default_device, torch2xp, xp2torch
from thinc.types import Floats2d, Floats3d

from ..data import SIDES, EntangleData
from ..tokenization import WindowInput, WindowSettings, prepare_docs
from ..tokenization.alignment import DocAlignment
from ..tokenization.windows import configure_windows
from .replace import replace_listener, replace_listener_cfg
from .settings import EntangleSettings
from .shim import NOT_INITIALIZED, EntangleShim

CHUNK_SPREAD = 1.25  # longest / shortest padded window in one chunk


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
    need = tuple(model.attrs["sides"])
    with torch.profiler.record_function("entangle.prepare"):
        subwords, chars = shim.built_specs()
        windows, aligns = prepare_docs(docs, subwords, chars, model.attrs["window_settings"])
        # the shim's settings: those of the config loaded with (model.attrs are the saved ones)
        chunks = _chunks(windows, shim.settings.max_batch_chars, chars.padded_length)
    keep_maps = shim.store_attention and not is_train
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


def _built_shim(model: Model) -> EntangleShim:
    shim = entangle_shim(model)
    if not shim.is_built:
        raise ValueError(NOT_INITIALIZED)
    return shim


def _run_chunk(
    shim: EntangleShim, windows: Sequence[WindowInput], chunk: List[int], need: Sequence[str], is_train: bool
) -> Tuple[_Chunk, Callable]:
    """One chunk of windows padded and run through the encoder; the shim's backprop."""
    subs = [windows[i].sub_ids for i in chunk]
    chs = [windows[i].char_ids for i in chunk]
    subwords, chars = shim.built_specs()
    sub_ids, sub_mask = _pad(subs, max(len(s) for s in subs), subwords.pad_id)
    char_ids, char_mask = _pad(chs, max(chars.padded_length(len(c)) for c in chs), chars.pad_id)
    device = get_torch_default_device()
    inputs = ArgsKwargs(
        args=tuple(torch.from_numpy(a).to(device) for a in (sub_ids, sub_mask, char_ids, char_mask)),
        kwargs={"need_subword": "subword" in need, "need_char": "char" in need},
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
