"""A co-attention module in the form torch's tracing exporter keeps dynamic.

``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` bake the example's batch and
lengths into a traced graph, so the engine exported co-attention modules with torch.export
alone: 10-15 s a module even on a tiny model, against about 1 s traced (the first onnx-int8
prediction of a pipeline without saved graphs waited for both sides' modules). This form
computes the same states with the module's own weights (its outputs equal the module's in
eval mode): the attention's packed in-projection cut into a query and a key/value ``Linear``
(separate weights, so int8 quantizes every product), ``scaled_dot_product_attention``, and
every shape read from the tensors. Dropout is left out: graphs are exported in eval mode.
"""

from typing import Optional

from torch import Tensor, nn
from torch.nn import functional as F

from ..coattention import CoAttentionModule, feed_forward, gather_rows


def _linear(weight: Tensor, bias: Optional[Tensor]) -> nn.Linear:
    """A ``Linear`` holding ``weight`` / ``bias`` (views of the module's, no copy)."""
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    linear.weight = nn.Parameter(weight.detach(), requires_grad=False)
    if bias is not None:
        linear.bias = nn.Parameter(bias.detach(), requires_grad=False)
    return linear


class _Attention(nn.Module):
    """``attention(q_in, kv_in, kv_in, key_padding_mask=pad)`` of a packed-projection
    ``nn.MultiheadAttention`` (batch first), its outputs only."""

    def __init__(self, attention: nn.MultiheadAttention):
        super().__init__()
        width = attention.embed_dim
        self.heads = attention.num_heads
        w_q, w_kv = attention.in_proj_weight.split([width, 2 * width])
        b_q, b_kv = (
            attention.in_proj_bias.split([width, 2 * width]) if attention.in_proj_bias is not None else (None, None)
        )
        self.query = _linear(w_q, b_q)
        self.key_value = _linear(w_kv, b_kv)
        self.out = attention.out_proj

    def forward(self, q_in: Tensor, kv_in: Tensor, pad: Tensor) -> Tensor:
        batch, _, width = q_in.shape
        head = width // self.heads
        q = self.query(q_in).view(batch, -1, self.heads, head).transpose(1, 2)
        kv = self.key_value(kv_in).view(batch, -1, 2, self.heads, head).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, kv[0], kv[1], attn_mask=~pad[:, None, None, :])
        return self.out(o.transpose(1, 2).reshape(batch, -1, width))


class TraceableCoAttention(nn.Module):
    """A ``CoAttentionModule``'s forward (eval mode) as plain tensor operations; called as the
    module is: ``(x, x_pad, other, other_pad[, rows])``."""

    def __init__(self, module: CoAttentionModule):
        super().__init__()
        self.module = module
        self.cross = _Attention(module.cross.attention)
        self.self_attn = _Attention(module.self_attention.self_attn)

    def forward(
        self, x: Tensor, x_pad: Tensor, other: Tensor, other_pad: Tensor, rows: Optional[Tensor] = None
    ) -> Tensor:
        block = self.module.cross
        c = block.norm1(x + self.cross(x, other, other_pad))
        c = block.norm2(c + block.ffn(c))
        layer = self.module.self_attention
        h = layer.norm1(c) if layer.norm_first else c
        y = c if rows is None else gather_rows(c, rows)
        queries = h if rows is None else gather_rows(h, rows)
        attended = self.self_attn(queries, h, x_pad)
        if layer.norm_first:
            y = y + attended
            return y + feed_forward(layer, layer.norm2(y))
        y = layer.norm1(y + attended)
        return layer.norm2(y + feed_forward(layer, y))


def traceable(module: nn.Module) -> Optional[nn.Module]:
    """The traceable form of a co-attention module, or None where it has none (attention with
    separate key / value widths, an unknown module): the engine then exports the module itself
    with torch.export."""
    if not isinstance(module, CoAttentionModule):
        return None
    attentions = (module.cross.attention, module.self_attention.self_attn)
    if not all(a.batch_first and a._qkv_same_embed_dim for a in attentions):
        return None
    return TraceableCoAttention(module).eval()
