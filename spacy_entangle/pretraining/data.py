"""Text for character pretraining: reading, chunking, and the two self-supervised targets.

Why by hand: the targets are per *character* (CANINE reads codepoints), which no tokenizer-
based data collator in transformers produces. Everything here is plain Python/numpy and
deterministic for a given ``numpy.random.Generator`` so that a resumed run sees exactly the
batches an uninterrupted one would.

- ``mask_spans``: masked character-span prediction (the CANINE-C/-S family of objectives,
  at character level): ~``mask_rate`` of the characters, in spans, are hidden (80% MASK
  codepoint, 10% a random character, 10% kept) and must be predicted.
- ``noisy_example``: CharBERT's noisy-LM idea at character level. Words are attacked with
  spacy_entangle.noise (drop/add/swap/keyboard); each character position of an attacked word
  must predict the ORIGINAL word's character at that offset (or end-of-word past its end).
- word alignment for teacher distillation (distill.py): the attacks keep whitespace, so the
  i-th word of the noisy text the student reads is the i-th word of the clean text the
  teacher reads; ``Batch.word_ids`` marks each student character with its word's number.
"""

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy

from .. import canine
from ..noise.attacks import ATTACKS, MIN_LENGTH, perturb_word

PAD_ID = 0
IGNORE = -100  # torch cross_entropy's ignore_index
UNK_CLASS = 0  # characters outside the output vocabulary
EOW_CLASS = 1  # "the original word ended before this position" (noisy objective)


class PretrainDataError(ValueError):
    """The pretraining text cannot be used; the message says which file and why."""


def read_texts(paths: Sequence[Path], max_chars: int) -> Tuple[List[str], Dict[str, int]]:
    """One document per line, UTF-8 (BOM tolerated). Blank lines are skipped, lines longer
    than ``max_chars`` are cut at whitespace into several documents (never dropped).
    Returns the documents and counts for the summary."""
    if max_chars < 8:
        raise PretrainDataError(f"max_chars must be at least 8, got {max_chars}")
    docs: List[str] = []
    stats: Counter[str] = Counter()
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise PretrainDataError(f"{path}: not a file")
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as err:
            raise PretrainDataError(f"{path}: not UTF-8 text ({err})") from err
        for line in text.splitlines():
            line = line.strip()
            if not line:
                stats["blank_lines"] += 1
                continue
            stats["lines"] += 1
            pieces = list(chunk_text(line, max_chars))
            stats["long_lines"] += len(pieces) > 1
            docs.extend(pieces)
    if not docs:
        raise PretrainDataError(
            f"no text in {', '.join(str(p) for p in paths)}: every line is blank "
            "(pretraining reads one document per line)"
        )
    stats["documents"] = len(docs)
    stats["chars"] = sum(len(d) for d in docs)
    return docs, dict(stats)


def chunk_text(text: str, max_chars: int) -> Iterator[str]:
    """Pieces of at most ``max_chars`` characters, cut at the last space before the limit
    when there is one (a single 10,000-character "word" is cut anywhere)."""
    while len(text) > max_chars:
        cut = text.rfind(" ", max_chars // 2, max_chars + 1)
        cut = max_chars if cut <= 0 else cut
        piece, text = text[:cut].strip(), text[cut:].strip()
        if piece:
            yield piece
    if text:
        yield text


@dataclass
class CharVocab:
    """The output classes: UNK, EOW, then the most frequent codepoints of the training
    text. CANINE's *input* needs no vocabulary (it hashes any codepoint); only the
    prediction head does, and a softmax over all 1.1M codepoints would be wasteful."""

    codepoints: List[int]

    def __post_init__(self) -> None:
        self.index = {cp: i + 2 for i, cp in enumerate(self.codepoints)}

    @classmethod
    def build(cls, texts: Iterable[str], size: int) -> "CharVocab":
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(text)
        # frequency, then codepoint: the same text always gives the same vocabulary
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], ord(kv[0])))
        return cls([ord(ch) for ch, _ in ranked[: max(0, size - 2)]])

    def __len__(self) -> int:
        return len(self.codepoints) + 2

    def classes(self, text: str) -> numpy.ndarray:
        return numpy.fromiter((self.index.get(ord(ch), UNK_CLASS) for ch in text), dtype="int64", count=len(text))


def mask_spans(n: int, rng: numpy.random.Generator, rate: float, mean_span: float = 3.0) -> numpy.ndarray:
    """Boolean mask over ``n`` characters: spans with geometric lengths (mean ``mean_span``,
    at most 10) until ~``rate`` of the characters are covered; at least one when n > 0."""
    mask = numpy.zeros(n, dtype=bool)
    if n == 0 or rate <= 0:
        return mask
    budget = max(1, int(round(rate * n)))
    p = 1.0 / max(1.0, mean_span)
    for _ in range(4 * budget):  # bounded: spans may overlap
        if mask.sum() >= budget:
            break
        length = min(10, int(rng.geometric(p)), budget - int(mask.sum()))
        start = int(rng.integers(0, n))
        mask[start : start + length] = True
    return mask


def noisy_example(
    text: str, rng: random.Random, rate: float, attacks: Sequence[str] = ATTACKS
) -> Tuple[str, List[Tuple[int, int, str]]]:
    """Attack whitespace-separated words of 4+ characters with probability ``rate`` each
    (the same attacks as `perturb`). Returns the noisy text and, per changed word, its start
    offset and length in the noisy text and its original spelling."""
    if rate <= 0:
        return text, []
    out: List[str] = []
    changed: List[Tuple[int, int, str]] = []
    pos = 0
    for piece in _split_keep_spaces(text):
        new = piece
        if len(piece) >= MIN_LENGTH and not piece.isspace() and any(ch.isalpha() for ch in piece):
            if rng.random() < rate:
                new = perturb_word(piece, rng.choice(list(attacks)), rng)
                if new != piece:
                    changed.append((pos, len(new), piece))
        out.append(new)
        pos += len(new)
    return "".join(out), changed


def word_spans(text: str) -> List[Tuple[int, int]]:
    """(start, end) codepoint offsets of the whitespace-separated words: the unit that the
    attacks preserve, so noisy and clean texts have the same words in the same order."""
    spans, pos = [], 0
    for piece in _split_keep_spaces(text):
        if not piece.isspace():
            spans.append((pos, pos + len(piece)))
        pos += len(piece)
    return spans


def _split_keep_spaces(text: str) -> List[str]:
    pieces: List[str] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or text[i].isspace() != text[i - 1].isspace():
            pieces.append(text[start:i])
            start = i
    return pieces


@dataclass
class Batch:
    """Padded arrays for one step: ``input_ids``/``attention_mask`` for CANINE, and the
    class targets of each objective (IGNORE where a position is not scored), and for
    distillation: the clean texts with their word spans (what the teacher reads) and, per
    student character, the number of its word in the batch (-1 outside words)."""

    input_ids: numpy.ndarray
    attention_mask: numpy.ndarray
    mlm_targets: numpy.ndarray
    noisy_targets: numpy.ndarray
    word_ids: numpy.ndarray
    clean_texts: List[str]
    clean_spans: List[List[Tuple[int, int]]]

    @property
    def n_chars(self) -> int:
        return int(self.attention_mask.sum())


def make_batch(
    texts: Sequence[str],
    vocab: CharVocab,
    np_rng: numpy.random.Generator,
    py_rng: random.Random,
    mask_rate: float = 0.15,
    noise_rate: float = 0.0,
    attacks: Sequence[str] = ATTACKS,
    pad_multiple: int = 4,
    keep: Optional[slice] = None,
) -> Batch:
    """[CLS] text [SEP] per row, padded to a multiple of CANINE's downsampling rate.
    Attacked-word positions are never masked: they carry the noisy target instead.

    ``keep``: the rows one process of a data-parallel run trains on. Every row's noise and
    masks are still drawn, in order, so the generators advance as for the whole batch and a
    row is the same whichever process keeps it; only the kept rows become arrays."""
    rows = []
    for text in texts:
        noisy, changed = noisy_example(text, py_rng, noise_rate, attacks)
        ids = numpy.fromiter((ord(ch) for ch in noisy), dtype="int64", count=len(noisy))
        noisy_t = numpy.full(len(noisy), IGNORE, dtype="int64")
        for start, width, original in changed:
            for j in range(width):
                noisy_t[start + j] = vocab.index.get(ord(original[j]), UNK_CLASS) if j < len(original) else EOW_CLASS
        maskable = noisy_t == IGNORE
        mask = mask_spans(len(noisy), np_rng, mask_rate) & maskable
        mlm_t = numpy.where(mask, vocab.classes(noisy), IGNORE)
        roll = np_rng.random(len(noisy))
        inputs = ids.copy()
        inputs[mask & (roll < 0.8)] = canine.MASK
        swap = mask & (roll >= 0.8) & (roll < 0.9)
        if swap.any() and vocab.codepoints:
            inputs[swap] = numpy.asarray(vocab.codepoints)[np_rng.integers(0, len(vocab.codepoints), int(swap.sum()))]
        rows.append((inputs, mlm_t, noisy_t, word_spans(noisy)))
    if keep is not None:
        rows, texts = rows[keep], texts[keep]
    length = max(len(r[0]) for r in rows) + 2
    length += -length % pad_multiple
    shape = (len(rows), length)
    input_ids = numpy.full(shape, PAD_ID, dtype="int64")
    attention = numpy.zeros(shape, dtype="int64")
    mlm = numpy.full(shape, IGNORE, dtype="int64")
    noisy_targets = numpy.full(shape, IGNORE, dtype="int64")
    word_ids = numpy.full(shape, -1, dtype="int64")
    clean_spans = [word_spans(text) for text in texts]
    n_words = 0
    for i, (inputs, mlm_t, noisy_t, spans) in enumerate(rows):
        if len(spans) != len(clean_spans[i]):  # the attacks never split or join words
            raise AssertionError(f"noisy text has {len(spans)} words, clean text {len(clean_spans[i])}: {texts[i]!r}")
        for start, end in spans:
            word_ids[i, 1 + start : 1 + end] = n_words
            n_words += 1
        n = len(inputs)
        input_ids[i, 0], input_ids[i, n + 1] = canine.CLS, canine.SEP
        input_ids[i, 1 : n + 1] = inputs
        attention[i, : n + 2] = 1
        mlm[i, 1 : n + 1] = mlm_t
        noisy_targets[i, 1 : n + 1] = noisy_t
    return Batch(input_ids, attention, mlm, noisy_targets, word_ids, list(texts), clean_spans)


def epoch_batches(n_docs: int, lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> List[List[int]]:
    """Document indices per batch for one epoch: shuffled by (seed, epoch), then sorted by
    length within pools of 50 batches (less padding), then the batches shuffled again."""
    rng = random.Random(f"{seed}:{epoch}")
    order = list(range(n_docs))
    rng.shuffle(order)
    pool = batch_size * 50
    batches: List[List[int]] = []
    for start in range(0, n_docs, pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def split_dev(docs: List[str], fraction: float, seed: int, limit: int = 1000) -> Tuple[List[str], List[str]]:
    """A fixed held-out slice for the loss curve (at most ``limit`` documents); returns
    (train, dev). Too little text for both keeps everything for training."""
    n_dev = min(limit, int(len(docs) * fraction))
    if n_dev < 1 or len(docs) - n_dev < 1:
        return docs, []
    order = list(range(len(docs)))
    random.Random(f"dev:{seed}").shuffle(order)
    dev_ids = set(order[:n_dev])
    return [d for i, d in enumerate(docs) if i not in dev_ids], [docs[i] for i in sorted(dev_ids)]
