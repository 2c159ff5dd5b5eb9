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


@pytest.mark.parametrize("value,on", [("1", True), ("ON", True), ("yes", True), ("True", True), ("0", False),
                                      ("off", False), ("", False), ("false", False)])
def test_offline_flag_is_read_as_huggingface_hub_reads_it(monkeypatch, value, on):
    """HF_HUB_OFFLINE=0 is OFF (the error message said "offline mode is set" for it)."""
    from spacy_entangle.modeling.backbones import _env_true

    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert _env_true("HF_HUB_OFFLINE") is on
