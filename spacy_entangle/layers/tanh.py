"""An elementwise tanh layer (thinc ships none on its own)."""
from thinc.api import Model


def Tanh() -> Model:
    return Model("tanh", forward)


def forward(model: Model, X, is_train: bool):
    Y = model.ops.xp.tanh(X)

    def backprop(dY):
        return dY * (1.0 - Y * Y)

    return Y, backprop
