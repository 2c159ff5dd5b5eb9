"""What the `entangle` component, its model and its listeners tell each other through
thinc's ``model.attrs``, in one place.

thinc carries per-layer settings in ``model.attrs`` (serialised with the model, copied with
it), so the plugin's layers agree through three keys; these accessors are the only code that
reads or writes them:

- ``sides`` (tuple of "subword" / "char", in ``data.SIDES`` order), on a listener, on the
  layers after it that read its output (pooling, char states) and on the entangle model:
  on a listener the sides it reads; on the model the sides a forward computes, which the
  component sets to the union of its listeners' (a side no one reads skips its last module).
- ``rows`` ("all" | "tokens" | "first"), on a listener: the rows of its doc's states its
  pooling reads (each token's first row, every row of its tokens, or all rows: a first
  state, every character).
- ``keep_rows`` ("all" | "tokens" | "first"), on the entangle model: which rows a prediction
  keeps, set by the component from its listeners' ``rows`` (``layers.entangle_model``
  gathers only those, so memory is bounded by a chunk, not by a long document).
"""

from typing import Literal, Sequence, Tuple, cast, get_args

from thinc.api import Model

from ..data import SIDES

Rows = Literal["all", "tokens", "first"]
ROWS: Tuple[str, ...] = get_args(Rows)


def _checked_sides(sides: Sequence[str]) -> Tuple[str, ...]:
    unknown = [side for side in sides if side not in SIDES]
    if unknown or not sides:
        raise ValueError(f"sides must be a non-empty subset of {SIDES}, got {tuple(sides)!r}")
    return tuple(sides)


def _checked_rows(key: str, rows: str) -> Rows:
    if rows not in ROWS:
        raise ValueError(f"{key} must be one of {', '.join(map(repr, ROWS))}, got {rows!r}")
    return cast(Rows, rows)


def get_sides(model: Model, default: Tuple[str, ...] = SIDES) -> Tuple[str, ...]:
    """The sides ``model`` reads (a listener and the layers after it) or computes (the model)."""
    return tuple(model.attrs.get("sides", default))


def set_sides(model: Model, sides: Sequence[str]) -> None:
    model.attrs["sides"] = _checked_sides(sides)


def get_rows(listener: Model) -> Rows:
    """The rows a listener's pooling reads ("all" when it never said)."""
    return _checked_rows("rows", listener.attrs.get("rows", "all"))


def set_rows(listener: Model, rows: str) -> None:
    listener.attrs["rows"] = _checked_rows("rows", rows)


def get_keep_rows(model: Model) -> Rows:
    """The rows a prediction of the entangle model keeps ("all" when unset)."""
    return _checked_rows("keep_rows", model.attrs.get("keep_rows", "all"))


def set_keep_rows(model: Model, rows: str) -> None:
    model.attrs["keep_rows"] = _checked_rows("keep_rows", rows)
