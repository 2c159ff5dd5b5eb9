"""Co-attention modules (Wang, Hu, Gormley 2023, Sec. 3).

One module per side per layer: a CO-TRM block (cross-attention with queries from
this side and keys/values from the other side; residual + LayerNorm; feed-forward;
residual + LayerNorm) followed by a TRM block (an ordinary self-attention layer).
Attention is torch's own (nn.MultiheadAttention / nn.TransformerEncoderLayer run
scaled_dot_product_attention); padding masks are honoured in every attention.
"""

from typing import Optional

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint


class CoAttentionBlock(nn.Module):
    """CO-TRM: x attends to the other side's states, then a feed-forward (post-LN)."""

    def __init__(self, width: int, n_heads: int, ffn_width: int, dropout: float):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, n_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(
            nn.Linear(width, ffn_width),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(ffn_width, width),
        )
        self.norm2 = nn.LayerNorm(width)
        self.dropout = nn.Dropout(dropout)
        # opt-in (`store_attention`): keep the last head-averaged weights (B, Lx, Lo); off,
        # torch runs its fused attention and computes no weights
        self.keep_weights = False
        self.last_weights: Optional[torch.Tensor] = None

    def forward(self, x: torch.Tensor, other: torch.Tensor, other_pad: torch.Tensor) -> torch.Tensor:
        """x: (B, Lx, W); other: (B, Lo, W); other_pad: (B, Lo) bool, True = padding."""
        attended, weights = self.attention(
            x, other, other, key_padding_mask=other_pad, need_weights=self.keep_weights, average_attn_weights=True
        )
        self.last_weights = weights.detach().float() if self.keep_weights else None
        x = self.norm1(x + self.dropout(attended))
        return self.norm2(x + self.dropout(self.ffn(x)))


class CoAttentionModule(nn.Module):
    """CO-TRM then TRM for one side: H' = TRM(CO-TRM(Q=H, K=V=H_other))."""

    def __init__(self, width: int, n_heads: int, ffn_width: int, dropout: float, checkpointing: bool = False):
        super().__init__()
        self.cross = CoAttentionBlock(width, n_heads, ffn_width, dropout)
        self.self_attention = nn.TransformerEncoderLayer(
            width,
            n_heads,
            dim_feedforward=ffn_width,
            dropout=dropout,
            activation="gelu",
            batch_first=True,
        )
        self.checkpointing = checkpointing

    def forward(
        self,
        x: torch.Tensor,
        x_pad: torch.Tensor,
        other: torch.Tensor,
        other_pad: torch.Tensor,
        rows: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """x: (B, L, W), x_pad: (B, L); other / other_pad: the other side's. rows: (B, K)
        positions of the only outputs wanted (B, K, W): the TRM block's queries and
        feed-forward then run on those rows alone (its keys and values see every position),
        the same states for a fraction of the work. A stand-in (an inference engine's
        graph) takes the same arguments."""
        if self.checkpointing and self.training and torch.is_grad_enabled():
            return checkpoint(self._forward, x, x_pad, other, other_pad, rows, use_reentrant=False)
        return self._forward(x, x_pad, other, other_pad, rows)

    def _forward(self, x: Tensor, x_pad: Tensor, other: Tensor, other_pad: Tensor, rows: Optional[Tensor]) -> Tensor:
        c = self.cross(x, other, other_pad)
        if rows is None:
            return self.self_attention(c, src_key_padding_mask=x_pad)
        return self_attention_at(self.self_attention, c, x_pad, rows)


def gather_rows(states: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, L, W) states at (B, K) positions -> (B, K, W)."""
    return states.gather(1, rows[..., None].expand(-1, -1, states.shape[-1]))


def self_attention_at(
    layer: nn.TransformerEncoderLayer, x: torch.Tensor, pad: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``layer(x, src_key_padding_mask=pad)`` at (B, K) ``rows`` only -> (B, K, W), with the
    layer's own weights: queries, output projection and feed-forward on those rows, keys and
    values on every position (fused attention: no L x L weights are kept)."""
    B, _, W = x.shape
    attn = layer.self_attn
    heads = attn.num_heads
    h = layer.norm1(x) if layer.norm_first else x
    q_in = gather_rows(h, rows)
    w_q, w_kv = attn.in_proj_weight.split([W, 2 * W])
    b_q, b_kv = attn.in_proj_bias.split([W, 2 * W]) if attn.in_proj_bias is not None else (None, None)
    q = F.linear(q_in, w_q, b_q).view(B, -1, heads, W // heads).transpose(1, 2)
    k, v = F.linear(h, w_kv, b_kv).view(B, -1, 2, heads, W // heads).permute(2, 0, 3, 1, 4)
    dropout = attn.dropout if layer.training else 0.0
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :], dropout_p=dropout)
    attended = layer.dropout1(attn.out_proj(o.transpose(1, 2).reshape(B, -1, W)))
    y = gather_rows(x, rows)
    if layer.norm_first:
        y = y + attended
        return y + layer.dropout2(feed_forward(layer, layer.norm2(y)))
    y = layer.norm1(y + attended)
    return layer.norm2(y + layer.dropout2(feed_forward(layer, y)))


def feed_forward(layer: nn.TransformerEncoderLayer, x: torch.Tensor) -> torch.Tensor:
    """``layer``'s feed-forward block as ``nn.TransformerEncoderLayer`` computes it, for the
    paths that run the layer's parts one by one (the listeners' rows, the export's traceable form)."""
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))
