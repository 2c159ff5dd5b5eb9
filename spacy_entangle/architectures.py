"""The registered, versioned architectures. Thin: they compose the layers."""

from typing import Any, List, Literal, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Linear, Logistic, Model, Ragged, Softmax, chain, reduce_first, with_array
from thinc.types import Floats2d

from .data import SIDES, Combine, EntangleData, Side, side_names
from .layers import EntangleListener, EntangleModel, entangle_first_state, entangle_pool
from .layers.char_states import entangle_char_states
from .layers.contract import set_rows, set_sides
from .layers.settings import EntangleSettings
from .layers.side_gate import side_gate
from .layers.tanh import Tanh
from .tokenization.windows import WindowSettings


@registry.architectures("spacy-entangle.EntangleModel.v1")
def EntangleModel_v1(
    char_backbone: str,
    subword_backbone: str,
    n_coattention: int = 2,
    hidden_width: Optional[int] = None,
    n_heads: Optional[int] = None,
    ffn_width: Optional[int] = None,
    dropout: float = 0.1,
    backbone_lr_scale: float = 1.0,
    mixed_precision: bool = False,
    gradient_checkpointing: bool = False,
    window_getter: Optional[WindowSettings] = None,
    max_batch_chars: int = 16384,
) -> Model[List[Doc], List[EntangleData]]:
    """Character encoder + subword encoder + n_coattention co-attention modules per side.

    char_backbone / subword_backbone: Hugging Face hub names or local directories.
    hidden_width / n_heads / ffn_width: the co-attention layers (null: the subword
    encoder's width and heads, 4 x width). backbone_lr_scale: learning-rate factor for
    the two pretrained encoders relative to the new layers.
    """
    return EntangleModel(EntangleSettings.pick(locals()), window_getter)


@registry.architectures("spacy-entangle.EntangleListener.v1")
def EntangleListener_v1(
    upstream: str = "*",
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
) -> Model[List[Doc], List[Floats2d]]:
    """One vector per token from the upstream `entangle` component: side = subword |
    char | both (concatenated); pooling over the token's pieces / characters (default:
    the first). EntangleListener.v2 with combine = "concat"."""
    return EntangleListener_v2(upstream, side, pooling, grad_factor, "concat")


@registry.architectures("spacy-entangle.EntangleListener.v2")
def EntangleListener_v2(
    upstream: str = "*",
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
    combine: Combine = "concat",
) -> Model[List[Doc], List[Floats2d]]:
    """v1 plus ``combine``, how side = both joins a token's two vectors: "concat"
    (subword ‖ char, 2 x width) or "gate" (a learned per-dimension mix, width:
    layers/side_gate.py)."""
    gate = _combine(side, combine)
    listener = EntangleListener(upstream, side_names(side))
    pool = entangle_pool(side, pooling or reduce_first(), grad_factor)
    # the rows it reads: a prediction keeps only those (layers/entangle_model.py, keep_rows)
    set_rows(listener, "first" if pool.layers[0].name == "reduce_first" else "tokens")
    model: Model[List[Doc], List[Floats2d]] = chain(listener, pool, *gate)
    model.set_ref("listener", listener)
    return model


def _combine(side: Side, combine: Combine) -> List[Model]:
    """The layers after the pooling that join the two sides ("concat": none)."""
    if combine == "concat":
        return []
    if combine != "gate":
        raise ValueError(f"combine must be 'concat' or 'gate', got {combine!r}")
    if side != "both":
        raise ValueError(f"combine = 'gate' mixes the two sides: it needs side = 'both', got {side!r}")
    return [with_array(side_gate())]


@registry.architectures("spacy-entangle.EntangleTok2Vec.v1")
def EntangleTok2Vec_v1(
    char_backbone: str,
    subword_backbone: str,
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
    n_coattention: int = 2,
    hidden_width: Optional[int] = None,
    n_heads: Optional[int] = None,
    ffn_width: Optional[int] = None,
    dropout: float = 0.1,
    backbone_lr_scale: float = 1.0,
    mixed_precision: bool = False,
    gradient_checkpointing: bool = False,
    window_getter: Optional[WindowSettings] = None,
    max_batch_chars: int = 16384,
) -> Model[List[Doc], List[Floats2d]]:
    """A standalone entangle encoder + pooling (what `nlp.replace_listeners` puts in
    place of a listener): EntangleModel.v1's settings plus the listener's.
    EntangleTok2Vec.v2 with combine = "concat"."""
    return EntangleTok2Vec_v2(**locals(), combine="concat")


@registry.architectures("spacy-entangle.EntangleTok2Vec.v2")
def EntangleTok2Vec_v2(
    char_backbone: str,
    subword_backbone: str,
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
    combine: Combine = "concat",
    n_coattention: int = 2,
    hidden_width: Optional[int] = None,
    n_heads: Optional[int] = None,
    ffn_width: Optional[int] = None,
    dropout: float = 0.1,
    backbone_lr_scale: float = 1.0,
    mixed_precision: bool = False,
    gradient_checkpointing: bool = False,
    window_getter: Optional[WindowSettings] = None,
    max_batch_chars: int = 16384,
) -> Model[List[Doc], List[Floats2d]]:
    """EntangleTok2Vec.v1 plus the listener's ``combine`` (EntangleListener.v2)."""
    gate = _combine(side, combine)
    model = EntangleModel(EntangleSettings.pick(locals()), window_getter)
    set_sides(model, side_names(side))
    return chain(model, entangle_pool(side, pooling or reduce_first(), grad_factor), *gate)


@registry.architectures("spacy-entangle.TextCatCls.v1")
def TextCatCls_v1(
    upstream: str = "*",
    side: Literal["subword", "char"] = "subword",
    exclusive_classes: bool = True,
    nO: Optional[int] = None,
    dropout: float = 0.1,
) -> Model[List[Doc], Floats2d]:
    """The paper's classification head: the first state of ``side`` -> dropout ->
    Linear -> tanh -> dropout -> Linear (softmax if exclusive, else sigmoid), the
    order of RoBERTa's classification head.

    dropout: the rate of the two Dropout layers until something sets it. spaCy's
    convention applies: a component's update sets every layer's rate to the
    training dropout (``[training] dropout``, ``nlp.update(drop=...)``), so that
    is the rate used in training; prediction never drops anything."""
    if side not in SIDES:  # one side: "both" is not a first state
        raise ValueError(f"TextCatCls side must be 'subword' or 'char', got {side!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"TextCatCls dropout must be in [0, 1), got {dropout!r}")
    listener = EntangleListener(upstream, (side,))
    output = Softmax(nO=nO) if exclusive_classes else chain(Linear(nO=nO), Logistic())
    hidden = Linear()
    model: Model[List[Doc], Floats2d] = chain(
        listener, entangle_first_state(side), Dropout(dropout), hidden, Tanh(), Dropout(dropout), output
    )
    chain_init = model.init

    def init(model: Model, X: Any = None, Y: Any = None) -> None:
        # the hidden layer is as wide as the encoder (not inferred from the labels)
        if listener.has_dim("nO") and not hidden.has_dim("nO"):
            hidden.set_dim("nO", listener.get_dim("nO"))
        chain_init(model, X=X, Y=Y)

    model.init = init
    model.set_ref("listener", listener)
    model.set_ref("output_layer", output)
    model.attrs["multi_label"] = not exclusive_classes
    return model


@registry.architectures("spacy-entangle.CharTagger.v1")
def CharTagger_v1(
    upstream: str = "*",
    side: Side = "char",
    nO: Optional[int] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """Character-level labelling: one row per character of doc.text from the upstream
    `entangle` component (side = char | subword | both; the subword side is
    token-level), then a softmax over the labels: (len(doc.text), nO) per doc."""
    states = entangle_char_states(upstream, side)
    output = Softmax(nO=nO)
    model = chain(states, with_array(output))
    model.set_ref("listener", states.get_ref("listener"))
    model.set_ref("output_layer", output)
    return model
