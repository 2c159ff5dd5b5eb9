"""Co-attention modules (Wang, Hu, Gormley 2023, Sec. 3).

One module per side per layer: a CO-TRM block (cross-attention with queries from
this side and keys/values from the other side; residual + LayerNorm; feed-forward;
residual + LayerNorm) followed by a TRM block (an ordinary self-attention layer).
Attention is torch's own (nn.MultiheadAttention / nn.TransformerEncoderLayer run
scaled_dot_product_attention); padding masks are honoured in every attention.
"""

from typing import Optional

import torch
from torch import nn
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
    ) -> torch.Tensor:
        if self.checkpointing and self.training and torch.is_grad_enabled():
            return checkpoint(self._forward, x, x_pad, other, other_pad, use_reentrant=False)
        return self._forward(x, x_pad, other, other_pad)

    def _forward(
        self, x: torch.Tensor, x_pad: torch.Tensor, other: torch.Tensor, other_pad: torch.Tensor
    ) -> torch.Tensor:
        c = self.cross(x, other, other_pad)
        return self.self_attention(c, src_key_padding_mask=x_pad)
