"""spaCy components: `entangle` (the shared encoder with listeners) and
`char_tagger` (one label per character)."""

from .char_scorer import score_char_tags
from .char_tagger import CharTagger, make_char_tagger
from .entangle import Entangle, make_entangle

__all__ = ["Entangle", "make_entangle", "CharTagger", "make_char_tagger", "score_char_tags"]
