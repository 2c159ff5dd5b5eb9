"""BERT-family encoders at prediction without the padding's work: the layers' projections
and feed-forward run on the real positions only (packed), attention on the padded batch.

A chunk of tweets pads its pieces and the grown encoder's words about 1.3x (they are grouped
by character length), and the Linear layers are most of an encoder's time: packing skips
that share. The states at real positions are those of the Hugging Face forward (float
rounding); padded positions are zeros (never read). Anything else (training, an encoder
of another layout, an inference engine's stand-in) runs the encoder's own forward.
"""

from typing import Any, Optional

import torch
from torch import nn
from torch.nn import functional as F

# a BERT-style layer's modules, as Hugging Face's BERT / RoBERTa / XLM-R name them
_LAYER_PARTS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "attention.output.LayerNorm",
    "intermediate.dense",
    "output.dense",
    "output.LayerNorm",
)


def packable(encoder: nn.Module) -> bool:
    """Whether ``encoder`` is a BERT-style encoder this module runs (in eval mode): absolute
    positions, no decoder, every layer with the parts it computes."""
    config = getattr(encoder, "config", None)
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if (
        encoder.training
        or config is None
        or not isinstance(layers, nn.ModuleList)
        or not hasattr(encoder, "embeddings")
    ):
        return False
    if getattr(config, "position_embedding_type", "absolute") != "absolute" or getattr(config, "is_decoder", False):
        return False
    return all(_has(layer, part) for layer in layers for part in _LAYER_PARTS)


def _has(module: nn.Module, path: str) -> bool:
    for name in path.split("."):
        module = getattr(module, name, None)  # type: ignore[assignment]
        if module is None:
            return False
    return True


def encode(
    encoder: Any,
    attention_mask: torch.Tensor,
    input_ids: Optional[torch.Tensor] = None,
    inputs_embeds: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """``encoder(...).last_hidden_state`` (B, L, H): packed when ``packable``, else its forward."""
    if not packable(encoder):
        return encoder(
            input_ids=input_ids, inputs_embeds=inputs_embeds, attention_mask=attention_mask
        ).last_hidden_state
    x = encoder.embeddings(input_ids=input_ids, inputs_embeds=inputs_embeds)
    B, L, H = x.shape
    real = attention_mask.bool()
    at = real.reshape(-1).nonzero().squeeze(1)
    h = x.reshape(B * L, H)[at]
    for layer in encoder.encoder.layer:
        h = _layer(layer, h, at, real)
    return h.new_zeros((B * L, H)).index_copy(0, at, h).view(B, L, H)


def _layer(layer: Any, h: torch.Tensor, at: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """One BERT layer (post-LN) on the packed real positions ``h`` (T, H); ``at`` their flat
    places in the padded (B, L) batch, ``real`` its mask."""
    B, L = real.shape
    attn = layer.attention.self
    heads = attn.num_attention_heads
    qkv = torch.cat([attn.query(h), attn.key(h), attn.value(h)], dim=-1)
    padded = qkv.new_zeros((B * L, qkv.shape[-1])).index_copy(0, at, qkv)
    q, k, v = padded.view(B, L, 3, heads, -1).permute(2, 0, 3, 1, 4)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=real[:, None, None, :])
    context = o.transpose(1, 2).reshape(B * L, -1)[at]
    out = layer.attention.output
    a = out.LayerNorm(out.dense(context) + h)
    ffn = layer.output.dense(layer.intermediate.intermediate_act_fn(layer.intermediate.dense(a)))
    return layer.output.LayerNorm(ffn + a)
