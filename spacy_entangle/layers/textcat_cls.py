"""The paper's classification input: the first state ([CLS] / the char [CLS]) of
each doc on one side."""

from typing import Any, Callable, List, Tuple

from thinc.api import Model
from thinc.types import Floats2d

from ..data import EntangleData
from .gradients import rows_gradient


def entangle_first_state(side: str = "subword") -> Model[List[EntangleData], Floats2d]:
    """(n_docs, width): row 0 of each doc's ``side`` states (the first window's
    first special). An empty doc has no states: it gets a zero row."""
    return Model("entangle-first-state", forward, init=init, attrs={"side": side}, dims={"nO": None})


def init(model: Model, X: Any = None, Y: Any = None) -> None:
    if X:
        model.set_dim("nO", X[0].side(model.attrs["side"]).shape[1], force=True)


def forward(
    model: Model, datas: List[EntangleData], is_train: bool
) -> Tuple[Floats2d, Callable[[Floats2d], List[EntangleData]]]:
    ops = model.ops
    side = model.attrs["side"]
    states = [d.side(side) for d in datas]
    width = states[0].shape[1] if states else model.get_dim("nO")
    Y = ops.alloc2f(len(datas), width)
    for i, X in enumerate(states):
        if X.shape[0]:
            Y[i] = X[0]

    def backprop(dY: Floats2d) -> List[EntangleData]:
        return [
            rows_gradient(ops, d.align, [(side, X.shape, [0] if X.shape[0] else [], dY[i : i + 1])])
            for i, (d, X) in enumerate(zip(datas, states))
        ]

    return Y, backprop
