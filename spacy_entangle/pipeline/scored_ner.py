"""The `scored_ner` component: spaCy's own transition-based `ner` decoded by beam search,
with a confidence per entity.

A greedy `ner` keeps one analysis; `scored_ner` (spaCy's ``EntityRecognizer`` with
``beam_width`` >= 2, as spaCy's `beam_ner`) keeps the ``beam_width`` best and writes the best
one to ``doc.ents`` as usual. Each of those entities also goes to ``doc.spans[spans_key]``
(default ``"ents"``, in the order of ``doc.ents``) with its score in
``doc.spans[spans_key].attrs["scores"]`` (one float in [0, 1] per span, like spancat's
``doc.spans["sc"].attrs["scores"]``): the share of the beam's probability mass
(``EntityRecognizer.scored_ents``) on the analyses that hold the same entity (start, end,
label). The weights are those of a `ner`: :func:`load_scored` loads a saved pipeline with
its `ner` built by this factory, no retraining (CLI: ``python -m spacy_entangle add-scores``).

The scores are the beam's, not calibrated probabilities: with a greedy-trained model most
entities score near 1.0, and an entity the beam is unsure of scores lower.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

import numpy
from spacy import util
from spacy.language import Language
from spacy.pipeline import EntityRecognizer
from spacy.pipeline._parser_internals.transition_system import TransitionSystem
from spacy.pipeline.ner import ner_score
from spacy.tokens import Doc, SpanGroup
from spacy.vocab import Vocab
from thinc.api import Model
from thinc.extra.search import Beam

FACTORY = "scored_ner"
DEFAULT_SPANS_KEY = "ents"
DEFAULT_BEAM_WIDTH = 4
# the factories whose components hold a transition-based NER's weights (load_scored turns them into this)
NER_FACTORIES = ("ner", "beam_ner", FACTORY)
# cfg keys that do not shape the weights: the config the pipeline is loaded with wins over the
# saved cfg (a greedy `ner`'s cfg says beam_width 1; spacy.load(path, config={...}) overrides them)
DECODING_CFG = ("beam_width", "beam_density", "spans_key")

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
extra_state_tokens = false
hidden_width = 64
maxout_pieces = 2
use_upper = false
nO = null

[model.tok2vec]
@architectures = "spacy-entangle.EntangleListener.v1"
upstream = "*"
side = "both"
grad_factor = 1.0

[model.tok2vec.pooling]
@layers = "reduce_first.v1"
"""


@Language.factory(
    FACTORY,
    assigns=["doc.ents", "token.ent_iob", "token.ent_type", "doc.spans"],
    default_config={
        "model": util.load_config_from_str(DEFAULT_MODEL_CONFIG)["model"],
        "moves": None,
        "update_with_oracle_cut_size": 100,
        "beam_width": DEFAULT_BEAM_WIDTH,
        "beam_density": 0.0,
        "beam_update_prob": 0.0,
        "spans_key": DEFAULT_SPANS_KEY,
        "incorrect_spans_key": None,
        "scorer": {"@scorers": "spacy.ner_scorer.v1"},
    },
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None},
)
def make_scored_ner(
    nlp: Language,
    name: str,
    model: Model,
    moves: Optional[TransitionSystem],
    update_with_oracle_cut_size: int,
    beam_width: int,
    beam_density: float,
    beam_update_prob: float,
    spans_key: str,
    incorrect_spans_key: Optional[str],
    scorer: Optional[Callable],
) -> "ScoredEntityRecognizer":
    """Construct a `scored_ner`: spaCy's transition-based `ner` decoded by a beam of
    ``beam_width`` analyses, so that each entity gets a confidence. Returns the component:
    ``doc.ents`` from the best analysis as usual, and each of those entities in
    ``doc.spans[spans_key]`` with its score (the share of the beam's probability mass on
    the analyses that hold it: the beam's, not a calibrated probability) in
    ``doc.spans[spans_key].attrs["scores"]``. Its weights are a `ner`'s.

    nlp (Language), name (str): the pipeline, and the component's name.
    model (Model): the transition-based model, as a `ner`'s; the default is
        ``spacy.TransitionBasedParser.v2`` (state_type "ner") over an
        ``spacy-entangle.EntangleListener.v1`` with side = "both" and reduce_first pooling.
    moves (Optional[TransitionSystem]): the NER transition system; null (default): spaCy
        builds it from the labels.
    update_with_oracle_cut_size (int): as spaCy's `ner`: in training, long docs are cut into
        segments of about this many transitions from the gold-standard history; 100 by
        default.
    beam_width (int): the analyses kept while decoding, an integer >= 2 (a beam of 1 is the
        greedy `ner`: one analysis, so every entity would score 1.0); 4 by default.
    beam_density (float): prune the analyses whose score is below this share of the best
        one's, in [0, 1); 0.0 (default) keeps the whole beam.
    beam_update_prob (float): the share of training updates made on the beam instead of
        greedy ones; 0.0 (default): greedy updates, as `ner` trains.
    spans_key (str): the ``doc.spans`` key the scored entities go to, a non-empty string;
        "ents" by default.
    incorrect_spans_key (Optional[str]): as spaCy's `ner`: the span group of the training
        docs that holds entity annotations known to be wrong, which the model learns not
        to predict; null (default): none.
    scorer (Optional[Callable]): scores ``doc.ents`` in evaluation; the default,
        ``spacy.ner_scorer.v1``, gives ents_p, ents_r, ents_f and ents_per_type.

    beam_width, beam_density and spans_key change no weight: the config the pipeline is
    loaded with decides them, not the saved one (a greedy `ner`'s saved cfg says beam_width
    1), so a trained `ner` loads as a `scored_ner` without retraining (load_scored).
    """
    return ScoredEntityRecognizer(
        nlp.vocab,
        model,
        name,
        moves,
        update_with_oracle_cut_size=update_with_oracle_cut_size,
        beam_width=beam_width,
        beam_density=beam_density,
        beam_update_prob=beam_update_prob,
        spans_key=spans_key,
        incorrect_spans_key=incorrect_spans_key,
        scorer=scorer,
    )


def check_decoding(beam_width: Any, beam_density: Any, spans_key: Any) -> None:
    """A clear error for settings the beam cannot use."""
    if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 2:
        raise ValueError(
            f"scored_ner: beam_width must be an integer >= 2, got {beam_width!r} (a beam of 1 is the "
            "greedy `ner`: one analysis, so every entity would score 1.0)"
        )
    if isinstance(beam_density, bool) or not isinstance(beam_density, (int, float)) or not 0.0 <= beam_density < 1.0:
        raise ValueError(f"scored_ner: beam_density must be in [0, 1), got {beam_density!r}")
    if not isinstance(spans_key, str) or not spans_key:
        raise ValueError(f"scored_ner: spans_key must be a non-empty string, got {spans_key!r}")


class ScoredEntityRecognizer(EntityRecognizer):
    """spaCy's EntityRecognizer with beam decoding, storing the entities' scores in doc.spans.
    Its weights, moves and files are a `ner`'s (same model, same serialisation)."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "ner",
        moves: Optional[TransitionSystem] = None,
        *,
        update_with_oracle_cut_size: int = 100,
        beam_width: int = DEFAULT_BEAM_WIDTH,
        beam_density: float = 0.0,
        beam_update_prob: float = 0.0,
        spans_key: str = DEFAULT_SPANS_KEY,
        incorrect_spans_key: Optional[str] = None,
        scorer: Optional[Callable] = ner_score,
        **cfg: Any,  # what pickling passes back (Parser.__getnewargs_ex__: the whole cfg)
    ):
        check_decoding(beam_width, beam_density, spans_key)
        super().__init__(
            vocab,
            model,
            name,
            moves,
            update_with_oracle_cut_size=update_with_oracle_cut_size,
            beam_width=beam_width,
            beam_density=beam_density,
            beam_update_prob=beam_update_prob,
            incorrect_spans_key=incorrect_spans_key,
            scorer=scorer,
        )
        self.cfg["spans_key"] = spans_key

    @property
    def spans_key(self) -> str:
        return self.cfg["spans_key"]

    @property
    def beam_width(self) -> int:
        return self.cfg["beam_width"]

    def set_annotations(self, docs: Iterable[Doc], states_or_beams: List[Any]) -> None:
        """doc.ents from the best analysis (spaCy's own), then each of them in
        doc.spans[spans_key] with its score in the beam."""
        docs = list(docs)
        super().set_annotations(docs, states_or_beams)
        key = self.spans_key
        for doc, parse in zip(docs, states_or_beams):
            # a batch of empty docs is never decoded (Parser.predict): states, no beam
            found: Dict[Any, float] = self.scored_ents([parse])[0] if isinstance(parse, Beam) else {}
            ents = list(doc.ents)
            # one set before this component (an entity_ruler's) is in every analysis, so 1.0, and
            # so is one no analysis holds (none is expected: doc.ents is the best analysis')
            scores = [min(1.0, max(0.0, float(found.get((e.start, e.end, e.label_), 1.0)))) for e in ents]
            doc.spans[key] = SpanGroup(
                doc, name=key, spans=ents, attrs={"scores": numpy.asarray(scores, dtype="float32")}
            )

    def _keep_decoding(self, load: Callable[[], Any]) -> "ScoredEntityRecognizer":
        """Load (the saved cfg included), then put back the decoding settings of the config
        this component was built from: they change no weight, and a greedy `ner`'s saved cfg
        says beam_width 1."""
        decoding = {key: self.cfg[key] for key in DECODING_CFG}
        load()
        self.cfg.update(decoding)
        return self

    def from_disk(self, path: Union[str, Path], exclude: Iterable[str] = tuple()) -> "ScoredEntityRecognizer":
        return self._keep_decoding(lambda: super(ScoredEntityRecognizer, self).from_disk(path, exclude=exclude))

    def from_bytes(self, bytes_data: bytes, exclude: Iterable[str] = tuple()) -> "ScoredEntityRecognizer":
        return self._keep_decoding(lambda: super(ScoredEntityRecognizer, self).from_bytes(bytes_data, exclude=exclude))


def scored_overrides(
    nlp_config: Dict[str, Any],
    component: str = "ner",
    *,
    beam_width: int = DEFAULT_BEAM_WIDTH,
    beam_density: float = 0.0,
    spans_key: str = DEFAULT_SPANS_KEY,
) -> Dict[str, Any]:
    """The spacy.load ``config`` overrides that build ``component`` (a `ner`, `beam_ner` or
    `scored_ner`) of the pipeline whose config is ``nlp_config`` with this factory."""
    check_decoding(beam_width, beam_density, spans_key)
    components = nlp_config.get("components", {})
    names = list(nlp_config.get("nlp", {}).get("pipeline", [])) or list(components)
    if component not in components:
        raise ValueError(
            f"The pipeline has no component named {component!r} to score (components: "
            f"{', '.join(names) or 'none'}); name its entity recognizer with --component"
        )
    factory = components[component].get("factory")
    if factory not in NER_FACTORIES:
        raise ValueError(
            f"Component {component!r} is made by the {factory!r} factory, not a transition-based entity "
            f"recognizer ({', '.join(NER_FACTORIES)}): only those can be decoded by beam search"
        )
    settings = {"factory": FACTORY, "beam_width": beam_width, "beam_density": beam_density, "spans_key": spans_key}
    return {"components": {component: settings}}


def load_scored(
    path: Union[str, Path],
    component: str = "ner",
    *,
    beam_width: int = DEFAULT_BEAM_WIDTH,
    beam_density: float = 0.0,
    spans_key: str = DEFAULT_SPANS_KEY,
    **kwargs: Any,
) -> Language:
    """The pipeline saved in the folder ``path`` with its ``component`` built by the
    `scored_ner` factory: the same weights, decoded by a beam of ``beam_width``, entities'
    scores in doc.spans[spans_key]. ``nlp.to_disk`` saves it so that ``spacy.load`` gives the
    scores (the saved config names `scored_ner`). ``kwargs`` go to spacy.load (exclude, ...).
    (An installed package: ``spacy.load(NAME, config=scored_overrides(...))`` does the same.)"""
    import spacy

    path = Path(path)
    if not (path / "config.cfg").is_file():
        raise ValueError(f"{path} is not a saved spaCy pipeline (no config.cfg in it)")
    config = util.load_config(path / "config.cfg", interpolate=False)
    overrides = scored_overrides(
        config, component, beam_width=beam_width, beam_density=beam_density, spans_key=spans_key
    )
    return spacy.load(path, config=overrides, **kwargs)
