"""Self-supervised pretraining of a character encoder (`python -m spacy_entangle pretrain-chars`)."""
from .loop import PRESETS, PretrainSettings, pretrain_chars

__all__ = ["PRESETS", "PretrainSettings", "pretrain_chars"]
