"""The pure-PyTorch pretraining model: a CANINE encoder plus one character prediction head.

Both objectives (masked spans and noisy-word reconstruction) predict a character class
from the encoder's per-character output, so they share one head; their losses are kept
apart for the log. With a teacher, a second head predicts the teacher's word states from
the mean of each word's character states (distill.py). Only the encoder is kept afterwards:
the heads are pretraining tools.
"""

from typing import TYPE_CHECKING, Dict, Optional, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F

from .data import IGNORE
from .distill import DistillHead, distill_loss, pool_words

if TYPE_CHECKING:  # transformers is imported where a model is built, not with the package
    from transformers import PreTrainedModel

    from .grow import GrownPretrainer


class CharPredictionHead(nn.Module):
    """BERT's LM-head shape (dense -> GELU -> LayerNorm -> classes) over character states."""

    def __init__(self, width: int, n_classes: int) -> None:
        super().__init__()
        self.dense = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, n_classes)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(F.gelu(self.dense(states))))


class CharPretrainer(nn.Module):
    def __init__(self, encoder: "PreTrainedModel", n_classes: int, distill: Optional[Tuple[int, int]] = None) -> None:
        """``distill``: (teacher width, number of teacher layers) when a teacher is used."""
        super().__init__()
        self.encoder: PreTrainedModel = encoder
        width = int(encoder.config.hidden_size)
        self.head = CharPredictionHead(width, n_classes)
        self.distill = DistillHead(width, *distill) if distill else None

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        mlm_targets: torch.Tensor,
        noisy_targets: torch.Tensor,
        noisy_weight: float = 1.0,
        word_ids: Optional[torch.Tensor] = None,
        word_targets: Optional[torch.Tensor] = None,
        word_found: Optional[torch.Tensor] = None,
        distill_weight: float = 1.0,
        scales: Optional[Dict[str, float]] = None,
    ) -> Dict[str, torch.Tensor]:
        """Losses (mean over scored characters of each objective, over words the teacher saw
        for distillation) and correct/total counts. Only scored positions go through the
        character head: most characters are not scored. ``scales``: a factor per objective
        on the loss trained (not the one reported): a data-parallel process's share of the
        global batch's scored items (distributed.py)."""
        scale = scales or {}
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        result: Dict[str, torch.Tensor] = {}
        total = states.new_zeros(())
        for name, targets, weight in (("mlm", mlm_targets, 1.0), ("noisy", noisy_targets, noisy_weight)):
            scored = targets != IGNORE
            n = scored.sum()
            if int(n) == 0 or weight == 0:
                continue
            logits = self.head(states[scored])
            gold = targets[scored]
            loss = F.cross_entropy(logits, gold)
            total = total + weight * loss * scale.get(name, 1.0)
            result[f"{name}_loss"] = loss.detach()
            result[f"{name}_correct"] = (logits.argmax(-1) == gold).sum().detach()
            result[f"{name}_n"] = n.detach()
        if self.distill is not None and word_targets is not None:
            if word_ids is None or word_found is None:
                raise ValueError("word_targets need the word_ids and word_found of the same batch")
            if bool(word_found.any()):
                words = pool_words(states, word_ids, int(word_targets.shape[0]))[word_found]
                loss = distill_loss(self.distill(words), word_targets[word_found])
                total = total + distill_weight * loss * scale.get("distill", 1.0)
                result["distill_loss"] = loss.detach()
                result["distill_n"] = word_found.sum().detach()
        if not total.requires_grad and torch.is_grad_enabled():  # nothing scored: a zero that reaches the weights used
            total = states.sum() * 0.0
        result["loss"] = total
        return result


# what a run trains: an encoder (kept afterwards) and its heads or stage losses (not kept)
Pretrainer = Union[CharPretrainer, "GrownPretrainer"]
