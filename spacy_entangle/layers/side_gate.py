"""The both-side combination as a learned gate (``combine = "gate"``, a lever studied on WNUT-17):
instead of concatenating a token's subword and char vectors, mix them per dimension,
``y = g * subword + (1 - g) * char`` with ``g = sigmoid(W [subword ‖ char] + b)``, so a
token whose spelling is attacked can lean on the side that still reads it.

``g`` is thinc's ``Sigmoid`` layer, W and b zero-initialised: the gate starts as the plain
average of the two sides and learns from there. Only the mixing is written here (thinc has
no gate layer)."""

from typing import Any, Callable, Optional, Tuple

from thinc.api import Model, Sigmoid
from thinc.types import Floats2d


def side_gate() -> Model[Floats2d, Floats2d]:
    """(N, 2 x width) = subword ‖ char -> (N, width)."""
    return Model(
        "entangle-side-gate",
        gate_forward,
        init=gate_init,
        layers=[Sigmoid()],
        dims={"nI": None, "nO": None},
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
    gate = model.layers[0]
    gate.set_dim("nI", n_in, force=True)
    gate.set_dim("nO", n_in // 2, force=True)
    gate.initialize()


def gate_forward(model: Model, X: Floats2d, is_train: bool) -> Tuple[Floats2d, Callable[[Floats2d], Floats2d]]:
    width = model.get_dim("nO")
    sub, char = X[:, :width], X[:, width:]
    G, backprop_gate = model.layers[0](X, is_train)
    diff = sub - char
    Y = char + G * diff

    def backprop(dY: Floats2d) -> Floats2d:
        dX = backprop_gate(dY * diff)
        dX[:, :width] += dY * G
        dX[:, width:] += dY * (1.0 - G)
        return dX

    return Y, backprop
