"""An elementwise tanh layer (thinc ships none on its own)."""

from typing import Callable, Tuple

from thinc.api import Model
from thinc.types import Floats2d


def Tanh() -> Model[Floats2d, Floats2d]:
    return Model("tanh", forward)


def forward(model: Model[Floats2d, Floats2d], X: Floats2d, is_train: bool) -> Tuple[Floats2d, Callable]:
    Y = model.ops.xp.tanh(X)

    def backprop(dY: Floats2d) -> Floats2d:
        return dY * (1.0 - Y * Y)

    return Y, backprop
