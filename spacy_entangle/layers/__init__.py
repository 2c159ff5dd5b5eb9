"""thinc glue: the EntangleModel wrapper (with its serialisation shim), the
listener, token pooling, the [CLS] classification head and per-character states."""
from .shim import EntangleShim
from .entangle_model import EntangleModel
from .listener import EntangleListener
from .pooling import entangle_pool
from .textcat_cls import entangle_first_state
from .char_states import entangle_char_states

__all__ = ["EntangleShim", "EntangleModel", "EntangleListener", "entangle_pool", "entangle_first_state",
           "entangle_char_states"]
