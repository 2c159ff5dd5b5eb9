"""thinc glue: the EntangleModel wrapper (with its serialisation shim), the
listener, token pooling and the [CLS] classification head."""
from .shim import EntangleShim
from .entangle_model import EntangleModel
from .listener import EntangleListener, entangle_pool
from .textcat_cls import entangle_first_state

__all__ = ["EntangleShim", "EntangleModel", "EntangleListener", "entangle_pool", "entangle_first_state"]
