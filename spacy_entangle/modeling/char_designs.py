"""The ways of growing a character encoder from a subword encoder (`pretrain-chars
--init-from --design NAME`): one registered ``CharDesign`` per design, in a catalogue
registry as spaCy registers its architectures. Everything that differs between designs is
here, so the pretraining run, the model card, int8 prediction and transformers' auto
classes read it instead of testing the design by name:

- ``grow`` / ``pretrainer``: the encoder as grown, and the stages' losses over it;
- ``stage_a``: whether it has a word-level front end for the type-level stage A;
- ``model_type`` / ``shares_model_type``: how a saved encoder is recognised;
- ``int8_keep_float``: children that ``inference = "int8"`` leaves in float (the copied
  layers: quantizing them cost 0.97 F1 on WNUT-17 dev for design (b));
- ``card_title`` / ``card_tags`` / ``objective``: how the model card and config name it;
- ``auto_classes``: a new model type's config and model, registered with ``AutoConfig`` /
  ``AutoModel`` on ``import spacy_entangle`` (lazily: auto_classes.py);
- ``max_words``: the words a row may hold (the copied position table), which caps the
  pretraining text's rows as the pipeline's windows are capped.

Callables may be given as ``"module:name"`` and are imported on first use: this module and
the registry import nothing heavy (settings and ``import spacy_entangle`` read them).
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Union

import catalogue  # type: ignore[import-untyped]  # (no py.typed)

from .auto_classes import register_auto_classes, resolve

GROWN_MODEL_TYPE = "entangle-grown"  # design (b)'s model type (modeling/grown.py)

char_designs = catalogue.create("spacy_entangle", "char_designs", entry_points=True)

Ref = Union[str, Callable[..., Any]]


@dataclass(frozen=True)
class CharDesign:
    """One design. ``grow(subword, *, k, char_width, seed)`` -> a Hugging Face encoder whose
    copied layers are ``subword``'s first ``k`` (None: all) and whose new parts are random
    under ``seed``; ``pretrainer(encoder, mid_layer)`` -> the pretraining model
    (pretraining/grow.py's ``GrownPretrainer`` or a subclass); ``max_words(subword_config)``
    -> words per row (None: no limit but the text's ``max_chars``)."""

    name: str
    model_type: str
    grow: Ref
    pretrainer: Ref
    stage_a: bool
    card_title: str
    card_tags: Tuple[str, ...]
    int8_keep_float: Tuple[str, ...] = ()
    objective: str = ""
    shares_model_type: bool = False  # also the type of encoders not grown: match by grown_from
    auto_classes: Optional[Tuple[str, str]] = None  # ("module:ConfigClass", "module:ModelClass")
    max_words: Optional[Ref] = None

    def grow_encoder(self, subword: str, *, k: Optional[int], char_width: int, seed: int) -> Any:
        encoder = _call(self.grow)(subword, k=k, char_width=char_width, seed=seed)
        encoder.config.grown_design = self.name  # saved: design_of reads it back
        return encoder

    def make_pretrainer(self, encoder: Any, mid_layer: int) -> Any:
        return _call(self.pretrainer)(encoder, mid_layer)

    def words_per_row(self, subword_config: Any) -> Optional[int]:
        return None if self.max_words is None else int(_call(self.max_words)(subword_config))


def _call(ref: Ref) -> Callable[..., Any]:
    return resolve(ref) if isinstance(ref, str) else ref


def register_design(design: CharDesign) -> CharDesign:
    """Register ``design`` under its name (a second registration replaces the first) and
    its model type with transformers' auto classes, if it brings one."""
    char_designs.register(design.name, func=design)
    if design.auto_classes:
        register_auto_classes(design.model_type, *design.auto_classes)
    return design


def designs() -> Dict[str, CharDesign]:
    """The registered designs by name (entry points included), in registration order."""
    return dict(char_designs.get_all())


def get_design(name: str) -> CharDesign:
    found = designs().get(name)
    if found is None:
        raise ValueError(f"--design must be one of {', '.join(designs())}, got {name!r}")
    return found


def design_of(config: Any) -> Optional[CharDesign]:
    """The design an encoder's config was grown by (None: not a grown encoder): its
    ``grown_design`` when saved, else its model type (a shared one, such as ``canine``,
    only with ``grown_from`` set: encoders grown before ``grown_design`` was saved)."""
    registered = designs()
    name = getattr(config, "grown_design", None)
    if isinstance(name, str) and name in registered:
        return registered[name]
    model_type = getattr(config, "model_type", None)
    grown = bool(getattr(config, "grown_from", None))
    for design in registered.values():
        if design.model_type == model_type and (grown or not design.shares_model_type):
            return design
    return None


WORD = register_design(
    CharDesign(
        name="word",
        model_type=GROWN_MODEL_TYPE,
        grow="spacy_entangle.modeling.grown:grow_design",
        pretrainer="spacy_entangle.pretraining.grow:GrownPretrainer",
        stage_a=True,
        card_title="Character encoder grown from a subword encoder by spacy-entangle",
        card_tags=(GROWN_MODEL_TYPE, "character-level", "distillation"),
        int8_keep_float=("words",),
        auto_classes=(
            "spacy_entangle.modeling.grown_config:GrownCharConfig",
            "spacy_entangle.modeling.grown:GrownCharModel",
        ),
        max_words="spacy_entangle.modeling.grown:max_words",
    )
)

CANINE = register_design(
    CharDesign(
        name="canine",
        model_type="canine",
        grow="spacy_entangle.modeling.grown_canine:grow_design",
        pretrainer="spacy_entangle.pretraining.grow:CanineGrownPretrainer",
        stage_a=False,
        card_title="CANINE grown from a subword encoder by spacy-entangle",
        card_tags=(GROWN_MODEL_TYPE, "character-level", "distillation", "canine"),
        int8_keep_float=("encoder",),  # CanineModel.encoder: the deep stack, copied
        objective="a CANINE whose deep stack is ",
        shares_model_type=True,
    )
)
