"""A character encoder grown from a subword encoder (design (b): HAT /
CharacterBERT-style word pooling): the subword encoder's pretrained position embeddings,
embedding LayerNorm and first ``k`` transformer layers run over *words* whose vectors a
small character front end computes from their spelling. Only the front end (and the
char-level join at the end) start new; the copied layers already know the language.

The interface is CANINE's as ``EntangleEncoder`` uses it: ``forward(input_ids=codepoints
with CLS = U+E000 / SEP = U+E001 / pad = 0, attention_mask)`` -> ``.last_hidden_state``
(B, L, H), one state per character including the specials; ``config.hidden_size``.

Words (``segment``), a rule over codepoint classes, vectorised in torch:
- whitespace (and padding) belongs to no word; a whitespace character reads the state of
  the word before it (the row's first word, its [CLS], when there is none);
- letters and digits (Unicode L*, N*) form runs; every other character (punctuation,
  symbols, emoji, CJK ideographs, the specials) is a word of its own, as BERT's
  pre-tokenizer splits them, so the copied layers see units of the size they were trained on;
- combining marks, format characters (ZWJ, variation selectors) and emoji skin-tone
  modifiers join the word before them, and the character after a ZWJ does too (an emoji
  ZWJ sequence is one word); regional-indicator flags are two words;
- [CLS] and [SEP] are always words of their own: a joiner after [CLS] starts a word (as
  after whitespace) and [SEP] after a ZWJ still starts its own, so no spelling is lost in a
  special's learned vector;
- a word longer than ``max_word_chars`` is cut into pieces of that many characters.

Per word: hashed codepoint embeddings (case kept; ``hash_functions`` hashes into
``hash_buckets`` rows, summed, as CANINE) + in-word position -> ``char_layers`` transformer
layers inside the word -> [mean; max] pooled -> MLP -> the word vector in the subword
encoder's input-embedding space. [CLS] and [SEP] words are learned vectors (started from
the subword encoder's [CLS]/[SEP] embeddings). Per character, one join layer (as CANINE's
upsampling): ``LayerNorm(word state + FFN([char state; word state]))`` with the FFN's
output started at zero, so at the start every character carries its word's copied state.
Padding never reaches a word or the copied layers: outputs do not depend on it.

``import spacy_entangle`` registers the model type with ``AutoConfig`` / ``AutoModel``
(lazily, when transformers' auto classes load: modeling/char_designs.py, auto_classes.py).
"""

import unicodedata
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union, cast

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from .. import canine
from .grown_config import GrownCharConfig
from .unpadded import encode

SPACE, WORD, SINGLE, JOIN, SPECIAL = 0, 1, 2, 3, 4  # codepoint classes of the word rule
ZWJ = 0x200D
_PRIMES = (31, 43, 59, 61, 73, 97, 103, 113)  # CANINE's hash primes


@dataclass
class Segmentation:
    """Where each character's word is. ``word``: (B, L) global word number of each
    character in the batch's words (in-word characters only, else -1); ``context``:
    (B, L) the word whose state the character reads (-1: none; padding); ``pos``: (B, L)
    position inside the word; ``row``/``slot``: (N,) each word's row and place in it;
    ``n_slots``: the most words in a row; ``first_id``: (N,) each word's first codepoint."""

    word: torch.Tensor
    context: torch.Tensor
    pos: torch.Tensor
    row: torch.Tensor
    slot: torch.Tensor
    n_slots: int
    first_id: torch.Tensor

    @property
    def n_words(self) -> int:
        return int(self.row.shape[0])


@cache
def char_class(codepoint: int) -> int:
    """The word rule's class of one codepoint (see the module docstring)."""
    if codepoint > 0x10FFFF:
        return SINGLE
    ch = chr(codepoint)
    if ch.isspace():
        return SPACE
    cat = unicodedata.category(ch)
    if cat[0] == "M" or cat == "Cf" or 0x1F3FB <= codepoint <= 0x1F3FF or 0xFE00 <= codepoint <= 0xFE0F:
        return JOIN
    if _is_cjk(codepoint):
        return SINGLE
    if cat[0] in "LN":
        return WORD
    return SINGLE


def _is_cjk(cp: int) -> bool:
    """BERT's CJK ideograph blocks: each ideograph is a word, as BERT splits them."""
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def classify(input_ids: torch.Tensor) -> torch.Tensor:
    """Each id's class, looked up once per distinct codepoint (a batch has a few hundred)."""
    uniq, inverse = torch.unique(input_ids, return_inverse=True)
    table = torch.tensor([char_class(int(cp)) for cp in uniq.tolist()], dtype=torch.long, device=input_ids.device)
    return table[inverse]


def _fill_forward(values: torch.Tensor, keep: torch.Tensor, empty: int) -> torch.Tensor:
    """Each position's value at the last position at or before it where ``keep`` holds
    (``empty`` where there is none), per row."""
    idx = torch.arange(values.shape[1], device=values.device).expand_as(values)
    last = torch.where(keep, idx, torch.full_like(idx, -1)).cummax(dim=1).values
    filled = values.gather(1, last.clamp(min=0))
    return torch.where(last >= 0, filled, torch.full_like(filled, empty))


def _shift_right(values: torch.Tensor, fill: int) -> torch.Tensor:
    return F.pad(values, (1, 0), value=fill)[:, :-1]


def segment(input_ids: torch.Tensor, attention_mask: torch.Tensor, max_word_chars: int) -> Segmentation:
    """Words of a batch of codepoint rows by the module's rule, without a per-character
    Python loop."""
    real = attention_mask.bool()
    special = real & ((input_ids == canine.CLS) | (input_ids == canine.SEP))
    cls = torch.where(real, classify(input_ids), torch.full_like(input_ids, SPACE))
    cls = torch.where(special, torch.full_like(cls, SPECIAL), cls)
    # a joiner with nothing to join (row start, after whitespace or a special) is a word of its own
    before = _shift_right(_fill_forward(cls, cls != JOIN, SPACE), SPACE)
    alone = (cls == JOIN) & ((before == SPACE) | (before == SPECIAL))
    cls = torch.where(alone, torch.full_like(cls, SINGLE), cls)
    before = _shift_right(_fill_forward(cls, cls != JOIN, SPACE), SPACE)
    after_zwj = (_shift_right(input_ids, 0) == ZWJ) & ~special
    starts = ((cls == SINGLE) | (cls == SPECIAL) | ((cls == WORD) & (before != WORD))) & ~after_zwj
    in_word = cls != SPACE
    idx = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
    run_start = torch.where(starts, idx, torch.full_like(idx, -1)).cummax(dim=1).values
    pos_in_run = idx - run_start
    starts = in_word & (pos_in_run % max_word_chars == 0)
    pos = torch.where(in_word, pos_in_run % max_word_chars, torch.full_like(idx, -1))
    number = starts.flatten().long().cumsum(0).view_as(starts) - 1  # global word numbers
    rows, cols = starts.nonzero(as_tuple=True)
    n_per_row = starts.sum(dim=1)
    first = n_per_row.cumsum(0) - n_per_row  # each row's first word number
    word = torch.where(in_word, number, torch.full_like(number, -1))
    # whitespace reads the word before it, or its row's first word
    context = torch.maximum(number, first[:, None])
    context = torch.where(real & (n_per_row[:, None] > 0), context, torch.full_like(context, -1))
    slot = torch.arange(rows.shape[0], device=input_ids.device) - first[rows]
    return Segmentation(
        word, context, pos, rows, slot, int(n_per_row.max()) if len(n_per_row) else 0, input_ids[rows, cols]
    )


class HashEmbedding(nn.Module):
    """CANINE's hash embedding: ``n`` hashes of the codepoint into ``buckets`` rows each, summed."""

    def __init__(self, width: int, buckets: int, n: int) -> None:
        super().__init__()
        if not 1 <= n <= len(_PRIMES):
            raise ValueError(f"hash_functions must be 1..{len(_PRIMES)}, got {n}")
        self.buckets = buckets
        self.tables = nn.ModuleList(nn.Embedding(buckets, width) for _ in range(n))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return sum(table(((ids + 1) * prime) % self.buckets) for table, prime in zip(self.tables, _PRIMES))


class GrownCharModel(PreTrainedModel):
    """See the module docstring. ``front_end`` maps spellings to word vectors alone (the
    type-level pretraining stage uses it); ``forward`` is the whole encoder."""

    config_class = GrownCharConfig
    config: GrownCharConfig
    base_model_prefix = "grown"
    main_input_name = "input_ids"
    # gradient_checkpointing_enable() (the entangle component's gradient_checkpointing) sets
    # ``gradient_checkpointing`` here (the char layers) and in the word encoder (the copied layers)
    supports_gradient_checkpointing = True
    # TransformerEncoderLayers this model runs piece by piece (_layer_within_words), never
    # through torch's fused fast path: int8 may quantize their feed-forward layers
    unfused_layers = ("char_layers",)

    def __init__(self, config: GrownCharConfig) -> None:
        super().__init__(config)
        if not config.word_encoder.get("model_type"):
            raise ValueError("GrownCharConfig.word_encoder needs the subword encoder's config (with its model_type)")
        C, H = config.char_width, config.hidden_size
        if C % config.char_heads:
            raise ValueError(f"char_width {C} must be divisible by char_heads {config.char_heads}")
        self.char_embed = HashEmbedding(C, config.hash_buckets, config.hash_functions)
        self.char_pos = nn.Embedding(config.max_word_chars, C)
        self.char_norm = nn.LayerNorm(C)
        self.char_layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                C,
                config.char_heads,
                config.char_ffn_width,
                config.dropout,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(config.char_layers)
        )
        self.char_out_norm = nn.LayerNorm(C)
        self.to_word = nn.Sequential(nn.Linear(2 * C, 2 * C), nn.GELU(), nn.Linear(2 * C, H))
        self.cls_word = nn.Parameter(torch.zeros(H))
        self.sep_word = nn.Parameter(torch.zeros(H))
        self.words = _word_encoder(config.word_encoder)
        self.join = nn.Sequential(nn.Linear(C + H, 2 * H), nn.GELU(), nn.Linear(2 * H, H))
        self.join_norm = nn.LayerNorm(H)
        self.dropout = nn.Dropout(config.dropout)
        self.gradient_checkpointing = False
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        std = 0.02
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(0.0, std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(0.0, std)
        elif isinstance(module, nn.LayerNorm):
            module.weight.data.fill_(1.0)
            module.bias.data.zero_()

    def get_input_embeddings(self) -> nn.Module:
        return self.char_embed

    def copied_parameters(self) -> List[nn.Parameter]:
        """The parameters copied from the subword encoder (frozen first in pretraining)."""
        return list(self.words.parameters())

    def copied_layers(self) -> List[nn.Module]:
        """The copied transformer layers, bottom to top (BERT-style ``encoder.layer``; the
        late unfreezing of pretraining picks the top ones)."""
        layers = getattr(getattr(self.words, "encoder", None), "layer", None)
        if not isinstance(layers, nn.ModuleList):
            raise ValueError(f"the word encoder ({type(self.words).__name__}) has no encoder.layer list")
        return list(layers)

    def char_states(
        self, ids: torch.Tensor, pos: torch.Tensor, word: torch.Tensor, real: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """(B, L) codepoints, in-word positions and word numbers (-1: in no word) ->
        (B, L, C) local character states. Each character attends to its own word's
        characters only (a character in no word, e.g. whitespace, to itself): the layers
        run over the characters as one flat list, and only the attention packs each word's
        characters into a block of words of similar length, so the cost is linear in the
        row length (no L x L mask per row). real: (B, L), False on padding, which then skips
        the layers (its states are never read)."""
        x = self.dropout(self.char_norm(self.char_embed(ids) + self.char_pos(pos.clamp(min=0))))
        if not self.char_layers:
            return self.char_out_norm(x)
        B, L, C = x.shape
        flat = x.reshape(B * L, C)
        chosen = real.reshape(-1).nonzero().squeeze(1) if real is not None else None
        words = pack_words(word, chosen)
        h = flat if chosen is None else flat[chosen]
        for layer in self.char_layers:
            step = partial(_layer_within_words, layer, words)
            if self.gradient_checkpointing and self.training:
                h = self._gradient_checkpointing_func(step, h)
            else:
                h = step(h)
        flat = h if chosen is None else flat.index_copy(0, chosen, h)
        return self.char_out_norm(flat.view(B, L, C))

    def pool(self, states: torch.Tensor, word: torch.Tensor, n_words: int) -> torch.Tensor:
        """(B, L, C) states and word numbers (B, L) -> (n_words, H): [mean; max] over each
        word's characters -> MLP."""
        inside = word >= 0
        ids, values = word[inside], states[inside]
        index = ids[:, None].expand_as(values)
        sums = values.new_zeros((n_words, values.shape[-1])).index_add_(0, ids, values)
        counts = torch.bincount(ids, minlength=n_words).clamp(min=1).to(values.dtype)
        top = values.new_zeros((n_words, values.shape[-1])).scatter_reduce(0, index, values, "amax", include_self=False)
        return self.to_word(torch.cat([sums / counts[:, None], top], dim=-1))

    def front_end(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Word vectors (N, H) of N spellings given as padded codepoints (N, W) + mask;
        spellings longer than max_word_chars are cut."""
        ids, mask = ids[:, : self.config.max_word_chars], mask[:, : self.config.max_word_chars].bool()
        pos = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        rows = torch.arange(ids.shape[0], device=ids.device)[:, None].expand_as(ids)
        word = torch.where(mask, rows, torch.full_like(rows, -1))
        return self.pool(self.char_states(ids, pos, word, mask), word, ids.shape[0])

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: Optional[torch.Tensor] = None,
        output_hidden_states: bool = False,
        return_dict: bool = True,
        **kwargs: Any,
    ) -> Union[BaseModelOutput, Tuple[torch.Tensor, ...]]:
        """One state per character. ``hidden_states`` (when asked): the word-level states
        (B, n_words, H) of the copied embeddings and each copied layer, slot 0 = [CLS]."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        seg = segment(input_ids, attention_mask, self.config.max_word_chars)
        if seg.n_slots > self.config.max_words:
            raise ValueError(
                f"a row of {input_ids.shape[1]} characters has {seg.n_slots} words; the copied position table "
                f"holds {self.config.max_words}: cut the text into windows of at most {self.config.max_words} "
                "characters (specials included), as the entangle component's windows are"
            )
        B, L = input_ids.shape
        H = self.config.hidden_size
        real = attention_mask.bool()
        local = self.char_states(input_ids, seg.pos, seg.word, real)
        vectors = self.pool(local, seg.word, seg.n_words)
        vectors = torch.where((seg.first_id == canine.CLS)[:, None], self.cls_word.to(vectors.dtype), vectors)
        vectors = torch.where((seg.first_id == canine.SEP)[:, None], self.sep_word.to(vectors.dtype), vectors)
        word_in = vectors.new_zeros((B, max(seg.n_slots, 1), H))
        word_mask = attention_mask.new_zeros((B, max(seg.n_slots, 1)))
        word_in[seg.row, seg.slot] = vectors
        word_mask[seg.row, seg.slot] = 1
        if output_hidden_states:
            out = self.words(inputs_embeds=word_in, attention_mask=word_mask, output_hidden_states=True)
            hidden, last = out.hidden_states, out.last_hidden_state
        else:  # at prediction, packed: the padded word slots cost nothing
            hidden, last = None, encode(self.words, word_mask, inputs_embeds=word_in)
        ctx_words = last[seg.row, seg.slot]  # (N, H)
        # per character: its own local state joined with its word's state
        # (real characters only: padding stays 0)
        joined = self._join(local[real], ctx_words, seg.context[real])
        states = joined.new_zeros((B, L, H)).index_put((real,), joined)
        if not return_dict:
            return (states,) + ((hidden,) if hidden is not None else ())
        return BaseModelOutput(last_hidden_state=cast(torch.FloatTensor, states), hidden_states=hidden)

    def _join(self, local: torch.Tensor, words: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """(P, C) characters' local states, (N, H) word states, (P,) each character's word
        (-1: none, it reads zeros) -> (P, H): ``LayerNorm(ctx + FFN([local; ctx]))``. The FFN's
        first layer is split: its word half runs once per word, not once per character (a
        third of the characters' work; a quantized copy, inference = "int8", runs it whole)."""
        first = self.join[0]
        has_ctx = context >= 0

        def per_char(x: torch.Tensor) -> torch.Tensor:
            out = x.new_zeros((len(context), x.shape[-1]))
            if has_ctx.any():
                out[has_ctx] = x[context[has_ctx]]
            return out

        ctx = per_char(words)
        if type(first) is nn.Linear:
            C = local.shape[-1]
            hidden = F.linear(local, first.weight[:, :C], first.bias) + per_char(F.linear(words, first.weight[:, C:]))
            ffn = self.join[2](self.join[1](hidden))
        else:
            ffn = self.join(torch.cat([local, ctx], dim=-1))
        return self.join_norm(ctx + self.dropout(ffn))


@dataclass
class WordBlock:
    """The characters of words of similar length packed for attention: ``flat`` (P,) their
    positions in the flattened (B * L) characters, ``unit``/``slot`` (P,) their word in the
    block and place in it; ``mask`` (n_words, width) True on real characters."""

    flat: torch.Tensor
    unit: torch.Tensor
    slot: torch.Tensor
    mask: torch.Tensor


# the blocks' longest words: a word is padded to at most twice its length (a tweet's
# words are short; one long word must not pad every word of the batch to its length)
_BLOCK_BOUNDS = (2, 4, 8, 16)


def pack_words(word: torch.Tensor, chosen: Optional[torch.Tensor] = None) -> List[WordBlock]:
    """Words of two or more characters of (B, L) word numbers (-1: in no word), in blocks
    by length. A character alone (in no word, or a word of one character) attends only to
    itself: it needs no block. chosen: the flat positions the layers run on (every word's
    characters among them); ``flat`` then indexes them."""
    flat_word = word.reshape(-1) if chosen is None else word.reshape(-1)[chosen]
    inside = (flat_word >= 0).nonzero().squeeze(1)
    numbers, order = torch.sort(flat_word[inside], stable=True)
    positions = inside[order]
    _, counts = torch.unique_consecutive(numbers, return_counts=True)
    unit = torch.repeat_interleave(torch.arange(len(counts), device=word.device), counts)
    slot = torch.arange(len(positions), device=word.device) - (counts.cumsum(0) - counts)[unit]
    length = counts[unit]
    blocks = []
    low = 1
    for high in _BLOCK_BOUNDS + (int(counts.max()) if len(counts) else 0,):
        chosen = (length > low) & (length <= high)
        low = max(low, high)
        if not bool(chosen.any()):
            continue
        units, block_unit = torch.unique(unit[chosen], return_inverse=True)
        block_slot = slot[chosen]
        mask = torch.zeros((len(units), int(block_slot.max()) + 1), dtype=torch.bool, device=word.device)
        mask[block_unit, block_slot] = True
        blocks.append(WordBlock(positions[chosen], block_unit, block_slot, mask))
    return blocks


def _layer_within_words(layer: nn.TransformerEncoderLayer, blocks: List[WordBlock], x: torch.Tensor) -> torch.Tensor:
    """One pre-norm ``nn.TransformerEncoderLayer`` (its own weights and submodules) over
    (P, C) characters whose attention stays inside ``blocks``' words. The projections and
    the feed-forward run on the characters alone, never on padding."""
    x = x + layer.dropout1(_attend_within_words(layer.self_attn, layer.norm1(x), blocks))
    ffn = layer.linear2(layer.dropout(layer.activation(layer.linear1(layer.norm2(x)))))
    return x + layer.dropout2(ffn)


def _attend_within_words(attn: nn.MultiheadAttention, h: torch.Tensor, blocks: List[WordBlock]) -> torch.Tensor:
    """``attn`` (self-attention) with each character attending to its word's characters
    only: alone, its attention output is its own value."""
    P, C = h.shape
    heads = attn.num_heads
    qkv = F.linear(h, attn.in_proj_weight, attn.in_proj_bias)
    out = qkv[:, 2 * C :]
    dropout = attn.dropout if attn.training else 0.0
    for block in blocks:
        n, width = block.mask.shape
        packed = qkv.new_zeros((n, width, 3 * C)).index_put((block.unit, block.slot), qkv[block.flat])
        q, k, v = packed.view(n, width, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=block.mask[:, None, None, :], dropout_p=dropout)
        out = out.index_copy(0, block.flat, o.transpose(1, 2).reshape(n, width, C)[block.unit, block.slot])
    return attn.out_proj(out)


def _word_encoder(config_dict: Dict[str, Any]) -> nn.Module:
    """The subword encoder's architecture (cut to k layers) with random weights; the
    builder copies the pretrained ones in, from_pretrained loads the saved ones."""
    from transformers import AutoConfig, AutoModel

    config_dict = dict(config_dict)
    config = AutoConfig.for_model(config_dict.pop("model_type"), **config_dict)
    try:
        return AutoModel.from_config(config, add_pooling_layer=False)
    except TypeError:  # encoders without a pooler argument
        return AutoModel.from_config(config)


def max_words(config: Any) -> int:
    """Word positions the copied position table of ``config``'s encoder holds (RoBERTa's
    starts after its pad id): the most words a row of a grown encoder may have."""
    limit = int(getattr(config, "max_position_embeddings", 512))
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= int(config.pad_token_id) + 1
    return limit


def grow_char_encoder(
    subword: Union[str, Path],
    out_dir: Optional[Union[str, Path]] = None,
    *,
    k: Optional[int] = None,
    char_width: int = 256,
    char_heads: int = 4,
    char_layers: int = 1,
    hash_buckets: int = 16384,
    hash_functions: int = 2,
    max_word_chars: int = 24,
    seed: int = 0,
) -> GrownCharModel:
    """A grown encoder whose word encoder is ``subword``'s embeddings (positions, types,
    LayerNorm) and first ``k`` layers (all when None), copied bit for bit; the [CLS]/[SEP]
    words start from its [CLS]/[SEP] embeddings; the front end is random under ``seed``.
    Saved to ``out_dir`` (safetensors) when given."""
    from transformers import AutoModel, AutoTokenizer

    teacher = AutoModel.from_pretrained(str(subword))
    n_layers = int(teacher.config.num_hidden_layers)
    k = n_layers if k is None else k
    if not 1 <= k <= n_layers:
        raise ValueError(f"k must be 1..{n_layers} (the layers of {subword!r}), got {k}")
    word_config = {**teacher.config.to_diff_dict(), "model_type": teacher.config.model_type}
    for key in ("architectures", "_name_or_path", "spacy_entangle_note", "transformers_version", "torch_dtype"):
        word_config.pop(key, None)
    pad = int(word_config.get("pad_token_id") or 0)
    word_config.update(num_hidden_layers=k, vocab_size=pad + 1)
    config = GrownCharConfig(
        word_encoder=word_config,
        char_width=char_width,
        char_heads=char_heads,
        char_layers=char_layers,
        hash_buckets=hash_buckets,
        hash_functions=hash_functions,
        max_word_chars=max_word_chars,
        max_words=max_words(teacher.config),
        dropout=float(getattr(teacher.config, "hidden_dropout_prob", 0.1)),
        grown_from=str(subword),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GrownCharModel(config)
    copied = copy_word_encoder(teacher, model)
    expected = {name for name in model.words.state_dict() if ".layer." in name}
    if not expected <= copied:
        raise ValueError(f"could not copy {sorted(expected - copied)[:3]}... from {subword!r}")
    tokenizer = AutoTokenizer.from_pretrained(str(subword))
    table = teacher.get_input_embeddings().weight.data
    with torch.no_grad():
        model.cls_word.copy_(table[tokenizer.cls_token_id])
        model.sep_word.copy_(table[tokenizer.sep_token_id])
        last = model.join[-1]
        assert isinstance(last, nn.Linear)  # the join MLP ends in its output projection
        last.weight.zero_()
        last.bias.zero_()
    if out_dir is not None:
        model.save_pretrained(str(out_dir), safe_serialization=True)
    return model


def copy_word_encoder(teacher: nn.Module, model: GrownCharModel) -> set:
    """Copy every weight the word encoder shares with the teacher (same name and shape:
    positions, token types, LayerNorm, the first k layers); returns the names copied."""
    source = teacher.state_dict()
    target = model.words.state_dict()
    copied = {
        name
        for name, value in target.items()
        if name in source and source[name].shape == value.shape and "word_embeddings" not in name
    }
    model.words.load_state_dict({name: source[name] for name in copied}, strict=False)
    return copied


def grow_design(subword: Union[str, Path], *, k: Optional[int], char_width: int, seed: int) -> GrownCharModel:
    """The registered design "word" (modeling/char_designs.py): 64-wide char heads, at least one."""
    heads = max(1, char_width // 64)
    if char_width % heads:
        heads = 1
    return grow_char_encoder(subword, k=k, char_width=char_width, char_heads=heads, seed=seed)
