"""The gradient of an `entangle` output read row by row: the one helper of the layers
after a listener (token pooling, the [CLS] head, per-character states)."""

from typing import Any, Iterable, Tuple

from thinc.api import Ops
from thinc.types import Floats2d

from ..data import EntangleData
from ..tokenization.alignment import DocAlignment

# per side: (side name, the states' shape, the rows read, the gradient of each row read)
SideRows = Tuple[str, Tuple[int, ...], Any, Floats2d]


def rows_gradient(ops: Ops, align: DocAlignment, sides: Iterable[SideRows]) -> EntangleData:
    """One doc's gradients: per side given, zeros of the states' shape with each read row's
    gradient added at its row (a row read several times sums them); a side not given
    stays None (nothing read it)."""
    grad = EntangleData(subword=None, char=None, align=align)
    for side, shape, rows, d_rows in sides:
        dX = ops.alloc2f(*shape)
        if len(rows):
            ops.scatter_add(dX, ops.asarray1i(rows), ops.xp.ascontiguousarray(d_rows))
        setattr(grad, side, dX)
    return grad
