"""Character noise for spaCy corpora: CharBERT's four attacks (Ma et al. 2020).

Why: a character side is meant to make models robust to typos and creative spelling, so the
project measures F1 on perturbed copies of the dev set, and the same attacks are a training
augmenter. An attack changes one word's characters and never its tokenization (one token in,
one token out, trailing whitespace kept), so every annotation stays on its token.

- drop: delete one internal character;
- add: insert a random lowercase letter between two characters;
- swap: swap two adjacent internal characters (that differ);
- keyboard: replace one internal letter by a QWERTY neighbour (case kept).

"Internal" excludes the first and last character. Words are tokens of 4+ characters that are
not spaces, punctuation, URLs or numbers.
"""
import random
import string
from collections import Counter
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.attrs import DEP, ENT_IOB, ENT_KB_ID, ENT_TYPE, HEAD, LEMMA, MORPH, POS, SENT_START, TAG
from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.training import Example
from spacy.util import registry

ATTACKS: Tuple[str, ...] = ("drop", "add", "swap", "keyboard")
MIN_LENGTH = 4

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# neighbours on a QWERTY keyboard: left/right in the row, and the keys above/below
KEYBOARD = {
    key: "".join(
        _ROWS[r][j] for r in (i - 1, i, i + 1) if 0 <= r < len(_ROWS) for j in range(c - 1, c + 2)
        if 0 <= j < len(_ROWS[r]) and (r, j) != (i, c)
    )
    for i, row in enumerate(_ROWS)
    for c, key in enumerate(row)
}


def check_attacks(rate: float, attacks: Sequence[str]) -> Tuple[str, ...]:
    """Validate settings early, with a message that names the bad value."""
    if not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"noise rate must be between 0 and 1, got {rate}")
    attacks = tuple(attacks)
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown or not attacks:
        raise ValueError(f"attacks must be a non-empty subset of {', '.join(ATTACKS)}; got {list(attacks)}")
    return attacks


def is_word(token: Token) -> bool:
    return len(token.text) >= MIN_LENGTH and not (
        token.is_space or token.is_punct or token.like_url or token.is_digit
    )


def perturb_word(text: str, attack: str, rng: random.Random) -> str:
    """One attack on one word; returns the word unchanged when the attack has no target
    (swap: all internal neighbours equal; keyboard: no internal letter)."""
    n = len(text)
    if n < MIN_LENGTH:
        return text
    if attack == "drop":
        i = rng.randrange(1, n - 1)
        return text[:i] + text[i + 1 :]
    if attack == "add":
        i = rng.randrange(1, n)
        return text[:i] + rng.choice(string.ascii_lowercase) + text[i:]
    if attack == "swap":
        pairs = [i for i in range(1, n - 2) if text[i] != text[i + 1]]
        if not pairs:
            return text
        i = rng.choice(pairs)
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    if attack == "keyboard":
        spots = [i for i in range(1, n - 1) if text[i].lower() in KEYBOARD]
        if not spots:
            return text
        i = rng.choice(spots)
        new = rng.choice(KEYBOARD[text[i].lower()])
        return text[:i] + (new.upper() if text[i].isupper() else new) + text[i + 1 :]
    raise ValueError(f"unknown attack {attack!r} (choose from {', '.join(ATTACKS)})")


def _annotation_attrs(doc: Doc) -> List[int]:
    """The token attributes this doc has; HEAD and SENT_START exclude each other in
    Doc.from_array, and HEAD (with DEP) implies the sentence boundaries."""
    attrs = [a for a, name in ((TAG, "TAG"), (POS, "POS"), (MORPH, "MORPH"), (LEMMA, "LEMMA")) if doc.has_annotation(name)]
    if doc.has_annotation("DEP"):
        attrs += [HEAD, DEP]
    elif doc.has_annotation("SENT_START"):
        attrs.append(SENT_START)
    if doc.has_annotation("ENT_IOB"):
        attrs += [ENT_IOB, ENT_TYPE, ENT_KB_ID]
    return attrs


def perturb_doc(
    doc: Doc, rate: float, rng: random.Random, attacks: Sequence[str] = ATTACKS
) -> Tuple[Doc, Counter]:
    """A new Doc (same vocab) whose words are attacked with probability ``rate`` each, with
    the original's token annotations, entities, span groups and cats. Returns it and the
    number of words each attack changed."""
    attacks = check_attacks(rate, attacks)
    changed: Counter = Counter()
    words = []
    for token in doc:
        text = token.text
        if is_word(token) and rng.random() < rate:
            attack = rng.choice(attacks)
            new = perturb_word(text, attack, rng)
            if new != text:
                changed[attack] += 1
                text = new
        words.append(text)
    new_doc = Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc])
    attrs = _annotation_attrs(doc)
    if attrs:
        new_doc.from_array(attrs, doc.to_array(attrs))
    for key, group in doc.spans.items():
        new_doc.spans[key] = [Span(new_doc, s.start, s.end, label=s.label, kb_id=s.kb_id) for s in group]
    new_doc.cats = dict(doc.cats)
    return new_doc, changed


def perturb_docs(
    docs: Iterable[Doc], rate: float, seed: int = 0, attacks: Sequence[str] = ATTACKS,
    counts: Optional[Counter] = None,
) -> Iterator[Doc]:
    """Perturb a stream of docs, deterministically for a seed; ``counts`` (optional)
    accumulates the changed words per attack."""
    attacks = check_attacks(rate, attacks)
    rng = random.Random(seed)
    for doc in docs:
        new_doc, changed = perturb_doc(doc, rate, rng, attacks)
        if counts is not None:
            counts.update(changed)
        yield new_doc


@registry.augmenters("spacy-entangle.char_noise_augmenter.v1")
def create_char_noise_augmenter(
    level: float = 0.3,
    rate: float = 0.25,
    attacks: List[str] = list(ATTACKS),
    seed: Optional[int] = None,
) -> Callable[[Language, Example], Iterator[Example]]:
    """Training augmenter: a fraction ``level`` of the examples is replaced by a copy whose
    words are attacked with probability ``rate`` (annotations kept). Without a seed it uses
    the ``random`` module, which `spacy train` seeds from [training.seed]."""
    attacks = list(check_attacks(rate, attacks))
    if not 0.0 <= float(level) <= 1.0:
        raise ValueError(f"augmenter level must be between 0 and 1, got {level}")
    rng = random.Random(seed) if seed is not None else random

    def augment(nlp: Language, example: Example) -> Iterator[Example]:
        if rng.random() >= level:
            yield example
            return
        reference, _ = perturb_doc(example.reference, rate, rng, attacks)
        yield Example(nlp.make_doc(reference.text), reference)

    return augment
