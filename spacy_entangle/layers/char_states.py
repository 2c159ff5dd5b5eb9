"""Per-character states for character-level labelling (``char_tagger``): ONE ROW
PER CHARACTER of ``doc.text``, read through an ordinary :class:`EntangleListener`.

Which row each character reads is an alignment rule: ``text_rows`` in
``spacy_entangle.tokenization.text_rows`` (the rules are written out there).

Gradients go back by scatter-add onto the rows (a row read by several characters
sums their gradients).
"""

from typing import Any, List, Optional, Sequence, Tuple, cast

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ints1d

from ..data import Side, side_names
from ..tokenization.text_rows import text_rows
from .contract import get_sides
from .gradients import rows_gradient
from .listener import EntangleListener


def entangle_char_states(upstream: str = "*", side: Side = "char") -> Model[List[Doc], List[Floats2d]]:
    """(len(doc.text), width) per doc from the upstream `entangle` component;
    side = "char" | "subword" | "both" (subword row ‖ char row)."""
    sides = side_names(side)
    listener = EntangleListener(upstream, sides)
    model: Model[List[Doc], List[Floats2d]] = Model(
        "entangle-char-states",
        forward,
        init=init,
        layers=[listener],
        attrs={"sides": sides},
        dims={"nO": None},
    )
    model.set_ref("listener", listener)
    return model


def init(model: Model, X: Optional[List[Doc]] = None, Y: Any = None) -> None:
    listener = model.layers[0]
    listener.initialize(X=X)
    if listener.has_dim("nO"):
        model.set_dim("nO", listener.get_dim("nO") * len(get_sides(model)), force=True)


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Any]:
    ops = model.ops
    sides: Sequence[str] = get_sides(model)
    datas, bp_listener = model.layers[0](docs, is_train)
    outputs: List[Floats2d] = []
    saved = []
    for doc, data in zip(docs, datas):
        parts, per_side = [], []
        for side in sides:
            X = data.side(side)
            rows = ops.asarray1i(cast(Ints1d, text_rows(doc, data.align, side).astype("int32")))
            parts.append(X[rows] if len(rows) else ops.alloc2f(0, X.shape[1]))
            per_side.append((side, X.shape, rows))
        Y = parts[0] if len(parts) == 1 else ops.xp.hstack(parts)
        outputs.append(Y)
        saved.append((data.align, per_side))

    def backprop(dYs: List[Floats2d]) -> Any:
        grads = []
        for dY, (align, per_side) in zip(dYs, saved):
            parts, col = [], 0
            for side, shape, rows in per_side:
                parts.append((side, shape, rows, dY[:, col : col + shape[1]]))
                col += shape[1]
            grads.append(rows_gradient(ops, align, parts))
        return bp_listener(grads)

    return outputs, backprop
