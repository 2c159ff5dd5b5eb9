"""A CANINE grown from a subword encoder (design (a)): a plain CANINE whose width,
heads, feed-forward and activation match the subword encoder, and whose deep transformer
stack (over 4-character molecules) is the subword encoder's first ``k`` layers, copied bit
for bit. Only CANINE's own parts start new: the hashed character embeddings, the local
initial layer, the down- and upsampling and the final character layer.

It is a ``canine`` model in every respect (``AutoModel.from_pretrained`` loads it without
spacy-entangle), so the CANINE char spec, the alignment rules and every head work
unchanged. Design (b), word pooling, is ``modeling/grown.py``; the project pilots both.
"""

from pathlib import Path
from typing import Any, List, Optional, Union

import torch
from torch import nn

from .backbones import canine_config


def grown_canine_config(teacher_config: Any, k: int) -> Any:
    """A CanineConfig shaped like ``teacher_config`` (width, heads, feed-forward, activation,
    LayerNorm eps, dropout), with ``k`` deep layers."""
    config = canine_config(
        layers=k,
        width=int(teacher_config.hidden_size),
        heads=int(teacher_config.num_attention_heads),
        ffn_width=int(teacher_config.intermediate_size),
    )
    for name in ("hidden_act", "layer_norm_eps", "hidden_dropout_prob", "attention_probs_dropout_prob"):
        if hasattr(teacher_config, name):
            setattr(config, name, getattr(teacher_config, name))
    return config


def teacher_layers_of(teacher: nn.Module) -> nn.ModuleList:
    """The subword encoder's transformer layers (BERT-style ``encoder.layer``)."""
    layers = getattr(getattr(teacher, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(f"{type(teacher).__name__} has no encoder.layer list to copy from")
    return layers


def copied_layers(model: nn.Module) -> List[nn.Module]:
    """A grown CANINE's copied layers, bottom to top: its deep stack."""
    return list(teacher_layers_of(model))


def grow_canine(
    subword: Union[str, Path],
    out_dir: Optional[Union[str, Path]] = None,
    *,
    k: Optional[int] = None,
    seed: int = 0,
) -> Any:
    """A CanineModel whose deep stack is ``subword``'s first ``k`` layers (all when None);
    the rest is random under ``seed``. Each copied layer must load strictly (same names and
    shapes: a BERT/RoBERTa/XLM-R layer and a CANINE layer share them). Saved to ``out_dir``
    (safetensors) when given."""
    from transformers import AutoModel, CanineModel

    teacher = AutoModel.from_pretrained(str(subword))
    source = teacher_layers_of(teacher)
    k = len(source) if k is None else k
    if not 1 <= k <= len(source):
        raise ValueError(f"k must be 1..{len(source)} (the layers of {subword!r}), got {k}")
    config = grown_canine_config(teacher.config, k)
    config.grown_from = str(subword)
    config.copied_layers = k
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CanineModel(config)
    for target, layer in zip(model.encoder.layer, source):
        target.load_state_dict(layer.state_dict(), strict=True)
    if out_dir is not None:
        model.save_pretrained(str(out_dir), safe_serialization=True)
    return model


def grow_design(subword: Union[str, Path], *, k: Optional[int], char_width: int, seed: int) -> Any:
    """The registered design "canine" (modeling/char_designs.py); ``char_width`` does not
    apply: a grown CANINE is as wide as the subword encoder."""
    return grow_canine(subword, k=k, seed=seed)


__all__ = ["copied_layers", "grow_canine", "grow_design", "grown_canine_config", "teacher_layers_of"]
