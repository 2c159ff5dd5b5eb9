"""The entanglement model: a character encoder and a subword encoder joined by
``n_coattention`` co-attention modules per side."""

from typing import Any, List, Optional, Tuple, cast

import torch
from torch import nn
from torch.profiler import record_function

from .coattention import CoAttentionBlock, CoAttentionModule, gather_rows
from .sizes import check_coattention, coattention_heads
from .unpadded import encode


class EntangleEncoder(nn.Module):
    """Character-aware subword states and subword-aware character states.

    Both sides are projected to ``width`` when their encoder is narrower or wider
    (e.g. CANINE 768 -> XLM-R large 1024). ``n_heads`` = None takes the subword
    encoder's head count, and is refused when that does not divide ``width``. ``forward`` can skip the last module of
    a side nobody reads (``need_subword`` / ``need_char``): the other side's last
    module only needs the previous layer's states.
    """

    def __init__(
        self,
        char_encoder: Any,
        subword_encoder: Any,
        *,
        n_coattention: int = 2,
        width: Optional[int] = None,
        n_heads: Optional[int] = None,
        ffn_width: Optional[int] = None,
        dropout: float = 0.1,
        checkpointing: bool = False,
    ):
        super().__init__()
        sub_width = subword_encoder.config.hidden_size
        char_width = char_encoder.config.hidden_size
        width = sub_width if width is None else width
        check_coattention(
            "EntangleEncoder", n_coattention=n_coattention, width=width, n_heads=n_heads, ffn_width=ffn_width
        )
        n_heads = coattention_heads(
            "EntangleEncoder", width, n_heads, getattr(subword_encoder.config, "num_attention_heads", None)
        )
        self.char_encoder = char_encoder
        self.subword_encoder = subword_encoder
        ffn_width = 4 * width if ffn_width is None else ffn_width
        self.width = width
        self.n_coattention = n_coattention
        self.sub_proj = nn.Linear(sub_width, width) if sub_width != width else nn.Identity()
        self.char_proj = nn.Linear(char_width, width) if char_width != width else nn.Identity()
        self.sub_layers = nn.ModuleList(
            CoAttentionModule(width, n_heads, ffn_width, dropout, checkpointing) for _ in range(n_coattention)
        )
        self.char_layers = nn.ModuleList(
            CoAttentionModule(width, n_heads, ffn_width, dropout, checkpointing) for _ in range(n_coattention)
        )
        self._keep_attention = False
        if checkpointing:
            for enc in (char_encoder, subword_encoder):
                if getattr(enc, "supports_gradient_checkpointing", False):
                    enc.gradient_checkpointing_enable()

    def keep_attention(self, keep: bool) -> None:
        """Whether the next forward passes keep each module's cross-attention weights
        (``attention_maps``); they need both sides' modules, so both are computed."""
        self._keep_attention = keep
        for pair in self._cross_blocks():
            for block in pair:
                block.keep_weights = keep

    def _cross_blocks(self) -> List[Tuple[CoAttentionBlock, CoAttentionBlock]]:
        """Per module, the (subword side, char side) cross-attention blocks (a ModuleList's
        items are typed nn.Module)."""
        pairs = zip(self.sub_layers, self.char_layers)
        return [(cast(CoAttentionModule, s).cross, cast(CoAttentionModule, c).cross) for s, c in pairs]

    def attention_maps(self, clear: bool = False) -> List[Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]]:
        """Per module, the last forward's head-averaged cross-attention weights:
        (subword -> char: (B, Ls, Lc), char -> subword: (B, Lc, Ls)); rows sum to 1 over
        the real positions of the other side (padding gets 0). clear: the modules forget
        them (the caller holds the only reference: memory is freed once it is done)."""
        blocks = self._cross_blocks()
        maps = [(s.last_weights, c.last_weights) for s, c in blocks]
        if clear:
            for pair in blocks:
                for block in pair:
                    block.last_weights = None
        return maps

    def forward(
        self,
        sub_ids: torch.Tensor,
        sub_mask: torch.Tensor,
        char_ids: torch.Tensor,
        char_mask: torch.Tensor,
        need_subword: bool = True,
        need_char: bool = True,
        sub_rows: Optional[torch.Tensor] = None,
        char_rows: Optional[torch.Tensor] = None,
    ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
        """ids/masks: (B, L) with mask 1 = real. Returns (B, Ls, W), (B, Lc, W) or None.

        With n_coattention = 0 the sides do not meet: an encoder whose side is not
        needed is not run at all (n_coattention = 0 + char-only listeners is the
        char-only baseline: CANINE alone, no subword encoder, no co-attention).
        sub_rows / char_rows: (B, K) positions of the only rows wanted on that side (what
        the listeners read); that side's output is then (B, K, W), and its last module's
        self-attention queries and feed-forward run on those rows alone (its keys and
        values still see every position): the same states, a fraction of the work."""
        m = self.n_coattention
        if self._keep_attention:
            need_subword = need_char = True
        hs = hc = None
        # record_function labels: the per-stage split of research/benchmarks/speed.py (free when
        # no profiler runs)
        if need_subword or m > 0:
            with record_function("entangle.subword_encoder"):
                out = encode(self.subword_encoder, sub_mask, input_ids=sub_ids)
                hs = self.sub_proj(out)
        if need_char or m > 0:
            with record_function("entangle.char_encoder"):
                out = self.char_encoder(input_ids=char_ids, attention_mask=char_mask).last_hidden_state
                hc = self.char_proj(out)
        sub_pad = sub_mask == 0
        char_pad = char_mask == 0
        with record_function("entangle.coattention"):
            for i, (sub_layer, char_layer) in enumerate(zip(self.sub_layers, self.char_layers)):
                last = i == m - 1
                # the last module's output at the kept rows only (a stand-in takes them too)
                new_s = (
                    sub_layer(hs, sub_pad, hc, char_pad, sub_rows if last else None)
                    if need_subword or not last
                    else None
                )
                new_c = (
                    char_layer(hc, char_pad, hs, sub_pad, char_rows if last else None)
                    if need_char or not last
                    else None
                )
                hs, hc = new_s, new_c
        if m == 0:  # no module picked the rows
            hs, hc = _at_rows(hs, sub_rows), _at_rows(hc, char_rows)
        # float32 out, also under autocast: the thinc side works in float32
        # a needed side is always computed (its encoder ran and its last module is not skipped)
        return (hs.float() if need_subword and hs is not None else None), (
            hc.float() if need_char and hc is not None else None
        )


def _at_rows(states: Optional[torch.Tensor], rows: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """(B, L, W) states at (B, K) positions -> (B, K, W) (all of them when rows is None)."""
    if states is None or rows is None:
        return states
    return gather_rows(states, rows)
