"""The spaCy side of the character noise: the attacks of ``noise.attacks`` applied to the
words of Docs (annotations kept), to a whole .spacy corpus (``perturb_corpus``, the `perturb`
command) and as a training augmenter (``spacy-entangle.char_noise_augmenter.v1``)."""

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, cast

from spacy.attrs import DEP, ENT_IOB, ENT_KB_ID, ENT_TYPE, HEAD, LEMMA, MORPH, POS, SENT_START, TAG
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span, Token
from spacy.training import Example
from spacy.util import registry
from thinc.types import Ints2d

from ..char_tags import install_extensions as _char_tags  # noqa: F401 (importing it registers doc._.char_tags)
from ..converters.io import write_docbin_atomic
from .attacks import ATTACKS, MIN_LENGTH, check_attacks, perturb_word


def is_word(token: Token) -> bool:
    return len(token.text) >= MIN_LENGTH and not (token.is_space or token.is_punct or token.like_url or token.is_digit)


def _annotation_attrs(doc: Doc) -> List[Union[int, str]]:
    """The token attributes this doc has; HEAD and SENT_START exclude each other in
    Doc.from_array, and HEAD (with DEP) implies the sentence boundaries."""
    attrs: List[Union[int, str]] = [
        a for a, name in ((TAG, "TAG"), (POS, "POS"), (MORPH, "MORPH"), (LEMMA, "LEMMA")) if doc.has_annotation(name)
    ]
    if doc.has_annotation("DEP"):
        attrs += [HEAD, DEP]
    elif doc.has_annotation("SENT_START"):
        attrs.append(SENT_START)
    if doc.has_annotation("ENT_IOB"):
        attrs += [ENT_IOB, ENT_TYPE, ENT_KB_ID]
    return attrs


def perturb_doc(doc: Doc, rate: float, rng: random.Random, attacks: Sequence[str] = ATTACKS) -> Tuple[Doc, Counter]:
    """A new Doc (same vocab) whose words are attacked with probability ``rate`` each, with
    the original's token annotations, entities, span groups, cats and character labels
    (``doc._.char_tags``, what `char_tagger` learns). With character labels, a changed word's
    characters all take its one label, and a word whose characters carry two labels (an
    intraword switch) is never attacked: no label is invented. Returns the new Doc and the
    number of words each attack changed."""
    attacks = check_attacks(rate, attacks)
    tags = doc._.char_tags
    changed: Counter = Counter()
    words = []
    new_tags: List[Optional[str]] = []
    for token in doc:
        text = token.text
        end = token.idx + len(text)
        own = tags[token.idx : end] if tags is not None else ()
        if is_word(token) and rng.random() < rate and len(set(own)) <= 1:
            attack = rng.choice(attacks)
            new = perturb_word(text, attack, rng)
            if new != text:
                changed[attack] += 1
                text = new
                own = own[:1] * len(new)
        words.append(text)
        if tags is not None:
            new_tags.extend(own)
            new_tags.extend(tags[end : end + len(token.whitespace_)])
    new_doc = Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc])
    attrs = _annotation_attrs(doc)
    if attrs:
        # spaCy's stubs: to_array returns a plain ndarray, from_array asks for Ints2d
        new_doc.from_array(attrs, cast(Ints2d, doc.to_array(attrs)))
    for key, group in doc.spans.items():
        new_doc.spans[key] = [Span(new_doc, s.start, s.end, label=s.label, kb_id=s.kb_id) for s in group]
    new_doc.cats = dict(doc.cats)
    if tags is not None:
        new_doc._.char_tags = new_tags
    return new_doc, changed


def perturb_docs(
    docs: Iterable[Doc],
    rate: float,
    seed: int = 0,
    attacks: Sequence[str] = ATTACKS,
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


@dataclass
class PerturbStats:
    """What ``perturb_corpus`` did: docs, words that could be attacked, words changed per attack."""

    attacks: Tuple[str, ...]
    docs: int = 0
    words: int = 0
    counts: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        changed = sum(self.counts.values())
        share = f" ({100 * changed / self.words:.1f}%)" if self.words else ""
        per_attack = ", ".join(f"{a} {self.counts[a]}" for a in self.attacks)
        return f"{self.docs} docs, {self.words} words of {MIN_LENGTH}+ chars, {changed} changed{share} [{per_attack}]"


def perturb_corpus(
    input_path: Union[str, Path],
    output_path: Union[str, Path],
    rate: float,
    seed: int = 0,
    attacks: Sequence[str] = ATTACKS,
    progress: bool = True,
) -> PerturbStats:
    """A noisy copy of a .spacy corpus (written atomically), every annotation kept; the same
    seed gives the same output. An unreadable input is a ValueError naming the file."""
    from spacy.vocab import Vocab

    from ..progress import progress_bar

    chosen = check_attacks(rate, attacks)
    try:
        docbin = DocBin().from_disk(input_path)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {input_path} as a .spacy corpus: {e}") from e
    docs = list(docbin.get_docs(Vocab()))
    stats = PerturbStats(attacks=chosen, docs=len(docs))
    stream = perturb_docs(docs, rate, seed=seed, attacks=chosen, counts=stats.counts)
    shown = progress and len(docs) >= 2000
    new_docs = list(progress_bar(stream, enabled=shown, total=len(docs), desc="perturb", unit="doc", leave=False))
    write_docbin_atomic(new_docs, output_path)
    stats.words = sum(is_word(t) for doc in docs for t in doc)
    return stats


@registry.augmenters("spacy-entangle.char_noise_augmenter.v1")
def create_char_noise_augmenter(
    level: float = 0.3,
    rate: float = 0.25,
    attacks: List[str] = list(ATTACKS),  # noqa: B006 (never mutated; init fill-config writes the default out)
    seed: Optional[int] = None,
) -> Callable[[Language, Example], Iterator[Example]]:
    """Training augmenter for robustness to typos and creative spelling: a fraction
    ``level`` of the examples is replaced by a copy whose words are attacked with
    probability ``rate`` each (CharBERT's character attacks), every annotation kept: an
    attack changes a word's characters, never the tokenization. Returns the augmenter
    ``[corpora.train] augmenter`` takes: (nlp, example) -> the example or its attacked copy.

    level (float): the fraction of examples replaced by an attacked copy, in [0, 1]; 0.3 by
        default (1.0 attacks every example, 0 none).
    rate (float): the probability that each word of a copy is attacked, in [0, 1]; 0.25 by
        default. Words are tokens of 4+ characters that are not spaces, punctuation, URLs
        or numbers; a word whose characters carry two ``doc._.char_tags`` labels (an
        intraword switch) is never attacked.
    attacks (List[str]): the attacks drawn from at random for each attacked word, a
        non-empty subset of "drop" (delete an internal character), "add" (insert a random
        lowercase letter), "swap" (swap two adjacent internal characters) and "keyboard"
        (replace an internal letter by a QWERTY neighbour); default: all four.
    seed (Optional[int]): the seed of the augmenter's own random generator; None (default)
        draws from the ``random`` module, which `spacy train` seeds from [training.seed].
    """
    attacks = list(check_attacks(rate, attacks))
    if not 0.0 <= float(level) <= 1.0:
        raise ValueError(f"augmenter level must be between 0 and 1, got {level}")
    # the module's functions are the bound methods of its global Random, which spaCy seeds
    rng = random.Random(seed) if seed is not None else cast(random.Random, random)

    def augment(nlp: Language, example: Example) -> Iterator[Example]:
        if rng.random() >= level:
            yield example
            return
        reference, _ = perturb_doc(example.reference, rate, rng, attacks)
        yield Example(nlp.make_doc(reference.text), reference)

    return augment
