"""Pure PyTorch: the co-attention blocks and the two-encoder entanglement model (no spaCy)."""
from .coattention import CoAttentionBlock, CoAttentionModule
from .entangle import EntangleEncoder
from .backbones import BackboneError, load_encoder, load_tokenizer, encoder_from_config

__all__ = [
    "CoAttentionBlock",
    "CoAttentionModule",
    "EntangleEncoder",
    "BackboneError",
    "load_encoder",
    "load_tokenizer",
    "encoder_from_config",
]
