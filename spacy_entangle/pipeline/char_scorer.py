"""The char_tagger's scorer: character accuracy, overall, on intraword switches and per
label (registered as ``spacy-entangle.char_tagger_scorer.v1``)."""

from typing import Any, Callable, Dict, Iterable, List

from spacy.training import Example
from spacy.util import registry

from ..char_tags import align_char_tags


def score_char_tags(examples: Iterable[Example], *, attr: str = "char_tags", **kwargs: Any) -> Dict[str, Any]:
    """Character accuracy against ``example.reference._.<attr>``.

    char_acc ("All"): over every non-whitespace character with a gold label.
    char_acc_mix ("MIX"): over the characters of the reference tokens (words) whose
      gold characters carry more than one label (intraword code-switching).
    char_acc_per_label: the accuracy (recall) on the characters of each gold label.
    A score with no character to count is None.
    """
    n = ok = n_mix = ok_mix = 0
    per_label: Dict[str, List[int]] = {}
    for eg in examples:
        ref = eg.reference
        gold = getattr(ref._, attr)
        if gold is None:
            continue
        text = ref.text
        pred = align_char_tags(getattr(eg.predicted._, attr), eg.predicted.text, text)
        if len(gold) != len(text):
            raise ValueError(f"doc._.{attr} has {len(gold)} labels for {len(text)} characters")
        hit = [None if (g is None or text[i].isspace()) else (pred[i] == g) for i, g in enumerate(gold)]
        for i, h in enumerate(hit):
            if h is None:
                continue
            n += 1
            ok += h
            counts = per_label.setdefault(gold[i], [0, 0])
            counts[0] += h
            counts[1] += 1
        for token in ref:
            span = range(token.idx, token.idx + len(token))
            labels = {gold[i] for i in span if hit[i] is not None}
            if len(labels) > 1:
                for i in span:
                    h = hit[i]
                    if h is not None:
                        n_mix += 1
                        ok_mix += h
    return {
        f"{_prefix(attr)}_acc": ok / n if n else None,
        f"{_prefix(attr)}_acc_mix": ok_mix / n_mix if n_mix else None,
        f"{_prefix(attr)}_acc_per_label": {k: v[0] / v[1] for k, v in sorted(per_label.items())},
    }


def _prefix(attr: str) -> str:
    return "char" if attr == "char_tags" else attr


@registry.scorers("spacy-entangle.char_tagger_scorer.v1")
def make_char_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    """The `char_tagger` component's default scorer: character accuracy against
    ``example.reference._.char_tags``, overall (char_acc), on the words whose characters
    carry more than one gold label, i.e. intraword switches (char_acc_mix), and per gold
    label (char_acc_per_label); a score with no character to count is None. It takes no
    settings.
    """
    return score_char_tags
