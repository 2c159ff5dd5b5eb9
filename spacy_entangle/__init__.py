"""spacy-entangle: the entanglement model (character + subword encoders joined by
co-attention; Wang, Hu, Gormley 2023) as spaCy components."""
from . import architectures  # noqa: F401  (registers the architectures)
from .data import EntangleData
from .pipeline import Entangle, make_entangle
from .tokenization.windows import configure_windows

__version__ = "0.1.0"

__all__ = ["Entangle", "EntangleData", "make_entangle", "configure_windows", "__version__"]
