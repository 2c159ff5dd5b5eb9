"""Per-character states for character-level labelling (``char_tagger``): ONE ROW
PER CHARACTER of ``doc.text``, read through an ordinary :class:`EntangleListener`.

Characters are Unicode codepoints, indexed like Python strings and ``token.idx``
(an emoji outside the BMP is one character; a ZWJ sequence is several). Since
``doc.text`` is the concatenation of ``token.text_with_ws``, every character is
either inside a token or the single trailing space of one. Which row a character
reads (``text_rows``):

char side
  1. a character of token t reads its own row in t's home window (the rows of
     ``align.char_rows``: the window's codepoints, in order, so character i of the
     token is row ``first + i``);
  2. the space after token t reads the next row of the same window when that
     window contains it (the window's text is contiguous: row r + 1 is the
     character after row r, up to the window's [SEP]);
  3. anything else (the tail of a token clipped by a window that is too short,
     a trailing space past its window's end) reads the row of the nearest
     preceding character that has one; a character with none before it reads its
     token's first row.
  Rule 1 and 2 are exact: the row holds the state of that very codepoint.
subword side
  every character reads its token's first piece (the space after a token: that
  token's). This is token-level: it cannot tell the pieces of a word apart, and is
  there for ablations and for side = "both" (char row ‖ subword row).

Gradients go back by scatter-add onto the rows (a row read by several characters
sums their gradients).
"""
from typing import Any, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d

from ..data import EntangleData, side_names
from ..tokenization.text_rows import text_rows
from .listener import EntangleListener


def entangle_char_states(upstream: str = "*", side: str = "char") -> Model[List[Doc], List[Floats2d]]:
    """(len(doc.text), width) per doc from the upstream `entangle` component;
    side = "char" | "subword" | "both" (char row ‖ subword row)."""
    sides = side_names(side)
    listener = EntangleListener(upstream, sides)
    model = Model(
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
        model.set_dim("nO", listener.get_dim("nO") * len(model.attrs["sides"]), force=True)


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Any]:
    ops = model.ops
    sides: Sequence[str] = model.attrs["sides"]
    datas, bp_listener = model.layers[0](docs, is_train)
    outputs: List[Floats2d] = []
    saved = []
    for doc, data in zip(docs, datas):
        parts, per_side = [], []
        for side in sides:
            X = data.side(side)
            rows = ops.asarray1i(text_rows(doc, data.align, side).astype("int32"))
            parts.append(X[rows] if len(rows) else ops.alloc2f(0, X.shape[1]))
            per_side.append((side, X.shape, rows))
        Y = parts[0] if len(parts) == 1 else ops.xp.hstack(parts)
        outputs.append(Y)
        saved.append((data.align, per_side))

    def backprop(dYs: List[Floats2d]) -> Any:
        grads = []
        for dY, (align, per_side) in zip(dYs, saved):
            g = EntangleData(subword=None, char=None, align=align)
            col = 0
            for side, shape, rows in per_side:
                dX = ops.alloc2f(*shape)
                if len(rows):
                    ops.scatter_add(dX, rows, ops.xp.ascontiguousarray(dY[:, col : col + shape[1]]))
                col += shape[1]
                setattr(g, side, dX)
            grads.append(g)
        return bp_listener(grads)

    return outputs, backprop
