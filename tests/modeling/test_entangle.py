"""The pure-PyTorch model: shapes, masks, projections, skipped sides."""

import pytest
import torch
from transformers import AutoModel

from spacy_entangle.modeling import BackboneError, EntangleEncoder, load_encoder, load_tokenizer


@pytest.fixture(scope="module")
def encoders(canine_dir, roberta_dir):
    torch.manual_seed(0)
    return AutoModel.from_pretrained(canine_dir), AutoModel.from_pretrained(roberta_dir)


def _inputs(batch=2, ls=7, lc=32):
    torch.manual_seed(1)
    sub = torch.randint(5, 200, (batch, ls))
    char = torch.randint(65, 5000, (batch, lc))
    return sub, torch.ones_like(sub), char, torch.ones_like(char)


def test_shapes_and_projection(encoders):
    char_enc, sub_enc = encoders
    assert char_enc.config.hidden_size != sub_enc.config.hidden_size
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=2, width=64, n_heads=4, ffn_width=128).eval()
    s, c = model(*_inputs())
    assert s.shape == (2, 7, 64) and c.shape == (2, 32, 64)
    assert isinstance(model.char_proj, torch.nn.Linear) and isinstance(model.sub_proj, torch.nn.Linear)
    assert len(model.sub_layers) == len(model.char_layers) == 2


def test_subword_padding_mask_honoured(encoders):
    char_enc, sub_enc = encoders
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=2, width=48, n_heads=2).eval()
    sub, sub_mask, char, char_mask = _inputs(batch=1, ls=5, lc=32)
    with torch.no_grad():
        alone_s, alone_c = model(sub, sub_mask, char, char_mask)
        pad = torch.full((1, 6), 1)
        sub2 = torch.cat([sub, pad], 1)
        mask2 = torch.cat([sub_mask, torch.zeros_like(pad)], 1)
        padded_s, padded_c = model(sub2, mask2, char, char_mask)
    torch.testing.assert_close(alone_s, padded_s[:, :5], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(alone_c, padded_c, atol=1e-5, rtol=1e-4)


def test_skipping_a_side_gives_the_same_other_side(encoders):
    char_enc, sub_enc = encoders
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=2, width=48, n_heads=2).eval()
    with torch.no_grad():
        s, c = model(*_inputs())
        s_only, none = model(*_inputs(), need_char=False)
        none2, c_only = model(*_inputs(), need_subword=False)
    assert none is None and none2 is None
    torch.testing.assert_close(s, s_only)
    torch.testing.assert_close(c, c_only)


def test_heads_must_divide(encoders):
    char_enc, sub_enc = encoders
    with pytest.raises(ValueError, match="divisible"):
        EntangleEncoder(char_enc, sub_enc, width=50, n_heads=4)


def test_zero_coattention_is_projected_encoders(encoders):
    char_enc, sub_enc = encoders
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=0, width=48, n_heads=2).eval()
    s, c = model(*_inputs())
    assert s.shape[-1] == c.shape[-1] == 48


def test_gradients_reach_both_encoders(encoders):
    char_enc, sub_enc = encoders
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=1, width=48, n_heads=2, checkpointing=True)
    s, c = model(*_inputs())
    (s.sum() + c.sum()).backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.char_encoder.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.subword_encoder.parameters())
    model.zero_grad()


def test_backbone_errors_are_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackboneError, match="not a local directory"):
        load_encoder("no-such-org/no-such-model", role="char")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BackboneError, match="lacks config.json"):
        load_encoder(str(empty), role="subword")
    with pytest.raises(BackboneError, match="tokenizer"):
        load_tokenizer(str(empty))


def test_a_missing_backbone_prints_one_traceback(tmp_path, monkeypatch):
    """The BackboneError alone, not transformers' traceback (and its own cause) before it:
    the message already names the backbone, why, and transformers' error."""
    import traceback

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = str(tmp_path / "nope")
    for load in (lambda: load_encoder(missing, role="subword"), lambda: load_tokenizer(missing)):
        with pytest.raises(BackboneError) as err:
            load()
        printed = "".join(traceback.format_exception(err.value))
        assert printed.count("Traceback (most recent call last)") == 1, printed
        assert "Error" in str(err.value).rsplit("(", 1)[1]  # transformers' error, in the message


@pytest.mark.parametrize(
    "value,on",
    [
        ("1", True),
        ("ON", True),
        ("yes", True),
        ("True", True),
        ("0", False),
        ("off", False),
        ("", False),
        ("false", False),
    ],
)
def test_offline_flag_is_read_as_huggingface_hub_reads_it(monkeypatch, value, on):
    """HF_HUB_OFFLINE=0 is OFF (the error message said "offline mode is set" for it)."""
    from spacy_entangle.modeling.backbones import _env_true

    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert _env_true("HF_HUB_OFFLINE") is on


# -- prediction modes (modeling/inference.py) ---------------------------------------------


@pytest.mark.parametrize(
    "device,training,mixed,mode,expected",
    [
        ("cuda", True, True, "fp32", torch.float16),  # mixed-precision training autocasts
        ("cuda", True, False, "fp32", None),
        ("cpu", True, True, "fp32", None),  # the CPU trains in fp32
        ("cuda", False, True, "fp32", None),  # fp32 prediction is exact, whatever the training
        ("cuda", False, True, "int8", None),
        ("cuda", False, False, "bf16", torch.bfloat16),
        ("cpu", False, True, "bf16", torch.bfloat16),
        ("cpu", False, False, "fp32", None),
    ],
)
def test_autocast_decision(device, training, mixed, mode, expected):
    from spacy_entangle.modeling.inference import autocast_dtype

    assert autocast_dtype(device, training=training, mixed_precision=mixed, mode=mode) is expected


def test_int8_elsewhere_than_the_cpu_predicts_fp32_with_a_warning():
    from spacy_entangle.modeling.inference import inference_on_device

    for device in ("cuda", "mps", "meta"):
        with pytest.warns(UserWarning, match="CPU only.*bf16"):
            assert inference_on_device("int8", device) == "fp32"
    assert inference_on_device("int8", "cpu") == "int8"
    assert inference_on_device("bf16", "cuda") == "bf16"
    with pytest.raises(ValueError, match="inference must be one of"):
        inference_on_device("int4", "cpu")


@pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated")
def test_int8_copy_shares_the_float_tensors(encoders):
    """The quantized copy adds its int8 weights only: every float tensor it keeps is the
    original's, and its outputs equal those of a quantized full deep copy."""
    import copy

    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    from spacy_entangle.modeling.inference import quantize_int8

    char_enc, sub_enc = encoders
    model = EntangleEncoder(char_enc, sub_enc, n_coattention=1, width=48, n_heads=2).eval()
    quantized = quantize_int8(model)
    original = {id(t) for t in list(model.parameters()) + list(model.buffers())}
    kept = list(quantized.parameters()) + list(quantized.buffers())
    assert kept and all(id(t) in original for t in kept)
    assert isinstance(model.char_proj, torch.nn.Linear), "the original stays in float"
    assert type(quantized.char_proj) is not torch.nn.Linear
    assert model.training is False and quantized.training is False
    targets = {n for n, m in model.named_modules() if type(quantized.get_submodule(n)) is not type(m)}
    assert targets
    reference = quantize_dynamic(copy.deepcopy(model), dict.fromkeys(targets, per_channel_dynamic_qconfig))
    with torch.inference_mode():
        for got, want in zip(quantized(*_inputs()), reference(*_inputs())):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_default_heads_that_do_not_divide_the_width_are_refused(encoders):
    """n_heads = None takes the subword encoder's head count (2 here); a width it does not
    divide is refused with the setting to change, never replaced by a guessed count."""
    char_enc, sub_enc = encoders
    with pytest.raises(ValueError, match=r"n_heads is null.*has 2 heads.*set n_heads \(e\.g\. n_heads = 1\)"):
        EntangleEncoder(char_enc, sub_enc, width=45)
    assert EntangleEncoder(char_enc, sub_enc, width=48).sub_layers[0].cross.attention.num_heads == 2
