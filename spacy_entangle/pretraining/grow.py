"""`pretrain-chars --init-from SUBWORD`: grow a character encoder from a subword encoder
(modeling/grown.py) and train only what is new, in two stages:

- Stage A (type level, Char2Subword / MIMICK): the front end maps a word's spelling, clean
  or attacked (spacy_entangle.noise), to the subword encoder's input-level state of the clean
  word: the mean of its pieces' input embeddings (the vector the copied layers expect as
  ``inputs_embeds``). Word types are sampled by sqrt(frequency): uniform sampling leaves
  common words unlearned, by-frequency sampling sees little but them. Targets are computed
  once from the embedding table (no teacher forward pass).
- Stage B (contextual distillation, as ``--teacher``): the student reads attacked text, the
  teacher the clean text; per whitespace word, the student's states match the teacher's at
  a middle copied layer (word level) and at the last copied layer (the per-character output,
  after the join layer), layer-normalised (distill.py's loss). The copied layers live in the
  teacher's space, so no projection head is needed: the student's states *are* comparable.
  The copied layers stay frozen; with ``unfreeze_top`` the top ones train at
  ``copied_lr_scale`` of the learning rate from ``unfreeze_from`` of the steps on.

Design (a), ``--design canine`` (modeling/grown_canine.py), has no word-level front end, so
it has stage B only: its middle target is read from the copied stack's molecule states
(each character reads its molecule's), its last from the per-character output. What differs
between designs (the encoder grown, the pretrainer class, the stages) is the registered
``CharDesign`` (modeling/char_designs.py).
"""

import random
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import nn

from ..modeling import grown_canine
from ..modeling.char_designs import design_of, get_design
from ..modeling.grown import GrownCharModel, segment
from ..noise.attacks import perturb_word
from .data import CharVocab, make_batch, word_spans
from .distill import Teacher, distill_loss, pool_words
from .settings import PretrainSettings


def split_words(texts: Sequence[str], max_word_chars: int, batch: int = 512) -> List[List[str]]:
    """The grown encoder's words of each text (its own rule, specials left out)."""
    out: List[List[str]] = []
    for start in range(0, len(texts), batch):
        chunk = list(texts[start : start + batch])
        length = max((len(t) for t in chunk), default=0)
        ids = numpy.zeros((len(chunk), max(length, 1)), dtype="int64")
        mask = numpy.zeros_like(ids)
        for i, text in enumerate(chunk):
            if text:
                ids[i, : len(text)] = numpy.frombuffer(text.encode("utf-32-le"), dtype="<u4")
                mask[i, : len(text)] = 1
        seg = segment(torch.from_numpy(ids), torch.from_numpy(mask), max_word_chars)
        words = seg.word.numpy()
        for i, text in enumerate(chunk):
            row: Dict[int, List[str]] = {}
            for j in numpy.flatnonzero(words[i] >= 0):
                row.setdefault(int(words[i, j]), []).append(text[j])
            out.append(["".join(chars) for chars in row.values()])
    return out


class WordTypes:
    """The training text's word types, their counts and their input-level targets."""

    def __init__(self, docs: Sequence[str], teacher: Teacher, max_word_chars: int) -> None:
        counts = Counter(w for words in split_words(docs, max_word_chars) for w in words)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        types, targets = input_targets([w for w, _ in ranked], teacher)
        keep = {w for w in types}
        self.types = types
        self.counts = numpy.array([counts[w] for w in types], dtype="float64")
        self.targets = targets
        self.probs = numpy.sqrt(self.counts) / numpy.sqrt(self.counts).sum()
        self.dropped = len(ranked) - len(keep)

    def __len__(self) -> int:
        return len(self.types)

    def sample(self, n: int, rng: numpy.random.Generator) -> numpy.ndarray:
        return rng.choice(len(self.types), size=n, p=self.probs)


@torch.no_grad()
def input_targets(words: Sequence[str], teacher: Teacher) -> Tuple[List[str], torch.Tensor]:
    """Each word's mean input embedding over its pieces (words with no piece are left out)."""
    table = teacher.model.get_input_embeddings().weight.detach().float().cpu()
    if not words:  # the tokenizer fails on an empty batch
        return [], table.new_zeros((0, table.shape[1]))
    pieces = teacher.tokenizer(list(words), add_special_tokens=False)["input_ids"]
    kept = [i for i, p in enumerate(pieces) if p]
    index = torch.tensor([n for n, i in enumerate(kept) for _ in pieces[i]], dtype=torch.long)
    flat = torch.tensor([pid for i in kept for pid in pieces[i]], dtype=torch.long)
    sums = torch.zeros((len(kept), table.shape[1])).index_add_(0, index, table[flat])
    counts = torch.bincount(index, minlength=len(kept)).clamp(min=1)
    return [words[i] for i in kept], sums / counts[:, None]


def encode_spellings(words: Sequence[str], max_chars: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Padded codepoints (N, W) and mask of words, cut at ``max_chars``."""
    width = max(1, min(max_chars, max((len(w) for w in words), default=0)))
    ids = numpy.zeros((len(words), width), dtype="int64")
    for i, word in enumerate(words):
        cps = numpy.frombuffer(word[:width].encode("utf-32-le"), dtype="<u4")
        ids[i, : len(cps)] = cps
    ids_t = torch.from_numpy(ids)
    return ids_t, ids_t != 0


def attack_words(words: Sequence[str], rate: float, attacks: Sequence[str], rng: random.Random) -> List[str]:
    """Each word attacked with probability ``rate`` (one of ``attacks``; short words stay)."""
    return [perturb_word(w, rng.choice(list(attacks)), rng) if rate and rng.random() < rate else w for w in words]


def type_loss(predicted: torch.Tensor, target: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Squared error relative to the target's squared norm (scale matters: the copied
    position embeddings are added before the LayerNorm), and the cosines."""
    rel = ((predicted - target) ** 2).sum(-1) / (target**2).sum(-1).clamp(min=1e-6)
    return rel.mean(), nn.functional.cosine_similarity(predicted, target, dim=-1)


class GrownPretrainer(nn.Module):
    """The grown encoder plus the two stages' losses; it has no heads of its own."""

    def __init__(self, encoder: GrownCharModel, mid_layer: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.mid_layer = mid_layer

    def copied_parameters(self) -> List[nn.Parameter]:
        """The parameters copied from the subword encoder (frozen first)."""
        return self.encoder.copied_parameters()

    def copied_layers(self) -> List[nn.Module]:
        """The copied transformer layers, bottom to top (late unfreezing takes the top)."""
        return self.encoder.copied_layers()

    def forward(self, stage: str, *inputs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``type_step`` (stage ``"type"``) or ``text_step`` (``"text"``): a data-parallel run
        calls both through ``forward``, the method DistributedDataParallel wraps."""
        if stage == "type":
            return self.type_step(*inputs)
        if stage == "text":
            return self.text_step(*inputs)
        raise ValueError(f"unknown stage {stage!r} (type or text)")

    def type_step(self, ids: torch.Tensor, mask: torch.Tensor, targets: torch.Tensor) -> Dict[str, torch.Tensor]:
        loss, cos = type_loss(self.encoder.front_end(ids, mask), targets)
        n = torch.tensor(float(len(ids)))
        return {"loss": loss, "type_loss": loss.detach(), "type_cos": cos.sum().detach(), "type_n": n}

    def word_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_ids: torch.Tensor, n_words: int
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Per whitespace word: the mean over its characters of the middle layer's word
        state and of the last (per-character) output: (n_words, H) each."""
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        seg = segment(input_ids, attention_mask, self.encoder.config.max_word_chars)
        mid_words = out.hidden_states[self.mid_layer][seg.row, seg.slot]  # (N, H)
        mid_chars = mid_words[seg.context.clamp(min=0)]  # (B, L, H): each char reads its word's
        return pool_words(mid_chars, word_ids, n_words), pool_words(out.last_hidden_state, word_ids, n_words)

    def text_step(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        word_ids: torch.Tensor,
        word_targets: torch.Tensor,
        word_found: torch.Tensor,
    ) -> Dict[str, torch.Tensor]:
        mid, last = self.word_states(input_ids, attention_mask, word_ids, int(word_targets.shape[0]))
        if not bool(word_found.any()):  # no word the teacher saw: a zero that still reaches the weights used
            zero = (mid.sum() + last.sum()) * 0.0
            none = zero.detach()
            return {"loss": zero, "mid_loss": none, "last_loss": none, "mid_n": none, "last_n": none}
        mid_loss = distill_loss(mid[word_found], word_targets[word_found, 0])
        last_loss = distill_loss(last[word_found], word_targets[word_found, 1])
        n = word_found.sum().detach()
        return {
            "loss": mid_loss + last_loss,
            "mid_loss": mid_loss.detach(),
            "last_loss": last_loss.detach(),
            "mid_n": n,
            "last_n": n,
        }


class CanineGrownPretrainer(GrownPretrainer):
    """Design (a): a CANINE whose deep stack was copied; stage B only."""

    def __init__(self, encoder: nn.Module, mid_layer: int) -> None:
        super().__init__(encoder, mid_layer)  # type: ignore[arg-type]  # a transformers CanineModel

    def copied_parameters(self) -> List[nn.Parameter]:
        return [p for layer in self.copied_layers() for p in layer.parameters()]

    def copied_layers(self) -> List[nn.Module]:
        return grown_canine.copied_layers(self.encoder)

    def type_step(self, ids: torch.Tensor, mask: torch.Tensor, targets: torch.Tensor) -> Dict[str, torch.Tensor]:
        raise ValueError("a grown CANINE has no word-level front end: it has no stage A")

    def word_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_ids: torch.Tensor, n_words: int
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Per whitespace word: the mean over its characters of the copied stack's middle
        layer (position p of the row reads molecule 1 + p // rate, as CANINE's upsampling
        repeats them; molecule 0 is [CLS]'s own) and of the per-character output."""
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        # hidden_states: the initial char encoder's 2, the deep stack's k + 1, the final 2
        molecules = out.hidden_states[2 + self.mid_layer]
        rate = int(self.encoder.config.downsampling_rate)
        position = torch.arange(input_ids.shape[1], device=input_ids.device)
        index = (1 + position // rate).clamp(max=molecules.shape[1] - 1)
        mid_chars = molecules[:, index]
        return pool_words(mid_chars, word_ids, n_words), pool_words(out.last_hidden_state, word_ids, n_words)


def make_pretrainer(encoder: nn.Module, mid_layer: int) -> GrownPretrainer:
    """The stages' model for a grown encoder of any registered design."""
    design = design_of(getattr(encoder, "config", None))
    if design is None:
        raise ValueError(f"a {type(encoder).__name__} is not a grown char encoder (pretrain-chars --init-from)")
    return design.make_pretrainer(encoder, mid_layer)


def teacher_layers(teacher_layers_total: int, k: int) -> List[int]:
    """The hidden states distilled: a middle copied layer and the last copied one."""
    if not 1 <= k <= teacher_layers_total:
        raise ValueError(f"--k must be 1..{teacher_layers_total} (the teacher's layers), got {k}")
    return [max(1, k // 2), k]


@torch.no_grad()
def word_cosines(
    model: GrownPretrainer,
    teacher: Teacher,
    docs: Sequence[str],
    noise_rate: float,
    attacks: Sequence[str],
    batch_size: int = 32,
    device: str = "cpu",
    seed: int = 12345,
    teacher_reads_noise: bool = False,
) -> Dict[str, float]:
    """Mean cosine, over the words of ``docs``, between the student's states (middle layer,
    output) on the text attacked at ``noise_rate`` (fixed attacks for a given seed) and the
    teacher's on the clean text. ``teacher_reads_noise``: score the teacher itself on the
    attacked text instead (the reference: how far the subword encoder moves under attack)."""
    np_rng, py_rng = numpy.random.default_rng(seed), random.Random(seed)
    was_training = model.training
    model.eval()
    sums = {"mid": 0.0, "last": 0.0}
    n = 0
    cos = nn.functional.cosine_similarity
    for i in range(0, len(docs), batch_size):
        texts = list(docs[i : i + batch_size])
        batch = make_batch(texts, CharVocab([]), np_rng, py_rng, 0.0, noise_rate, attacks, pad_multiple=1)
        target, found = teacher.word_states(batch.clean_texts, batch.clean_spans)
        if teacher_reads_noise:
            noisy_texts = [
                "".join(chr(c) for c in row[1 : int(m.sum()) - 1])
                for row, m in zip(batch.input_ids, batch.attention_mask)
            ]
            got, found_noisy = teacher.word_states(noisy_texts, [word_spans(t) for t in noisy_texts])
            found = found & found_noisy
            mid, last = got[:, 0], got[:, 1]
        else:
            arrays = (batch.input_ids, batch.attention_mask, batch.word_ids)
            ids, mask, words = (torch.from_numpy(a).to(device) for a in arrays)
            mid, last = model.word_states(ids, mask, words, int(target.shape[0]))
        found = found.to(mid.device)
        target = target.to(mid.device)
        sums["mid"] += float(cos(mid[found], target[found, 0], dim=-1).sum())
        sums["last"] += float(cos(last[found], target[found, 1], dim=-1).sum())
        n += int(found.sum())
    model.train(was_training)
    return {f"{k}_cos": round(v / max(n, 1), 4) for k, v in sums.items()} | {"words": n}


def new_grown(init_from: str, k: Optional[int], char_width: int, seed: int, design: str = "word") -> nn.Module:
    """The encoder a fresh run of ``design`` starts from."""
    return get_design(design).grow_encoder(init_from, k=k, char_width=char_width, seed=seed)


def doc_chars(settings: PretrainSettings, subword_config: Any) -> int:
    """The longest row of text a grown run reads: ``max_chars``, and no more characters than
    the copied position table holds words (with [CLS] and [SEP]; every character may be a
    word of its own), as the pipeline's windows are cut."""
    words = get_design(settings.grow_design).words_per_row(subword_config)
    return settings.max_chars if words is None else max(8, min(settings.max_chars, words - 2))


__all__ = [
    "CanineGrownPretrainer",
    "GrownPretrainer",
    "doc_chars",
    "WordTypes",
    "attack_words",
    "encode_spellings",
    "input_targets",
    "make_pretrainer",
    "new_grown",
    "split_words",
    "teacher_layers",
    "type_loss",
    "word_cosines",
]
