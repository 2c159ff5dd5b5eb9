"""Character noise for spaCy corpora: CharBERT's four attacks (Ma et al. 2020) as pure
string functions (``noise.attacks``, no spaCy: what pretraining uses), and the spaCy side
(``noise.docs``: the words of Docs, .spacy corpora, the training augmenter).

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

from .attacks import ATTACKS, KEYBOARD, MIN_LENGTH, check_attacks, perturb_word

# stability training: the `entangle` component's ``consistency`` setting (an entry point too)
from .consistency import NoiseConsistency, create_noise_consistency

# the spaCy side; `spacy_entangle.noise:create_char_noise_augmenter` is an entry point (setup.cfg)
from .docs import PerturbStats, create_char_noise_augmenter, is_word, perturb_corpus, perturb_doc, perturb_docs

__all__ = [
    "ATTACKS",
    "KEYBOARD",
    "MIN_LENGTH",
    "check_attacks",
    "perturb_word",
    "is_word",
    "perturb_doc",
    "perturb_docs",
    "perturb_corpus",
    "PerturbStats",
    "create_char_noise_augmenter",
    "NoiseConsistency",
    "create_noise_consistency",
]
