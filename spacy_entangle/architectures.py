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
    """The entanglement encoder: a character encoder and a subword encoder whose states
    meet in n_coattention co-attention modules per side, so that each side's states see
    the other's. Returns the model of the `entangle` component, one EntangleData (both
    sides' states and their alignment to the tokens) per doc.

    char_backbone (str): the character encoder, one that reads codepoints (CANINE, or a
        char encoder grown from a subword encoder): a Hugging Face hub name or a local
        directory, loaded when the pipeline is initialized.
    subword_backbone (str): the subword encoder and its fast tokenizer, a hub name or a
        local directory; the tokenizer's pieces are the subword side's rows.
    n_coattention (int): co-attention modules per side (each attends to the other side's
        states, then to its own), 2 by default; 0 or more. With 0 the sides do not meet,
        and an encoder whose side no listener reads is not run at all (0 with char-only
        listeners is the char-only baseline).
    hidden_width (Optional[int]): the width of the co-attention modules and of every state
        the listeners read; null (default): the subword encoder's width. A side whose
        encoder has another width is projected to it by a Linear layer. A positive
        integer, divisible by n_heads.
    n_heads (Optional[int]): attention heads of each co-attention module; null (default):
        the subword encoder's head count, which is refused (not replaced by a guess) when
        it does not divide hidden_width. A positive integer.
    ffn_width (Optional[int]): the feed-forward width of each co-attention module; null
        (default): 4 x hidden_width. A positive integer.
    dropout (float): the co-attention modules' dropout rate in training, in [0, 1); 0.1 by
        default. The pretrained encoders keep the dropout of their own configs.
    backbone_lr_scale (float): the learning-rate factor of the two pretrained encoders'
        weights relative to the new layers (co-attention, projections), which usually
        want a larger rate; 1.0 (default): the same rate. 0 or more.
    mixed_precision (bool): train under fp16 autocast with loss scaling on a CUDA GPU,
        which saves GPU memory; the CPU trains in fp32 whatever it says. Prediction does
        not follow it: the `entangle` component's ``inference`` decides how it runs.
        Default false.
    gradient_checkpointing (bool): recompute the co-attention modules' activations (and
        those of the encoders that support it) in the backward pass instead of keeping
        them, so that long windows or large batches fit in memory at the cost of a
        second forward pass. Default false.
    window_getter (Optional[WindowSettings]): how docs are cut into windows that fit both
        encoders (``spacy-entangle.windows.v2`` in new configs); null (default): the
        defaults of ``spacy-entangle.windows.v1``, what pipelines saved without it were
        made with. The key keeps its name so that saved configs load.
    max_batch_chars (int): the most padded characters run through the encoders at once:
        the windows of a batch's docs are sorted by length and run in chunks of at most
        this many, so one long doc neither dominates a batch nor pads the short ones to
        its length; it bounds memory, not what is computed. 16384 by default, a positive
        integer.

    dropout, backbone_lr_scale, mixed_precision, gradient_checkpointing and max_batch_chars
    shape no weight: a saved pipeline takes them from the config it is loaded with, the
    other settings from the saved model.
    """
    return EntangleModel(EntangleSettings.pick(locals()), window_getter)


@registry.architectures("spacy-entangle.EntangleListener.v1")
def EntangleListener_v1(
    upstream: str = "*",
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
) -> Model[List[Doc], List[Floats2d]]:
    """One vector per token from the upstream `entangle` component, for any spaCy
    component that takes a tok2vec layer (ner, tagger, ...). As EntangleListener.v2 with
    combine = "concat" (side = "both": subword ‖ char, 2 x width); saved configs name v1.
    Returns a model from docs to one (n_tokens, width) array per doc.

    upstream (str): the `entangle` component to read: its name, or "*" (default) for the
        one `entangle` component before this one in the pipeline ("*" with several before
        it is an error: which one it reads would be a guess). Either way the upstream
        component must come before the listening one.
    side (str): which states a token reads: "subword" (default; its pieces), "char" (its
        characters) or "both" (the two vectors joined as ``combine`` says).
    pooling (Optional[Model[Ragged, Floats2d]]): how a token's rows on a side (its pieces,
        its characters) become one vector; null (default): reduce_first, the first piece
        / first character, as in the paper (e.g. ``reduce_mean.v1`` averages them). With
        reduce_first a prediction need keep only each token's first row of the states.
    grad_factor (float): the factor on the gradients this listener sends back to the
        upstream encoder; 1.0 (default) passes them as they are, 0 sends none from this
        component. 0 is not freezing: the `entangle` component's ``frozen`` is.
    """
    return EntangleListener_v2(upstream, side, pooling, grad_factor, "concat")


@registry.architectures("spacy-entangle.EntangleListener.v2")
def EntangleListener_v2(
    upstream: str = "*",
    side: Side = "subword",
    pooling: Optional[Model[Ragged, Floats2d]] = None,
    grad_factor: float = 1.0,
    combine: Combine = "concat",
) -> Model[List[Doc], List[Floats2d]]:
    """One vector per token from the upstream `entangle` component, for any spaCy
    component that takes a tok2vec layer (ner, tagger, ...): EntangleListener.v1 plus
    ``combine``, how side = "both" joins the two sides. Returns a model from docs to one
    (n_tokens, width) array per doc (2 x width for side = "both" with "concat").

    upstream (str): the `entangle` component to read: its name, or "*" (default) for the
        one `entangle` component before this one in the pipeline ("*" with several before
        it is an error: which one it reads would be a guess). Either way the upstream
        component must come before the listening one.
    side (str): which states a token reads: "subword" (default; its pieces), "char" (its
        characters) or "both" (the two vectors joined as ``combine`` says).
    pooling (Optional[Model[Ragged, Floats2d]]): how a token's rows on a side (its pieces,
        its characters) become one vector; null (default): reduce_first, the first piece
        / first character, as in the paper (e.g. ``reduce_mean.v1`` averages them). With
        reduce_first a prediction need keep only each token's first row of the states.
    grad_factor (float): the factor on the gradients this listener sends back to the
        upstream encoder; 1.0 (default) passes them as they are, 0 sends none from this
        component. 0 is not freezing: the `entangle` component's ``frozen`` is.
    combine (str): how side = "both" joins a token's subword and char vectors: "concat"
        (default: subword ‖ char, 2 x width) or "gate" (a learned per-dimension mix of the
        two, width wide, layers/side_gate.py: a token whose spelling is attacked can lean
        on the side that still reads it). "gate" needs side = "both".
    """
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


# the parameters both EntangleTok2Vec versions share, documented once (v2 adds combine)
_TOK2VEC_PARAMETERS = """
    char_backbone (str): as EntangleModel.v1's: the character encoder, a hub name or a
        local directory.
    subword_backbone (str): as EntangleModel.v1's: the subword encoder and its tokenizer.
    side (str): as EntangleListener's: "subword" (default), "char" or "both".
    pooling (Optional[Model[Ragged, Floats2d]]): as EntangleListener's: how a token's rows
        become one vector; null (default): reduce_first.
    grad_factor (float): as EntangleListener's: the factor on the gradients that reach the
        encoder through this pooling; 1.0 by default.
    n_coattention (int): as EntangleModel.v1's: co-attention modules per side, 2 by
        default, 0 or more.
    hidden_width (Optional[int]): as EntangleModel.v1's: the co-attention width; null
        (default): the subword encoder's.
    n_heads (Optional[int]): as EntangleModel.v1's: attention heads; null (default): the
        subword encoder's head count.
    ffn_width (Optional[int]): as EntangleModel.v1's: the feed-forward width; null
        (default): 4 x hidden_width.
    dropout (float): as EntangleModel.v1's: the co-attention dropout, in [0, 1); 0.1.
    backbone_lr_scale (float): as EntangleModel.v1's: the pretrained encoders'
        learning-rate factor; 1.0.
    mixed_precision (bool): as EntangleModel.v1's: fp16 training on a CUDA GPU; false.
    gradient_checkpointing (bool): as EntangleModel.v1's: recompute activations in the
        backward pass to save memory; false.
    window_getter (Optional[WindowSettings]): as EntangleModel.v1's: the windows; null
        (default): windows.v1's defaults.
    max_batch_chars (int): as EntangleModel.v1's: the most padded characters run at once;
        16384.
"""


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
    """A standalone entangle encoder followed by a listener's pooling, for a component
    that owns its encoder instead of sharing an `entangle` component: what
    ``nlp.replace_listeners`` puts in place of an EntangleListener.v1. As
    EntangleTok2Vec.v2 with combine = "concat". Returns a model from docs to one
    (n_tokens, width) array per doc.
    """
    return EntangleTok2Vec_v2(**locals(), combine="concat")


EntangleTok2Vec_v1.__doc__ = f"{EntangleTok2Vec_v1.__doc__}{_TOK2VEC_PARAMETERS}"


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
    """A standalone entangle encoder followed by a listener's pooling, for a component
    that owns its encoder instead of sharing an `entangle` component: what
    ``nlp.replace_listeners`` puts in place of an EntangleListener.v2. EntangleTok2Vec.v1
    plus the listener's ``combine``. Returns a model from docs to one (n_tokens, width)
    array per doc.

    combine (str): as EntangleListener.v2's: how side = "both" joins the two sides,
        "concat" (default) or "gate" (which needs side = "both").
    """
    gate = _combine(side, combine)
    model = EntangleModel(EntangleSettings.pick(locals()), window_getter)
    set_sides(model, side_names(side))
    return chain(model, entangle_pool(side, pooling or reduce_first(), grad_factor), *gate)


EntangleTok2Vec_v2.__doc__ = f"{EntangleTok2Vec_v2.__doc__}{_TOK2VEC_PARAMETERS}"


@registry.architectures("spacy-entangle.TextCatCls.v1")
def TextCatCls_v1(
    upstream: str = "*",
    side: Literal["subword", "char"] = "subword",
    exclusive_classes: bool = True,
    nO: Optional[int] = None,
    dropout: float = 0.1,
) -> Model[List[Doc], Floats2d]:
    """The paper's classification head for textcat / textcat_multilabel: the first state
    of ``side`` -> dropout -> Linear -> tanh -> dropout -> Linear, then a softmax or a
    sigmoid, in the order of RoBERTa's classification head. Returns a model from docs to
    one row of label scores per doc.

    upstream (str): as EntangleListener's: the `entangle` component to read, by name, or
        "*" (default) for the one before this component.
    side (str): whose first state classifies the doc: "subword" (default; the [CLS] of
        the doc's first window) or "char" (the character encoder's [CLS]); "both" is
        refused (it has no single first state). An empty doc reads a zero row.
    exclusive_classes (bool): true (default): one label per doc, a softmax over the
        labels (textcat); false: each label scored on its own by a sigmoid
        (textcat_multilabel).
    nO (Optional[int]): the number of labels; null (default): set from the component's
        labels when it is initialized. The hidden layer is as wide as the encoder.
    dropout (float): the rate of the two Dropout layers until something sets it, in
        [0, 1); 0.1 by default. spaCy's convention applies: a component's update sets
        every layer's rate to the training dropout (``[training] dropout``,
        ``nlp.update(drop=...)``), so that is the rate used in training; prediction never
        drops anything.
    """
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
    """Character-level labelling for the `char_tagger` component: one row per character
    of doc.text from the upstream `entangle` component, then a softmax over the labels.
    Returns a model from docs to one (len(doc.text), nO) array per doc.

    upstream (str): as EntangleListener's: the `entangle` component to read, by name, or
        "*" (default) for the one before this component.
    side (str): which row each character reads (tokenization/text_rows.py): "char"
        (default; its own character state), "subword" (its token's first piece: token
        level, for ablations) or "both" (the two rows concatenated, subword ‖ char).
    nO (Optional[int]): the number of labels; null (default): set from the component's
        labels when it is initialized.
    """
    states = entangle_char_states(upstream, side)
    output = Softmax(nO=nO)
    model = chain(states, with_array(output))
    model.set_ref("listener", states.get_ref("listener"))
    model.set_ref("output_layer", output)
    return model
