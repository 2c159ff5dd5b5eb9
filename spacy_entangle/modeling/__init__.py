"""Pure PyTorch: the co-attention blocks and the two-encoder entanglement model (no spaCy)."""

from .backbones import BackboneError, encoder_from_config, load_encoder, load_tokenizer
from .coattention import CoAttentionBlock, CoAttentionModule
from .entangle import EntangleEncoder

__all__ = [
    "CoAttentionBlock",
    "CoAttentionModule",
    "EntangleEncoder",
    "BackboneError",
    "load_encoder",
    "load_tokenizer",
    "encoder_from_config",
]
