"""layers/contract.py: the attrs keys the component, its model and its listeners share are
written and read through one accessor, which refuses values no reader understands."""

import pytest
from thinc.api import Model

from spacy_entangle.layers.contract import get_keep_rows, get_rows, get_sides, set_keep_rows, set_rows, set_sides


def _model() -> Model:
    return Model("probe", lambda model, X, is_train: (X, lambda dY: dY))


def test_values_round_trip_and_unset_keys_read_their_defaults():
    model = _model()
    assert get_sides(model) == ("subword", "char")
    assert get_rows(model) == "all" and get_keep_rows(model) == "all"
    set_sides(model, ["char"])
    set_rows(model, "first")
    set_keep_rows(model, "tokens")
    assert get_sides(model) == ("char",) and get_rows(model) == "first" and get_keep_rows(model) == "tokens"
    assert model.attrs["sides"] == ("char",)  # a tuple: the attrs serialise with the model


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda m: set_sides(m, ["subword", "chars"]), "sides must be"),
        (lambda m: set_sides(m, []), "sides must be"),
        (lambda m: set_rows(m, "last"), "rows must be one of"),
        (lambda m: set_keep_rows(m, "some"), "keep_rows must be one of"),
    ],
)
def test_unknown_values_are_a_clear_error(write, message):
    with pytest.raises(ValueError, match=message):
        write(_model())


def test_a_value_written_around_the_accessor_is_caught_when_read():
    model = _model()
    model.attrs["keep_rows"] = "everything"
    with pytest.raises(ValueError, match="keep_rows must be one of 'all', 'tokens', 'first'"):
        get_keep_rows(model)
