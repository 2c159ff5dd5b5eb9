"""Token pooling (layers/pooling.py over data.pool_token_rows): forward and backward by hand,
and data.py staying below layers/ (it imports nothing from layers/ or pipeline/)."""

import ast
from pathlib import Path

import numpy
import pytest
from thinc.api import NumpyOps, reduce_first, reduce_mean

import spacy_entangle.data
from spacy_entangle.data import EntangleData
from spacy_entangle.layers import entangle_pool
from spacy_entangle.tokenization.alignment import DocAlignment


def _data(n_sub: int, n_char: int, sub: list, char: list, seed: int) -> EntangleData:
    """sub / char: per token, the rows it reads on that side."""
    rng = numpy.random.default_rng(seed)

    def flat(rows: list):
        return numpy.asarray([len(r) for r in rows], "int32"), numpy.asarray([i for r in rows for i in r], "int32")

    (sl, sr), (cl, cr) = flat(sub), flat(char)
    align = DocAlignment(n_sub, n_char, sl, sr, cl, cr, [(0, 0)])
    return EntangleData(rng.normal(size=(n_sub, 3)).astype("f"), rng.normal(size=(n_char, 2)).astype("f"), align)


def test_mean_pooling_both_sides_forward_and_backward_by_hand():
    datas = [
        _data(4, 5, [[1], [2, 3]], [[1, 2], [3, 3, 4]], seed=0),  # a row read twice sums its gradients
        _data(2, 2, [], [], seed=1),  # a doc without tokens
        _data(3, 3, [[1, 2]], [[2]], seed=2),
    ]
    model = entangle_pool("both", reduce_mean(), grad_factor=0.5)
    model.ops = NumpyOps()
    Ys, backprop = model.begin_update(datas)
    assert [Y.shape for Y in Ys] == [(2, 5), (0, 5), (1, 5)]
    for data, Y in zip(datas, Ys):
        a = data.align
        starts = {
            side: numpy.cumsum(getattr(a, f"{side}_lengths")) - getattr(a, f"{side}_lengths")
            for side in ("subword", "char")
        }
        for t in range(len(Y)):
            expected = [
                getattr(data, side)[getattr(a, f"{side}_rows")[s : s + n]].mean(axis=0)
                for side in ("subword", "char")
                for s, n in [(starts[side][t], getattr(a, f"{side}_lengths")[t])]
            ]
            numpy.testing.assert_allclose(Y[t], numpy.concatenate(expected), rtol=1e-6)
    grads = backprop([numpy.ones_like(Y) for Y in Ys])
    first = grads[0]
    # subword: token 0 reads row 1 (1 row), token 1 rows 2, 3 (mean: 1/2 each); x grad_factor 0.5
    numpy.testing.assert_allclose(first.subword[:, 0], [0, 0.5, 0.25, 0.25])
    # char: token 0 rows 1, 2 (1/2 each), token 1 rows 3, 3, 4 (1/3 each, row 3 twice)
    numpy.testing.assert_allclose(first.char[:, 0], [0, 0.25, 0.25, 1 / 3, 1 / 6], rtol=1e-6)
    assert grads[1].subword.shape == (2, 3) and not grads[1].subword.any()


@pytest.mark.parametrize("reduce", [reduce_mean, reduce_first])
@pytest.mark.parametrize("block", [1, 2, 3, 100])
def test_a_prediction_pools_in_blocks_of_tokens_the_vectors_of_one_call(reduce, block):
    """Prediction pools a long doc block by block into one array (data.POOL_BLOCK): the same
    vectors as training's one call per side, whatever the block and where docs end in it."""
    datas = [
        _data(4, 5, [[1], [2, 3], [0]], [[1, 2], [3, 3, 4], [0]], seed=0),
        _data(2, 2, [], [], seed=1),
        _data(3, 3, [[1, 2], [2]], [[2], [0, 1]], seed=2),
    ]
    ops = NumpyOps()
    layer = reduce()
    whole = spacy_entangle.data.pool_token_rows(ops, datas, ("subword", "char"), lambda _, r: layer.predict(r))
    blocks = spacy_entangle.data.pool_token_rows(ops, datas, ("subword", "char"), lambda _, r: layer.predict(r), block)
    assert [b.shape for b in blocks] == [(3, 5), (0, 5), (2, 5)]
    for a, b in zip(whole, blocks):
        numpy.testing.assert_array_equal(a, b)
    model = entangle_pool("both", reduce())
    model.ops = ops
    for a, b in zip(whole, model.predict(datas)):
        numpy.testing.assert_array_equal(a, b)


def test_data_imports_nothing_from_layers_or_pipeline():
    """data.py is what layers/ and pipeline/ are built on: an import the other way (even one
    inside a function) makes a cycle."""
    tree = ast.parse(Path(spacy_entangle.data.__file__).read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {m for m in imported if m.split(".")[0] in ("layers", "pipeline") or ".layers" in m or ".pipeline" in m}
