"""spaCy components: `entangle` (the shared encoder with listeners) and
`char_tagger` (one label per character); `scored_ner` (spaCy's ner decoded by beam search,
a confidence per entity)."""

from .char_scorer import score_char_tags
from .char_tagger import CharTagger, make_char_tagger
from .entangle import Entangle, make_entangle
from .scored_ner import ScoredEntityRecognizer, load_scored, make_scored_ner

__all__ = [
    "Entangle",
    "make_entangle",
    "CharTagger",
    "make_char_tagger",
    "score_char_tags",
    "ScoredEntityRecognizer",
    "make_scored_ner",
    "load_scored",
]
