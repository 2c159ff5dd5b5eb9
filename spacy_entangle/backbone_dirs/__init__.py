"""Hugging Face backbone directories on disk, which spacy-entangle writes but does not model:
the offline builders behind ``init-backbone`` (builders.py: random CANINE / BERT / RoBERTa
stand-ins, the exported MiniLM), the sample text their tiny BPE learns from (sample_text.py)
and the model cards of every directory it writes (model_card.py). Not pure PyTorch, so not
in ``modeling/``."""

from .builders import MINILM_PACKAGE, RANDOM_NOTE, export_minilm, make_random_canine, make_random_subword
from .model_card import write_model_card
from .sample_text import sample_lines

__all__ = [
    "MINILM_PACKAGE",
    "RANDOM_NOTE",
    "export_minilm",
    "make_random_canine",
    "make_random_subword",
    "write_model_card",
    "sample_lines",
]
