"""The co-attention module's traceable form (modeling/engines/traceable.py), which the ONNX
engine exports instead of the module: the module's own states, with and without the rows a
prediction keeps, padded or not, post- and pre-LN; no form where its attention differs."""

import pytest
import torch
from torch import nn

from spacy_entangle.modeling.coattention import CoAttentionModule
from spacy_entangle.modeling.engines.traceable import traceable


def _inputs(width: int = 32):
    torch.manual_seed(1)
    x, other = torch.randn(3, 7, width), torch.randn(3, 9, width)
    x_pad, other_pad = torch.zeros(3, 7, dtype=torch.bool), torch.zeros(3, 9, dtype=torch.bool)
    x_pad[1, 5:], other_pad[1, 4:] = True, True  # a shorter window on both sides
    x_pad[2, 2:], other_pad[2, 8:] = True, True
    rows = torch.tensor([[0, 2, 3, 6], [0, 1, 4, 0], [1, 0, 0, 0]])
    return x, x_pad, other, other_pad, rows


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_rows", [True, False])
def test_the_traceable_form_gives_the_modules_states(norm_first, with_rows):
    torch.manual_seed(0)
    module = CoAttentionModule(32, 4, 64, dropout=0.1).eval()
    module.self_attention.norm_first = norm_first
    x, x_pad, other, other_pad, rows = _inputs()
    args = (x, x_pad, other, other_pad) + ((rows,) if with_rows else ())
    form = traceable(module)
    assert form is not None
    with torch.no_grad():
        expected, got = module(*args), form(*args)
    assert got.shape == expected.shape == ((3, 4, 32) if with_rows else (3, 7, 32))
    valid = ~x_pad if not with_rows else torch.ones(3, 4, dtype=torch.bool)
    torch.testing.assert_close(got[valid], expected[valid], atol=1e-5, rtol=1e-5)


def test_the_form_shares_the_modules_weights():
    """Made at export time from the weights then: no copy to fall out of step."""
    module = CoAttentionModule(32, 4, 64, dropout=0.0).eval()
    form = traceable(module)
    assert form is not None
    storages = {p.untyped_storage().data_ptr() for p in module.parameters()}
    assert all(p.untyped_storage().data_ptr() in storages for p in form.parameters())
    before = form(*_inputs())
    with torch.no_grad():
        module.cross.attention.in_proj_weight.mul_(2.0)
    assert not torch.equal(before, form(*_inputs()))


def test_no_traceable_form_for_other_modules():
    """An attention with its own key / value widths, or any other module: the engine exports
    the module itself with torch.export."""
    module = CoAttentionModule(32, 4, 64, dropout=0.0)
    module.cross.attention = nn.MultiheadAttention(32, 4, kdim=16, vdim=16, batch_first=True)
    assert traceable(module) is None
    assert traceable(nn.Linear(3, 3)) is None
