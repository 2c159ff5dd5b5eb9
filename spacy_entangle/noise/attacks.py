"""CharBERT's four character attacks on one word (Ma et al. 2020), as pure string
functions: what the spaCy side (``spacy_entangle.noise``: corpora, the augmenter) and
``pretrain-chars`` (attacked tweets) both apply.

- drop: delete one internal character;
- add: insert a random lowercase letter between two characters;
- swap: swap two adjacent internal characters (that differ);
- keyboard: replace one internal letter by a QWERTY neighbour (case kept).

"Internal" excludes the first and last character.
"""

import random
import string
from typing import Sequence, Tuple

ATTACKS: Tuple[str, ...] = ("drop", "add", "swap", "keyboard")
MIN_LENGTH = 4

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# neighbours on a QWERTY keyboard: left/right in the row, and the keys above/below
KEYBOARD = {
    key: "".join(
        _ROWS[r][j]
        for r in (i - 1, i, i + 1)
        if 0 <= r < len(_ROWS)
        for j in range(c - 1, c + 2)
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
