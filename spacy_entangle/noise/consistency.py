"""Stability training for the `entangle` component (Zheng et al. 2016, "Improving the
Robustness of Deep Neural Networks via Stability Training"): besides each training batch,
the encoder reads a character-attacked copy of some of its docs and learns to give each
token the states it gives the clean token. The task components still learn from the clean
docs only, so robustness need not cost clean accuracy the way training on noisy docs does
(the char-noise augmenter)."""

import random
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, cast

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import reduce_first, use_ops
from thinc.backends import get_array_ops

from ..data import SIDES, EntangleData, Side
from .attacks import ATTACKS, check_attacks
from .docs import perturb_doc


@dataclass
class NoiseConsistency:
    """weight: the term's weight (0: off); level: the fraction of a batch's docs that get
    an attacked copy; rate: the fraction of a copy's words attacked (as the augmenter's)."""

    weight: float
    level: float
    rate: float
    attacks: Tuple[str, ...]
    rng: random.Random

    def perturb(self, docs: Sequence[Doc]) -> Tuple[List[int], List[Doc]]:
        """The indices of the docs that get an attacked copy, and the copies (same tokens,
        so each token's rows match its clean token's). A copy with no word changed is
        left out: it would cost a forward pass and teach nothing."""
        picked: List[int] = []
        copies: List[Doc] = []
        if self.weight <= 0:
            return picked, copies
        for i, doc in enumerate(docs):
            if self.rng.random() >= self.level:
                continue
            copy, changed = perturb_doc(doc, self.rate, self.rng, self.attacks)
            if changed:
                picked.append(i)
                copies.append(copy)
        return picked, copies

    def loss(
        self, clean: Sequence[EntangleData], noisy: Sequence[EntangleData], sides: Sequence[str]
    ) -> Tuple[float, List[EntangleData]]:
        """weight x the squared distance between each token's first row on the noisy copy
        and on the clean doc, averaged over the state's width and summed over tokens (as
        spaCy sums a batch's task losses), per side computed. The clean states are the
        target, held fixed: the gradient goes to the noisy copy only. Returns the loss and
        the gradient of each noisy output."""
        # lazily: layers/ loads the torch model, which the augmenter and `perturb` do not need
        from ..layers.pooling import entangle_pool

        if not noisy:
            return 0.0, []
        side = cast(Side, "both" if set(SIDES) <= set(sides) else sides[0])
        ops = get_array_ops(noisy[0].side(sides[0]))
        with use_ops(ops.name):
            pool = entangle_pool(side, reduce_first())
        targets = pool.predict(list(clean))
        states, backprop = pool.begin_update(list(noisy))
        width = max(int(states[0].shape[1]), 1)  # every doc's: the pooled sides' width
        diffs = [state - target for state, target in zip(states, targets)]
        loss = sum(float(ops.xp.sum(diff * diff)) for diff in diffs) / width
        return self.weight * loss, backprop([diff * (2.0 * self.weight / width) for diff in diffs])


@registry.misc("spacy-entangle.noise_consistency.v1")
def create_noise_consistency(
    weight: float = 1.0,
    level: float = 0.5,
    rate: float = 0.5,
    attacks: List[str] = list(ATTACKS),  # noqa: B006 (never mutated; init fill-config writes the default out)
    seed: Optional[int] = None,
) -> NoiseConsistency:
    """Stability training for the `entangle` component's ``consistency`` setting: besides
    each training batch, the encoder reads a character-attacked copy of some of its docs
    and learns to give each token the states it gives the clean token, while the task
    components learn from the clean docs only (so robustness need not cost clean accuracy
    the way training on noisy docs does). Returns the NoiseConsistency the component
    takes; it acts in training only.

    weight (float): the weight of the consistency loss (reported as ``<name>_consistency``):
        the squared distance between each token's first row on the attacked copy and on
        the clean doc, averaged over the width and summed over tokens, per side computed;
        the clean states are its fixed target. 1.0 by default, 0 or more (0: off).
    level (float): the fraction of a batch's docs that get an attacked copy, in [0, 1];
        0.5 by default. A copy in which no word changed is left out.
    rate (float): the probability that each word of a copy is attacked (as the
        augmenter's), in [0, 1]; 0.5 by default.
    attacks (List[str]): the attacks drawn from at random for each attacked word, a
        non-empty subset of "drop" (delete an internal character), "add" (insert a random
        lowercase letter), "swap" (swap two adjacent internal characters) and "keyboard"
        (replace an internal letter by a QWERTY neighbour); default: all four.
    seed (Optional[int]): the seed of its own random generator; None (default) draws from
        the ``random`` module, which `spacy train` seeds from [training.seed].
    """
    chosen = check_attacks(rate, attacks)
    if not 0.0 <= float(level) <= 1.0:
        raise ValueError(f"consistency level must be between 0 and 1, got {level}")
    if float(weight) < 0:
        raise ValueError(f"consistency weight must be 0 or more, got {weight}")
    rng = random.Random(seed) if seed is not None else cast(random.Random, random)
    return NoiseConsistency(float(weight), float(level), float(rate), chosen, rng)
