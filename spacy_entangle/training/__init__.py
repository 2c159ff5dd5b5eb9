"""Training helpers for `spacy train`: the learning-curve logger, and the optimizer and
callback that let an interrupted run continue."""

from .curve import count_words, curve_logger, final_point, read_curve
from .resume import resumable_adam, resume_weights

__all__ = ["curve_logger", "count_words", "final_point", "read_curve", "resumable_adam", "resume_weights"]
