"""spacy-entangle: the entanglement model (character + subword encoders joined by
co-attention; Wang, Hu, Gormley 2023) as spaCy components."""

from .versions import check_transformers

check_transformers()  # before anything can reach transformers: one line that names the fix

from . import architectures  # noqa: E402,F401  (registers the architectures)
from .data import EntangleData  # noqa: E402
from .modeling import char_designs  # noqa: E402,F401  (registers the grown model type with transformers, lazily)
from .pipeline import CharTagger, Entangle, make_char_tagger, make_entangle  # noqa: E402
from .tokenization.windows import configure_windows  # noqa: E402

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
