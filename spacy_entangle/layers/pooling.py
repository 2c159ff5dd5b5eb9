"""Token pooling: one vector per spaCy token from the rows of the `entangle` output that
the token reads on a side (the paper: its first piece / first character), or both sides
concatenated."""

from typing import Any, Callable, Dict, List, Optional, Tuple

from thinc.api import Model, Ragged
from thinc.types import Floats2d

from ..data import POOL_BLOCK, POOLERS, EntangleData, Side, pool_token_rows, pooled_token_vectors, side_names
from .contract import get_sides
from .gradients import SideRows, rows_gradient

# POOLERS and pooled_token_vectors live in data.py (EntangleData.token_vectors needs them there)
__all__ = ["POOLERS", "entangle_pool", "pooled_token_vectors"]


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
            sides = get_sides(model)
            width = data.side(sides[0]).shape[1]
            model.set_dim("nO", width * len(sides), force=True)
            break


def pool_forward(
    model: Model, datas: List[EntangleData], is_train: bool
) -> Tuple[List[Floats2d], Callable[[List[Floats2d]], List[EntangleData]]]:
    ops = model.ops
    pooling = model.layers[0]
    grad_factor = model.attrs["grad_factor"]
    sides = get_sides(model)
    bp_pools: Dict[str, Callable] = {}  # per side pooled (a side with no rows has none)

    def reduce(side: str, rows: Ragged) -> Floats2d:
        Y, bp_pools[side] = pooling(rows, is_train)
        return Y

    # a prediction pools block by block (one array, not copies of a long doc's states);
    # training pools each side in one call, for one backward
    outputs = pool_token_rows(ops, datas, sides, reduce, None if is_train else POOL_BLOCK)
    # what the backward needs of the docs: not their states (a prediction frees them once pooled)
    aligns = [d.align for d in datas]
    shapes = [{side: d.side(side).shape for side in sides} for d in datas]
    width = sum(shapes[0][side][1] for side in sides) if datas else 0

    def backprop(dYs: List[Floats2d]) -> List[EntangleData]:
        dY = ops.xp.concatenate(dYs, axis=0) if dYs else ops.alloc2f(0, width)
        per_doc: List[List[SideRows]] = [[] for _ in aligns]
        col = 0
        for side in sides:
            side_width = shapes[0][side][1]
            d_side = dY[:, col : col + side_width]
            col += side_width
            bp_pool: Optional[Callable] = bp_pools.get(side)
            if bp_pool is None:
                continue
            d_flat = bp_pool(ops.xp.ascontiguousarray(d_side)).dataXd
            if grad_factor != 1.0:
                d_flat = d_flat * grad_factor
            start = 0
            for parts, align, shape in zip(per_doc, aligns, shapes):
                rows = getattr(align, f"{side}_rows")
                parts.append((side, shape[side], rows, d_flat[start : start + len(rows)]))
                start += len(rows)
        return [rows_gradient(ops, align, parts) for align, parts in zip(aligns, per_doc)]

    return outputs, backprop
