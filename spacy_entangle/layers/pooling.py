"""Token pooling: one vector per spaCy token from the rows of the `entangle` output that
the token reads on a side (the paper: its first piece / first character), or both sides
concatenated."""

from typing import Any, Callable, Dict, List, Tuple

from thinc.api import Model, Ops, Ragged, reduce_first, reduce_mean, use_ops
from thinc.backends import get_array_ops
from thinc.types import Floats2d

from ..data import EntangleData, Pooling, Side, side_names
from .gradients import SideRows, rows_gradient

# the pooling layers by name (token vectors outside a listener: EntangleData.token_vectors, doc.tensor)
POOLERS: Dict[str, Callable[[], Model[Ragged, Floats2d]]] = {"first": reduce_first, "mean": reduce_mean}


def entangle_pool(
    side: Side, pooling: Model[Ragged, Floats2d], grad_factor: float = 1.0
) -> Model[List[EntangleData], List[Floats2d]]:
    """One vector per token: the token's rows on ``side`` reduced by ``pooling``
    (the paper: the first piece / first character). side="both" concatenates."""
    sides = side_names(side)
    return Model(
        "entangle-pool",
        pool_forward,
        layers=[pooling],
        attrs={"sides": sides, "grad_factor": grad_factor},
        dims={"nO": None},
        init=pool_init,
    )


def pool_init(model: Model, X: Any = None, Y: Any = None) -> None:
    if X:
        for data in X:
            width = data.side(model.attrs["sides"][0]).shape[1]
            model.set_dim("nO", width * len(model.attrs["sides"]), force=True)
            break


def pool_forward(
    model: Model, datas: List[EntangleData], is_train: bool
) -> Tuple[List[Floats2d], Callable[[List[Floats2d]], List[EntangleData]]]:
    ops = model.ops
    pooling = model.layers[0]
    grad_factor = model.attrs["grad_factor"]
    n_tokens = [len(d.align.subword_lengths) for d in datas]
    per_side = []
    callbacks = []
    for side in model.attrs["sides"]:
        Xs = [d.side(side) for d in datas]
        rows = [getattr(d.align, f"{side}_rows") for d in datas]
        lengths = [getattr(d.align, f"{side}_lengths") for d in datas]
        width = Xs[0].shape[1] if Xs else 0
        gathered = [X[ops.asarray(r, dtype="int32")] for X, r in zip(Xs, rows)]
        flat = ops.xp.concatenate(gathered, axis=0) if gathered else ops.alloc2f(0, width)
        all_lengths = (
            ops.asarray1i(ops.xp.concatenate([ops.asarray1i(n) for n in lengths])) if lengths else ops.alloc1i(0)
        )
        if flat.shape[0] == 0:
            Y = ops.alloc2f(0, width)
            bp_pool = None
        else:
            Y, bp_pool = pooling(Ragged(flat, all_lengths), is_train)
        per_side.append(Y)
        callbacks.append((side, Xs, rows, bp_pool, width))
    Y = per_side[0] if len(per_side) == 1 else ops.xp.hstack(per_side)
    outputs = _split(ops, Y, n_tokens)

    def backprop(dYs: List[Floats2d]) -> List[EntangleData]:
        dY = ops.xp.concatenate(dYs, axis=0) if dYs else ops.alloc2f(0, Y.shape[1])
        per_doc: List[List[SideRows]] = [[] for _ in datas]
        col = 0
        for side, Xs, rows, bp_pool, width in callbacks:
            d_side = dY[:, col : col + width]
            col += width
            if bp_pool is None:
                continue
            d_flat = bp_pool(ops.xp.ascontiguousarray(d_side)).dataXd
            if grad_factor != 1.0:
                d_flat = d_flat * grad_factor
            start = 0
            for parts, X, r in zip(per_doc, Xs, rows):
                parts.append((side, X.shape, r, d_flat[start : start + len(r)]))
                start += len(r)
        return [rows_gradient(ops, d.align, parts) for d, parts in zip(datas, per_doc)]

    return outputs, backprop


def _split(ops: Ops, Y: Floats2d, sizes: List[int]) -> List[Floats2d]:
    out, start = [], 0
    for n in sizes:
        out.append(Y[start : start + n])
        start += n
    return out


def pooled_token_vectors(datas: List[EntangleData], side: Side, pooling: Pooling) -> List[Floats2d]:
    """One row per token of each doc, as a listener on ``side`` with ``pooling`` reads it
    (the same layers, predicted: no gradient). The ops follow the states' arrays, so
    states on the CPU pool on the CPU whatever the current device."""
    if pooling not in POOLERS:
        raise ValueError(f"pooling must be one of {', '.join(map(repr, POOLERS))}, got {pooling!r}")
    sides = side_names(side)
    if not datas:
        return []
    ops = get_array_ops(datas[0].side(sides[0]))
    with use_ops(ops.name):
        model = entangle_pool(side, POOLERS[pooling]())
    return model.predict(datas)
