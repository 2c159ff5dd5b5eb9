"""thinc glue: the EntangleModel wrapper (entangle_model.py, with its serialisation shim),
the listener (listener.py), token pooling (pooling.py), the nlp.replace_listeners glue
(replace.py), the [CLS] classification head and per-character states."""

from .char_states import entangle_char_states
from .entangle_model import EntangleModel
from .listener import EntangleListener
from .pooling import entangle_pool
from .shim import EntangleShim
from .textcat_cls import entangle_first_state

__all__ = [
    "EntangleShim",
    "EntangleModel",
    "EntangleListener",
    "entangle_pool",
    "entangle_first_state",
    "entangle_char_states",
]
