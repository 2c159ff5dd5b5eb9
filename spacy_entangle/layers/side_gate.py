"""The both-side combination as a learned gate (issue 31's lever, ``combine = "gate"``):
instead of concatenating a token's subword and char vectors, mix them per dimension,
``y = g * subword + (1 - g) * char`` with ``g = sigmoid(W [subword ‖ char] + b)``, so a
token whose spelling is attacked can lean on the side that still reads it.

W and b start at zero: the gate starts as the plain average of the two sides and learns
from there. thinc ships no gate layer, hence this one."""

from typing import Any, Callable, Optional, Tuple, cast

from thinc.api import Model
from thinc.types import Floats1d, Floats2d


def side_gate() -> Model[Floats2d, Floats2d]:
    """(N, 2 x width) = subword ‖ char -> (N, width)."""
    return Model(
        "entangle-side-gate",
        gate_forward,
        init=gate_init,
        dims={"nI": None, "nO": None},
        params={"W": None, "b": None},
    )


def gate_init(model: Model, X: Optional[Floats2d] = None, Y: Any = None) -> None:
    if X is not None:
        model.set_dim("nI", X.shape[1], force=True)
    if not model.has_dim("nI"):
        return  # sized later (the listener's width is known once the encoder loads)
    n_in = model.get_dim("nI")
    if n_in % 2:
        raise ValueError(f"the side gate reads subword ‖ char vectors of equal width; got width {n_in}")
    model.set_dim("nO", n_in // 2, force=True)
    model.set_param("W", model.ops.alloc2f(n_in // 2, n_in))
    model.set_param("b", model.ops.alloc1f(n_in // 2))


def gate_forward(model: Model, X: Floats2d, is_train: bool) -> Tuple[Floats2d, Callable[[Floats2d], Floats2d]]:
    ops = model.ops
    W = cast(Floats2d, model.get_param("W"))
    b = cast(Floats1d, model.get_param("b"))
    width = W.shape[0]
    sub, char = X[:, :width], X[:, width:]
    G = ops.sigmoid(ops.gemm(X, W, trans2=True) + b)
    diff = sub - char
    Y = char + G * diff

    def backprop(dY: Floats2d) -> Floats2d:
        dZ = dY * diff * G * (1.0 - G)
        model.inc_grad("W", ops.gemm(dZ, X, trans1=True))
        model.inc_grad("b", dZ.sum(axis=0))
        dX = ops.gemm(dZ, W)
        dX[:, :width] += dY * G
        dX[:, width:] += dY * (1.0 - G)
        return dX

    return Y, backprop
