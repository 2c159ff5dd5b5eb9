"""Self-supervised pretraining of a character encoder (`python -m spacy_entangle pretrain-chars`):
a CANINE from scratch (masked characters, noisy words, teacher distillation), or one grown from
a subword encoder's layers (`--init-from`: grow.py, grow_run.py)."""

from .pretrain import pretrain_chars
from .settings import PRESETS, PretrainSettings

__all__ = ["PRESETS", "PretrainSettings", "pretrain_chars"]
