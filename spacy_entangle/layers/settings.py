"""The entangle model's settings: one frozen object, checked once when it is built.

The registered architectures keep their explicit signatures (spaCy validates configs
against them) and hand them here with ``EntangleSettings.pick(locals())``; the shim
stores ``to_cfg()`` with the saved model and rebuilds from it with ``from_cfg``, which
also reads the cfg dicts of pipelines saved before this class existed."""
from dataclasses import asdict, dataclass, fields
from typing import Any, Dict, Mapping, Optional

WHERE = "spacy-entangle.EntangleModel.v1"


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
        sizes = {"hidden_width": self.hidden_width, "n_heads": self.n_heads, "ffn_width": self.ffn_width,
                 "max_batch_chars": self.max_batch_chars}
        for name, value in sizes.items():
            if value is not None and value < 1:
                raise ValueError(f"{WHERE}: {name} must be a positive integer or null (the default), got {value}")
        if self.n_coattention < 0:
            raise ValueError(f"{WHERE}: n_coattention must be >= 0, got {self.n_coattention}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"{WHERE}: dropout must be in [0, 1), got {self.dropout}")
        if self.backbone_lr_scale < 0:
            raise ValueError(f"{WHERE}: backbone_lr_scale must be >= 0, got {self.backbone_lr_scale}")
        if self.hidden_width is not None and self.n_heads is not None and self.hidden_width % self.n_heads:
            raise ValueError(f"hidden_width={self.hidden_width} is not divisible by n_heads={self.n_heads} in {WHERE}")

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
