"""Training helpers for `spacy train`: the learning-curve logger."""

from .curve import count_words, curve_logger, read_curve

__all__ = ["curve_logger", "count_words", "read_curve"]
