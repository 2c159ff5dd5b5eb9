"""The entangle model's output at chosen rows (sub_rows / char_rows): what a prediction that
keeps only the listeners' rows asks for. The last module then runs its self-attention
queries and feed-forward on those rows only: the states must be the full ones there."""

import pytest
import torch
from transformers import AutoModel

from spacy_entangle.modeling import EntangleEncoder


@pytest.fixture(scope="module")
def encoders(canine_dir, roberta_dir):
    torch.manual_seed(0)
    return AutoModel.from_pretrained(canine_dir), AutoModel.from_pretrained(roberta_dir)


def _padded_inputs():
    torch.manual_seed(1)
    sub = torch.randint(5, 200, (3, 9))
    char = torch.randint(65, 5000, (3, 40))
    sub_mask, char_mask = torch.ones_like(sub), torch.ones_like(char)
    sub_mask[1, 6:], char_mask[1, 25:] = 0, 0  # a shorter window, padded
    sub_mask[2, 3:], char_mask[2, 10:] = 0, 0
    return sub, sub_mask, char, char_mask


@pytest.mark.parametrize("m", [0, 1, 2])
@pytest.mark.parametrize("need", [(True, True), (True, False), (False, True)])
def test_states_at_rows_equal_the_full_states_there(encoders, m, need):
    char_enc, sub_enc = encoders
    torch.manual_seed(2)
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=m, width=48, n_heads=2, ffn_width=64).eval()
    inputs = _padded_inputs()
    sub_rows = torch.tensor([[0, 1, 4, 8], [2, 5, 0, 0], [1, 0, 0, 0]])  # padded with row 0
    char_rows = torch.tensor([[1, 7, 39, 20, 3], [24, 0, 11, 0, 0], [9, 0, 0, 0, 0]])
    with torch.no_grad():
        full_s, full_c = model(*inputs, need_subword=need[0], need_char=need[1])
        s, c = model(*inputs, need_subword=need[0], need_char=need[1], sub_rows=sub_rows, char_rows=char_rows)
    for full, got, rows in ((full_s, s, sub_rows), (full_c, c, char_rows)):
        if full is None:
            assert got is None
            continue
        expected = full.gather(1, rows[..., None].expand(-1, -1, full.shape[-1]))
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-4)


def test_a_norm_first_layer_at_rows_equals_the_layer(encoders):
    from spacy_entangle.modeling.coattention import self_attention_at

    torch.manual_seed(3)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, 0.0, activation="gelu", batch_first=True, norm_first=True)
    x, pad = torch.randn(2, 11, 32), torch.zeros(2, 11, dtype=torch.bool)
    pad[1, 7:] = True
    rows = torch.tensor([[0, 10, 5], [6, 2, 0]])
    with torch.no_grad():
        full = layer.eval()(x, src_key_padding_mask=pad)
        got = self_attention_at(layer, x, pad, rows)
    torch.testing.assert_close(got, full.gather(1, rows[..., None].expand(-1, -1, 32)), atol=2e-5, rtol=1e-4)
