"""Self-supervised pretraining of a character encoder (`python -m spacy_entangle pretrain-chars`):
a CANINE from scratch (masked characters, noisy words, teacher distillation), or one grown from
a subword encoder's layers (`--init-from`: grow.py, grow_run.py)."""

from .loop import PRESETS, PretrainSettings, pretrain_chars

__all__ = ["PRESETS", "PretrainSettings", "pretrain_chars"]
