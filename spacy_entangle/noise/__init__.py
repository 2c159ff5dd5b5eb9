"""Character noise for spaCy corpora: CharBERT's four attacks (Ma et al. 2020, the pure
string functions in ``noise.attacks``) on the words of Docs, and the training augmenter.

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
from collections import Counter
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.attrs import DEP, ENT_IOB, ENT_KB_ID, ENT_TYPE, HEAD, LEMMA, MORPH, POS, SENT_START, TAG
from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.training import Example
from spacy.util import registry

from .attacks import ATTACKS, KEYBOARD, MIN_LENGTH, check_attacks, perturb_word

__all__ = ["ATTACKS", "KEYBOARD", "MIN_LENGTH", "check_attacks", "perturb_word", "is_word", "perturb_doc",
           "perturb_docs", "create_char_noise_augmenter"]

def is_word(token: Token) -> bool:
    return len(token.text) >= MIN_LENGTH and not (
        token.is_space or token.is_punct or token.like_url or token.is_digit
    )


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
