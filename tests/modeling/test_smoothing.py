"""Activation smoothing before dynamic int8 (modeling/smoothing.py): the smoothed copy computes
the same states in float and leaves the encoder as it was; alpha 0.5 gives each product's
input channels the ranges of its weight's columns; smoothing shrinks dynamic int8's error on
an input with an outlier channel; bad input is a clear error."""

import pytest
import torch
from torch import nn
from transformers import AutoModel

from spacy_entangle.modeling.smoothing import SMOOTHED, SmoothedLinear, input_ranges, smooth_encoder, smoothable


def _batch(encoder, lengths=(9, 3, 14)):
    gen = torch.Generator().manual_seed(0)
    pad = int(encoder.config.pad_token_id or 0)
    ids = torch.full((len(lengths), max(lengths)), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(pad + 1, encoder.config.vocab_size, (n,), generator=gen)
        mask[row, :n] = 1
    return ids, mask


def _product(layer, path):
    for name in path.split("."):
        layer = getattr(layer, name)
    return layer


@pytest.mark.parametrize("kind", ["bert_dir", "roberta_dir"])
def test_the_smoothed_copy_computes_the_same_states_and_leaves_the_encoder_as_it_was(kind, request):
    encoder = AutoModel.from_pretrained(request.getfixturevalue(kind)).eval()
    before = {name: p.detach().clone() for name, p in encoder.named_parameters()}
    ids, mask = _batch(encoder)
    assert smoothable(encoder)
    smoothed = smooth_encoder(encoder, ids, mask, alpha=0.5)
    real = mask.bool()
    other_ids, other_mask = _batch(encoder, (5, 11))
    with torch.inference_mode():
        for i, m in ((ids, mask), (other_ids, other_mask)):
            expected = encoder(input_ids=i, attention_mask=m).last_hidden_state
            got = smoothed(input_ids=i, attention_mask=m).last_hidden_state
            assert torch.allclose(got[m.bool()], expected[m.bool()], atol=1e-4)
    assert real.any()
    for name, p in encoder.named_parameters():
        assert torch.equal(p, before[name]), name
    for layer, copied in zip(encoder.encoder.layer, smoothed.encoder.layer):
        for path in SMOOTHED:
            assert type(_product(layer, path)) is nn.Linear
            assert isinstance(_product(copied, path), SmoothedLinear)
        # the rest is shared, not copied
        assert copied.attention.self.query.weight is layer.attention.self.query.weight
    assert smoothed.embeddings.word_embeddings.weight is encoder.embeddings.word_embeddings.weight


def test_alpha_one_half_gives_each_input_channel_its_weight_columns_range(bert_dir):
    """SmoothQuant's balance: max|x_j / s_j| = max|W_j * s_j| = sqrt(max|x_j| max|W_j|)."""
    encoder = AutoModel.from_pretrained(bert_dir).eval()
    ids, mask = _batch(encoder)
    ranges = input_ranges(encoder, ids, mask)
    smoothed = smooth_encoder(encoder, ids, mask, alpha=0.5)
    inner = {}
    hooks = [
        _product(layer, path).linear.register_forward_hook(
            lambda m, args, out, key=f"{i}.{path}": inner.__setitem__(key, args[0][mask.bool()].abs().amax(0))
        )
        for i, layer in enumerate(smoothed.encoder.layer)
        for path in SMOOTHED
    ]
    with torch.inference_mode():
        smoothed(input_ids=ids, attention_mask=mask)
    for hook in hooks:
        hook.remove()
    assert set(inner) == set(ranges) == {f"{i}.{p}" for i in range(len(encoder.encoder.layer)) for p in SMOOTHED}
    for i, layer in enumerate(smoothed.encoder.layer):
        for path in SMOOTHED:
            key = f"{i}.{path}"
            weight = _product(layer, path).linear.weight.abs().amax(0)
            original = _product(encoder.encoder.layer[i], path).weight.abs().amax(0)
            assert torch.allclose(inner[key], weight, rtol=1e-3, atol=1e-6), key
            assert torch.allclose(weight, (ranges[key] * original).sqrt(), rtol=1e-3, atol=1e-6), key


def test_smoothing_shrinks_dynamic_int8_error_on_an_outlier_channel():
    """Why it is there: one wide input channel costs the others their int8 levels."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization import per_channel_dynamic_qconfig

    gen = torch.Generator().manual_seed(0)
    linear = nn.Linear(64, 32)
    x = torch.randn(200, 64, generator=gen)
    x[:, 5] *= 60.0  # an outlier channel, as after a feed-forward's GELU
    scale = x.abs().amax(0).sqrt() / linear.weight.detach().abs().amax(0).sqrt()
    smoothed = SmoothedLinear(linear, scale)

    def int8_error(module: nn.Linear, inputs: torch.Tensor) -> float:
        module.qconfig = per_channel_dynamic_qconfig
        quantized = DynamicLinear.from_float(module)
        with torch.inference_mode():
            return float((quantized(inputs) - linear(x)).abs().mean())

    with torch.inference_mode():
        assert torch.allclose(smoothed(x), linear(x), atol=1e-4)
    plain = int8_error(linear, x)
    assert int8_error(smoothed.linear, x * smoothed.inverse) < plain / 2


def test_bad_alpha_and_an_encoder_of_another_layout_are_clear_errors(bert_dir):
    encoder = AutoModel.from_pretrained(bert_dir).eval()
    ids, mask = _batch(encoder)
    with pytest.raises(ValueError, match="alpha"):
        smooth_encoder(encoder, ids, mask, alpha=1.5)
    other = nn.Sequential(nn.Linear(4, 4))
    assert not smoothable(other)
    with pytest.raises(ValueError, match="BERT-style"):
        smooth_encoder(other, ids, mask)
