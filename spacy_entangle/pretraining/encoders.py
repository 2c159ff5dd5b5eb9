"""The encoder a fresh pretraining run starts from: a preset of random weights, or an
existing CANINE directory / hub name to continue pretraining."""

from typing import TYPE_CHECKING, Optional

import torch

from ..modeling.backbones import canine_config
from .settings import PRESETS

if TYPE_CHECKING:  # transformers loads when a model is built
    from transformers import PreTrainedModel


def new_encoder(config: str, seed: int, **shape: Optional[int]) -> "PreTrainedModel":
    """A preset (random weights under ``seed``) or an existing CANINE directory / hub name
    whose weights are the starting point (continued pretraining on the user's text)."""
    from transformers import AutoConfig, AutoModel, CanineModel

    if config in PRESETS:
        sizes = {**PRESETS[config], **{k: v for k, v in shape.items() if v is not None}}
        cfg = canine_config(**sizes)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return CanineModel(cfg)
    if any(v is not None for v in shape.values()):
        raise ValueError(
            f"--layers/--width/--heads only apply to the presets ({', '.join(PRESETS)}), not to {config!r}"
        )
    try:
        model_type = AutoConfig.from_pretrained(config).model_type
    except Exception as err:  # re-raised with the choice named
        raise ValueError(
            f"--config {config!r} is neither a preset ({', '.join(PRESETS)}) nor a loadable model: {err}"
        ) from err
    if model_type != "canine":
        raise ValueError(f"--config {config!r} is a {model_type!r} model; pretrain-chars trains CANINE-style encoders")
    return AutoModel.from_pretrained(config)
