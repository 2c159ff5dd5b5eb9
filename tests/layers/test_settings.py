"""EntangleSettings (layers/settings.py): bad sizes refused when the model is built, old cfgs read."""

import pytest
import spacy
from _pipelines import entangle_cfg


@pytest.mark.issue(12)
def test_settings_read_a_cfg_saved_before_they_existed():
    """The shim's cfg of pipelines saved before EntangleSettings (a plain dict, with the
    `max_chars`/`max_pieces` keys nothing read) still builds the same settings."""
    import dataclasses

    from spacy_entangle.layers.settings import EntangleSettings

    old = {
        "char_backbone": "c",
        "subword_backbone": "s",
        "n_coattention": 1,
        "hidden_width": 32,
        "n_heads": 2,
        "ffn_width": None,
        "dropout": 0.2,
        "backbone_lr_scale": 0.5,
        "gradient_checkpointing": False,
        "max_chars": 2048,
        "max_pieces": 512,
    }
    settings = EntangleSettings.from_cfg(old)
    assert (settings.n_coattention, settings.hidden_width, settings.dropout, settings.backbone_lr_scale) == (
        1,
        32,
        0.2,
        0.5,
    )
    assert settings.max_batch_chars == 16384 and settings.mixed_precision is False  # defaults
    assert EntangleSettings.from_cfg(settings.to_cfg()) == settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.dropout = 0.3  # type: ignore[misc]
    with pytest.raises(ValueError, match="not divisible by n_heads"):
        EntangleSettings.from_cfg(dict(old, n_heads=5))


@pytest.mark.issue(12)
@pytest.mark.parametrize(
    "key,value",
    [
        ("hidden_width", 0),
        ("hidden_width", -8),
        ("n_heads", 0),
        ("ffn_width", 0),
        ("max_batch_chars", 0),
        ("n_coattention", -1),
        ("dropout", 1.0),
        ("dropout", -0.1),
        ("backbone_lr_scale", -1.0),
    ],
)
def test_bad_model_settings_fail_at_add_pipe(canine_dir, bert_dir, key, value):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=key):
        nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir, **{key: value})})
