"""The `char_tagger` component: one label per CHARACTER of ``doc.text`` (e.g. the
language of each morpheme in intraword code-switching), from the `entangle`
component's subword-aware character states.

It writes ``doc._.char_tags`` (one label per character; whitespace characters get
``whitespace_label``, default None: no label) and so ``doc._.char_spans``: both extensions
are in char_tags.py, the scorer in char_scorer.py.

Training reads ``example.reference._.char_tags`` (None entries: unlabelled, no loss).
Whitespace characters are never predicted by the model: they always get
``whitespace_label``, and are left out of the loss and of the scores.
"""

from itertools import islice
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model, SequenceCategoricalCrossentropy
from thinc.types import Floats2d

from ..char_tags import align_char_tags, install_extensions

# make_char_tagger_scorer: the entry point of spacy-entangle.char_tagger_scorer.v1 in installs
# made before the scorer had its own module names it here
from .char_scorer import make_char_tagger_scorer, score_char_tags  # noqa: F401

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-entangle.CharTagger.v1"
upstream = "*"
side = "char"
nO = null
"""


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
    """Construct a `char_tagger`: one label per character of doc.text (e.g. the language
    of each morpheme in intraword code-switching), from the upstream `entangle`
    component's subword-aware character states. Returns the component, which writes
    ``doc._.char_tags`` and so ``doc._.char_spans``.

    nlp (Language), name (str): the pipeline, and the component's name.
    model (Model[List[Doc], List[Floats2d]]): one row of label scores per character of
        doc.text, usually ``spacy-entangle.CharTagger.v1`` (the default: the char side of
        the `entangle` component before it).
    whitespace_label (Optional[str]): the label every whitespace character gets; null
        (default): no label. Whitespace is never predicted by the model and is left out of
        the loss and of the scores.
    scorer (Optional[Callable]): scores the component's ``doc._.char_tags`` in evaluation;
        the default, ``spacy-entangle.char_tagger_scorer.v1``, gives char_acc,
        char_acc_mix (characters of words with more than one label) and
        char_acc_per_label; null: no scores.
    """
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
        # None is the missing_value: thinc's annotation of the truths leaves it out
        d_scores, loss = loss_func(scores, truths)  # type: ignore[arg-type]
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
            found: Set[str] = set()
            for eg in get_examples():
                tags = eg.reference._.char_tags
                if tags is None:
                    continue
                text = eg.reference.text
                if len(tags) != len(text):
                    raise ValueError(f"doc._.char_tags has {len(tags)} labels for a text of {len(text)} characters")
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
