"""spaCy components: `entangle` (the shared encoder with listeners)."""
from .entangle import Entangle, make_entangle

__all__ = ["Entangle", "make_entangle"]
