"""The entangle model's settings: one frozen object, checked once when it is built.

The registered architectures keep their explicit signatures (spaCy validates configs
against them) and hand them here with ``EntangleSettings.pick(locals())``; the shim
stores ``to_cfg()`` with the saved model and rebuilds from it with ``from_cfg``, which
also reads the cfg dicts of pipelines saved before this class existed."""

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, Mapping, Optional

from ..modeling.sizes import NULL, check_coattention, check_positive

# the registered architecture these settings belong to: the errors name it, as spaCy names a config block
ARCHITECTURE = "spacy-entangle.EntangleModel.v1"
# settings that do not shape the weights: a loaded model takes them from the config it is
# loaded with (``spacy.load(path, config={...})``), the others from the saved model
RUNTIME_FIELDS = ("dropout", "backbone_lr_scale", "mixed_precision", "gradient_checkpointing", "max_batch_chars")


@dataclass(frozen=True)
class EntangleSettings:
    char_backbone: str
    subword_backbone: str
    n_coattention: int = 2
    hidden_width: Optional[int] = None
    n_heads: Optional[int] = None
    ffn_width: Optional[int] = None
    dropout: float = 0.1
    backbone_lr_scale: float = 1.0
    mixed_precision: bool = False
    gradient_checkpointing: bool = False
    max_batch_chars: int = 16384

    def __post_init__(self) -> None:
        """Refuse bad sizes when the model is built (spaCy's config checks and add_pipe
        fail here), not at the first prediction: only null means "default"."""
        object.__setattr__(self, "char_backbone", str(self.char_backbone))
        object.__setattr__(self, "subword_backbone", str(self.subword_backbone))
        check_coattention(
            ARCHITECTURE,
            n_coattention=self.n_coattention,
            width=self.hidden_width,
            n_heads=self.n_heads,
            ffn_width=self.ffn_width,
        )
        check_positive(ARCHITECTURE, null=NULL, max_batch_chars=self.max_batch_chars)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"{ARCHITECTURE}: dropout must be in [0, 1), got {self.dropout}")
        if self.backbone_lr_scale < 0:
            raise ValueError(f"{ARCHITECTURE}: backbone_lr_scale must be >= 0, got {self.backbone_lr_scale}")

    @classmethod
    def pick(cls, values: Mapping[str, Any]) -> "EntangleSettings":
        """The settings among a registered function's arguments (``locals()``)."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any]) -> "EntangleSettings":
        """From a saved cfg dict: unknown keys are ignored, missing ones take defaults."""
        return cls.pick(cfg)

    def to_cfg(self) -> Dict[str, Any]:
        return asdict(self)

    def loaded(self, saved: Mapping[str, Any]) -> "EntangleSettings":
        """A saved model's settings (``saved``: its cfg) under these, the configured ones:
        what shapes the weights is saved, the run-time settings are configured."""
        return replace(EntangleSettings.from_cfg(saved), **{name: getattr(self, name) for name in RUNTIME_FIELDS})
