"""Teacher distillation for `pretrain-chars --teacher`: the character encoder learns to
reproduce a pretrained subword encoder's contextual word states (Char2Subword, Aguilar et al.
2021, distilled BERT's subword embeddings into a character module; here the targets are
contextual states, and the student reads noisy text as in CharBERT's noisy LM).

Per whitespace word: the teacher reads the CLEAN text; its word state is the mean of the
pieces whose fast-tokenizer character offsets overlap the word. The student reads the text
after the attacks (and the character masks); its word state is the mean of the word's
character states. Mean rather than first character: the attacks keep a word's first and last
character, so a first-character state would be the same whether or not the middle was
attacked, and would teach no robustness. A projection head maps the student's word state
to each chosen teacher layer; the loss is the MSE between the layer-normalised prediction
and target, i.e. 2·(1 − Pearson correlation): scale-free, so no layer or outlier dimension
of the teacher sets the loss's size.

Teacher states are computed on the fly (no grad, eval mode): caching them would save the
teacher's forward pass only on epochs after the first (~40% of it for the project's 2,400
steps of 32 over 45,615 tweets) at ~0.7 GB of fp16 per teacher layer on disk.
"""

from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.nn import functional as F


class TeacherError(ValueError):
    """The teacher cannot be used; the message names it and says why."""


def align_words(offsets: Sequence[Tuple[int, int]], spans: Sequence[Tuple[int, int]]) -> List[List[int]]:
    """For each word span, the indices of the pieces whose [start, end) overlaps it.
    Zero-width pieces (specials, padding, RoBERTa's trimmed whitespace) belong to no word;
    a word the tokenizer dropped or truncated away gets no pieces."""
    pieces: List[List[int]] = [[] for _ in spans]
    for p, (start, end) in enumerate(offsets):
        if end <= start:
            continue
        for w, (ws, we) in enumerate(spans):
            if start < we and end > ws:
                pieces[w].append(p)
    return pieces


class Teacher:
    """A frozen Hugging Face encoder (directory or hub name) with a fast tokenizer, giving
    one state per word of clean text from each of ``layers`` (hidden_states indices:
    0 is the embeddings, -1 the last layer). Not an nn.Module of the pretrainer: it is
    neither trained nor saved."""

    def __init__(self, name: str, layers: Sequence[int] = (-1,), device: str = "cpu") -> None:
        from transformers import AutoModel, AutoTokenizer

        try:
            self.model = AutoModel.from_pretrained(name)
            if self.model.config.model_type == "canine":
                raise TeacherError(f"--teacher {name!r} is a CANINE model: the teacher should be a subword encoder")
            self.tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True)
        except TeacherError:
            raise
        except Exception as err:  # re-raised with the option named
            raise TeacherError(f"--teacher {name!r} is not a loadable Hugging Face encoder: {err}") from err
        if not self.tokenizer.is_fast:
            raise TeacherError(f"--teacher {name!r} has no fast tokenizer: word alignment needs character offsets")
        n_states = int(self.model.config.num_hidden_layers) + 1
        bad = [layer for layer in layers if not -n_states <= layer < n_states]
        if bad or not layers:
            raise TeacherError(
                f"--teacher-layers {list(layers)}: {name!r} has hidden states 0..{n_states - 1} (or -1..-{n_states})"
            )
        self.name = name
        self.layers = [layer % n_states for layer in layers]
        self.width = int(self.model.config.hidden_size)
        self.device = torch.device(device)
        self.model.to(self.device).eval().requires_grad_(False)
        limits = [self.tokenizer.model_max_length, getattr(self.model.config, "max_position_embeddings", 512)]
        self.max_length = int(min(x for x in limits if x and x < 10**6))

    @torch.no_grad()
    def word_states(
        self, texts: Sequence[str], spans: Sequence[Sequence[Tuple[int, int]]]
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(n_words, n_layers, width) float32 targets for all words of the batch in order,
        and a bool (n_words,) mask of the words the teacher saw (pieces within its limit)."""
        enc = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_offsets_mapping=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        out = self.model(**{k: v.to(self.device) for k, v in enc.items()}, output_hidden_states=True)
        hidden = torch.stack([out.hidden_states[layer] for layer in self.layers], dim=2).float()  # B, T, L, D
        n_words = sum(len(s) for s in spans)
        word, row, piece = [], [], []
        w = 0
        for i, (row_offsets, row_spans) in enumerate(zip(offsets, spans)):
            for pieces in align_words(row_offsets, row_spans):
                word.extend([w] * len(pieces))
                row.extend([i] * len(pieces))
                piece.extend(pieces)
                w += 1
        index = torch.tensor(word, dtype=torch.long, device=self.device)
        sums = hidden.new_zeros((n_words, len(self.layers), self.width))
        rows, cols = (torch.tensor(x, dtype=torch.long, device=self.device) for x in (row, piece))
        sums.index_add_(0, index, hidden[rows, cols])
        counts = torch.bincount(index, minlength=n_words)
        found = counts > 0
        return sums / counts.clamp(min=1).to(sums.dtype)[:, None, None], found


class DistillHead(nn.Module):
    """dense -> GELU -> LayerNorm -> one linear map per teacher layer (BERT's head shape):
    the student's word state need not live in the teacher's space, only predict it."""

    def __init__(self, width: int, teacher_width: int, n_layers: int) -> None:
        super().__init__()
        self.dense = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, teacher_width * n_layers)
        self.shape = (n_layers, teacher_width)

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(F.gelu(self.dense(words)))).view(-1, *self.shape)


def pool_words(states: torch.Tensor, word_ids: torch.Tensor, n_words: int) -> torch.Tensor:
    """Mean of each word's character states: (B, T, D) and (B, T) word numbers (-1: none)
    to (n_words, D)."""
    inside = word_ids >= 0
    ids = word_ids[inside]
    sums = states.new_zeros((n_words, states.shape[-1])).index_add_(0, ids, states[inside])
    counts = torch.bincount(ids, minlength=n_words).clamp(min=1).to(states.dtype)
    return sums / counts[:, None]


def distill_loss(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE of the layer-normalised states = 2·(1 − correlation), averaged over words and layers."""
    width = target.shape[-1]
    return F.mse_loss(F.layer_norm(predicted, (width,)), F.layer_norm(target, (width,)))


def parse_layers(text: Optional[str]) -> List[int]:
    """'-1' or '3,-1' (comma-separated hidden-state indices) as a list, with a clear error."""
    try:
        layers = [int(x) for x in (text or "-1").split(",") if x.strip()]
    except ValueError as err:
        raise TeacherError(f"--teacher-layers {text!r}: give comma-separated integers such as -1 or 3,-1") from err
    if not layers:
        raise TeacherError(f"--teacher-layers {text!r}: give at least one layer")
    return layers
