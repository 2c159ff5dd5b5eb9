"""The `char_tagger` component: one label per CHARACTER of ``doc.text`` (e.g. the
language of each morpheme in intraword code-switching), from the `entangle`
component's subword-aware character states.

It writes
- ``doc._.char_tags``: a tuple with one label (str) per character of ``doc.text``
  (``len(doc._.char_tags) == len(doc.text)``, checked when set; set it from any
  sequence); whitespace characters get ``whitespace_label`` (default None: no label);
- ``doc._.char_spans``: computed from ``char_tags``: the maximal runs of one label as
  ``(start_char, end_char, label)`` (end exclusive; characters without a label break
  runs).
Both live in ``doc.user_data`` (char_spans is a getter over char_tags), so
``Doc.to_bytes`` and ``DocBin(store_user_data=True)`` keep them.

Training reads ``example.reference._.char_tags`` (None entries: unlabelled, no loss).
Whitespace characters are never predicted by the model: they always get
``whitespace_label``, and are left out of the loss and of the scores.
"""
from itertools import islice
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.util import registry
from spacy.vocab import Vocab
from thinc.api import Model, SequenceCategoricalCrossentropy
from thinc.types import Floats2d

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-entangle.CharTagger.v1"
upstream = "*"
side = "char"
nO = null
"""


# -- doc extensions ---------------------------------------------------------------------


def char_spans_from_tags(tags: Optional[Sequence[Optional[str]]]) -> List[Tuple[int, int, str]]:
    """Maximal runs of one label: [(start_char, end_char, label)], end exclusive;
    None (no label, e.g. whitespace) breaks runs."""
    if not tags:
        return []
    spans: List[Tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(tags) + 1):
        if i == len(tags) or tags[i] != tags[start]:
            if tags[start] is not None:
                spans.append((start, i, tags[start]))
            start = i
    return spans


# the user_data key spaCy itself would use for a plain `default=None` extension
CHAR_TAGS_KEY = ("._.", "char_tags", None, None)


def _get_char_tags(doc: Doc) -> Optional[Tuple[Optional[str], ...]]:
    value = doc.user_data.get(CHAR_TAGS_KEY)
    return None if value is None else tuple(value)


def _set_char_tags(doc: Doc, value: Optional[Sequence[Optional[str]]]) -> None:
    """Stored as a tuple (what msgpack gives back after Doc.to_bytes / DocBin anyway),
    checked: one label (str) or None per character of doc.text."""
    if value is None:
        doc.user_data[CHAR_TAGS_KEY] = None
        return
    if isinstance(value, str):
        raise ValueError("doc._.char_tags takes a sequence of labels (one per character), not a string")
    value = tuple(value)
    if len(value) != len(doc.text):
        raise ValueError(
            f"doc._.char_tags needs one label (or None) per character of doc.text: got {len(value)} "
            f"labels for {len(doc.text)} characters"
        )
    bad = next((v for v in value if v is not None and not isinstance(v, str)), None)
    if bad is not None:
        raise ValueError(f"doc._.char_tags labels are strings or None, got {bad!r}")
    doc.user_data[CHAR_TAGS_KEY] = value


def _get_char_spans(doc: Doc) -> List[Tuple[int, int, str]]:
    return char_spans_from_tags(doc._.char_tags)


def install_extensions() -> None:
    if not Doc.has_extension("char_tags"):
        Doc.set_extension("char_tags", getter=_get_char_tags, setter=_set_char_tags)
    if not Doc.has_extension("char_spans"):
        Doc.set_extension("char_spans", getter=_get_char_spans)


install_extensions()


# -- gold / prediction alignment ------------------------------------------------------------


def align_char_tags(
    tags: Optional[Sequence[Optional[str]]], src_text: str, dst_text: str
) -> List[Optional[str]]:
    """``tags`` (one per character of ``src_text``) moved onto ``dst_text``. Equal texts:
    a copy. Texts that differ in whitespace only (what spaCy's Example alignment
    allows): matched on their non-whitespace characters; whitespace gets None."""
    if tags is None:
        return [None] * len(dst_text)
    if len(tags) != len(src_text):
        raise ValueError(
            f"doc._.char_tags has {len(tags)} labels for a text of {len(src_text)} characters: "
            "it needs exactly one label (or None) per character of doc.text"
        )
    if src_text == dst_text:
        return list(tags)
    src = [i for i, c in enumerate(src_text) if not c.isspace()]
    dst = [i for i, c in enumerate(dst_text) if not c.isspace()]
    if len(src) != len(dst) or any(src_text[i] != dst_text[j] for i, j in zip(src, dst)):
        raise ValueError(
            "char_tags cannot be aligned: the predicted and reference texts differ in more "
            f"than whitespace ({src_text[:40]!r}... vs {dst_text[:40]!r}...)"
        )
    out: List[Optional[str]] = [None] * len(dst_text)
    for i, j in zip(src, dst):
        out[j] = tags[i]
    return out


# -- scorer ------------------------------------------------------------------------------


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
        hit = [
            None if (g is None or text[i].isspace()) else (pred[i] == g) for i, g in enumerate(gold)
        ]
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
                    if hit[i] is not None:
                        n_mix += 1
                        ok_mix += hit[i]
    return {
        f"{_prefix(attr)}_acc": ok / n if n else None,
        f"{_prefix(attr)}_acc_mix": ok_mix / n_mix if n_mix else None,
        f"{_prefix(attr)}_acc_per_label": {k: v[0] / v[1] for k, v in sorted(per_label.items())},
    }


def _prefix(attr: str) -> str:
    return "char" if attr == "char_tags" else attr


@registry.scorers("spacy-entangle.char_tagger_scorer.v1")
def make_char_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return score_char_tags


# -- the component -------------------------------------------------------------------------


@Language.factory(
    "char_tagger",
    assigns=["doc._.char_tags", "doc._.char_spans"],
    default_config={
        "model": util.load_config_from_str(DEFAULT_MODEL_CONFIG)["model"],
        "whitespace_label": None,
        "scorer": {"@scorers": "spacy-entangle.char_tagger_scorer.v1"},
    },
    default_score_weights={"char_acc": 1.0, "char_acc_mix": 0.0, "char_acc_per_label": None},
)
def make_char_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], List[Floats2d]],
    whitespace_label: Optional[str],
    scorer: Optional[Callable],
) -> "CharTagger":
    """One label per character of doc.text (doc._.char_tags, doc._.char_spans).
    whitespace_label: what whitespace characters get (null: no label)."""
    return CharTagger(nlp.vocab, model, name, whitespace_label=whitespace_label, scorer=scorer)


class CharTagger(TrainablePipe):
    """Softmax over labels for every character, from per-character states."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "char_tagger",
        *,
        whitespace_label: Optional[str] = None,
        scorer: Optional[Callable] = score_char_tags,
    ):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg: Dict[str, Any] = {"labels": [], "whitespace_label": whitespace_label}
        self.scorer = scorer
        install_extensions()

    @property
    def labels(self) -> Tuple[str, ...]:
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> Tuple[str, ...]:
        return self.labels

    @property
    def whitespace_label(self) -> Optional[str]:
        return self.cfg.get("whitespace_label")

    def add_label(self, label: str) -> int:
        if not isinstance(label, str):
            raise ValueError(f"char_tagger labels are strings, got {label!r}")
        if label in self.cfg["labels"]:
            return 0
        output = self.model.get_ref("output_layer")
        if output.has_dim("nO"):
            raise ValueError(
                f"Cannot add the label {label!r} to the initialized char_tagger '{self.name}' "
                f"(its output layer has {output.get_dim('nO')} labels): give all labels before "
                "nlp.initialize()"
            )
        self.cfg["labels"].append(label)
        return 1

    # -- prediction ------------------------------------------------------------------------
    def predict(self, docs: Iterable[Doc]) -> List[Floats2d]:
        docs = list(docs)
        if not any(len(doc.text) for doc in docs):
            n_labels = len(self.labels)
            return [self.model.ops.alloc2f(0, n_labels) for _ in docs]
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], scores: List[Floats2d]) -> None:
        labels = self.labels
        ws = self.whitespace_label
        for doc, doc_scores in zip(docs, scores):
            text = doc.text
            guesses = self.model.ops.to_numpy(doc_scores).argmax(axis=1) if len(text) else []
            doc._.char_tags = [ws if c.isspace() else labels[int(g)] for c, g in zip(text, guesses)]

    # -- training ----------------------------------------------------------------------------
    def get_loss(self, examples: Iterable[Example], scores: List[Floats2d]) -> Tuple[float, List[Floats2d]]:
        """thinc's softmax cross-entropy over the characters with a gold label, summed
        like spaCy's tagger; whitespace, None and labels unknown to the component are
        missing values (no gradient)."""
        validate_examples(examples, "CharTagger.get_loss")
        known = set(self.labels)
        truths = []
        for eg in examples:
            text = eg.predicted.text
            gold = align_char_tags(eg.reference._.char_tags, eg.reference.text, text)
            truths.append([g if (g in known and not c.isspace()) else None for c, g in zip(text, gold)])
        loss_func = SequenceCategoricalCrossentropy(names=self.labels, normalize=False, missing_value=None)
        d_scores, loss = loss_func(scores, truths)
        return float(loss), d_scores

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Sequence[str]] = None,
    ) -> None:
        """Labels from ``labels`` or from the examples' ``reference._.char_tags``
        (characters that are not whitespace), then the model's shapes."""
        validate_get_examples(get_examples, "CharTagger.initialize")
        if labels is not None:
            for label in labels:
                self.add_label(label)
        else:
            found = set()
            for eg in get_examples():
                tags = eg.reference._.char_tags
                if tags is None:
                    continue
                text = eg.reference.text
                if len(tags) != len(text):
                    raise ValueError(
                        f"doc._.char_tags has {len(tags)} labels for a text of {len(text)} characters"
                    )
                found.update(t for t, c in zip(tags, text) if t is not None and not c.isspace())
            for label in sorted(found):
                self.add_label(label)
        if not self.labels:
            raise ValueError(
                f"char_tagger '{self.name}' found no labels: the training examples' reference "
                "docs need doc._.char_tags (one label per character), or pass labels to initialize"
            )
        output = self.model.get_ref("output_layer")
        if not output.has_dim("nO"):
            output.set_dim("nO", len(self.labels))
        elif output.get_dim("nO") != len(self.labels):
            raise ValueError(
                f"char_tagger '{self.name}': the model's nO = {output.get_dim('nO')} but there are "
                f"{len(self.labels)} labels ({', '.join(self.labels)})"
            )
        doc_sample = [eg.predicted for eg in islice(get_examples(), 10)]
        self.model.initialize(X=doc_sample or None)
