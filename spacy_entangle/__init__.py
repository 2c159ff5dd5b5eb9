"""spacy-entangle: the entanglement model (character + subword encoders joined by
co-attention; Wang, Hu, Gormley 2023) as spaCy components."""
from . import architectures  # noqa: F401  (registers the architectures)
from .data import EntangleData
from .pipeline import CharTagger, Entangle, make_char_tagger, make_entangle
from .tokenization.windows import configure_windows

__version__ = "0.1.0"

__all__ = [
    "Entangle",
    "EntangleData",
    "make_entangle",
    "CharTagger",
    "make_char_tagger",
    "configure_windows",
    "__version__",
]
