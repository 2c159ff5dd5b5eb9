"""The char-encoder design registry (modeling/char_designs.py): a design registered by a
user, with no library file touched, is picked up by `pretrain-chars --design`, its
pretrainer and stages, the model card, the saved config and int8 prediction."""

import catalogue
import pytest
import srsly
import torch
from transformers import AutoModel

from spacy_entangle.backbone_dirs import sample_lines
from spacy_entangle.modeling.char_designs import GROWN_MODEL_TYPE, CharDesign, design_of, designs, register_design
from spacy_entangle.modeling.entangle import EntangleEncoder
from spacy_entangle.modeling.grown import GrownCharModel, grow_char_encoder
from spacy_entangle.modeling.inference import float_prefixes
from spacy_entangle.pretraining import PretrainSettings, pretrain_chars
from spacy_entangle.pretraining.grow import GrownPretrainer


class ToyPretrainer(GrownPretrainer):
    """The word design's stage B, counting its steps."""

    steps = 0

    def text_step(self, *args, **kwargs):
        ToyPretrainer.steps += 1
        return super().text_step(*args, **kwargs)


def grow_toy(subword, *, k, char_width, seed):
    return grow_char_encoder(subword, k=k, char_width=char_width, char_heads=1, char_layers=0, seed=seed)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "sample.txt"
    path.write_text("\n".join(sample_lines()) + "\n", encoding="utf8")
    return path


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(catalogue, "REGISTRY", dict(catalogue.REGISTRY))  # forgotten after the test
    return register_design(
        CharDesign(
            name="toy",
            model_type=GROWN_MODEL_TYPE,
            grow=grow_toy,
            pretrainer=ToyPretrainer,
            stage_a=False,
            card_title="A toy char encoder",
            card_tags=("toy-design",),
            int8_keep_float=("words", "to_word"),
            objective="a toy ",
        )
    )


def test_builtin_designs_are_registered():
    assert list(designs())[:2] == ["word", "canine"]


def test_a_registered_design_runs_through_pretraining_card_and_int8(toy, text_file, bert_dir, tmp_path):
    out = tmp_path / "toy"
    settings = PretrainSettings(
        max_steps=3,
        batch_size=8,
        warmup_steps=0,
        checkpoint_every=100,
        init_from=str(bert_dir),
        grow_design="toy",
        char_width=16,
        dev_fraction=0.05,
    )
    ToyPretrainer.steps = 0
    entry = pretrain_chars([text_file], out, settings, progress=False)
    assert ToyPretrainer.steps == 3 and "type_loss" not in entry  # its pretrainer; no stage A
    model = AutoModel.from_pretrained(out)
    assert isinstance(model, GrownCharModel) and model.config.grown_design == "toy"
    assert design_of(model.config) is toy
    assert "a toy grown from" in model.config.spacy_entangle_pretraining["objectives"][0]
    card = (out / "README.md").read_text(encoding="utf8")
    assert "# A toy char encoder" in card
    assert "toy-design" in srsly.yaml_loads(card.split("---")[1])["tags"]
    encoder = EntangleEncoder(model, AutoModel.from_pretrained(bert_dir), n_coattention=1, width=32, n_heads=2)
    assert float_prefixes(encoder) == ("subword_encoder.", "char_encoder.words.", "char_encoder.to_word.")
    # a resume finds the design again from the saved encoder
    settings.max_steps = 4
    pretrain_chars([text_file], out, settings, resume=True, progress=False)
    assert ToyPretrainer.steps == 4
    # another design refuses the checkpoint, by name
    settings.grow_design = "word"
    settings.stage_a_steps = None
    with pytest.raises(ValueError, match=r"--design differs from the checkpoint's \(toy\)"):
        pretrain_chars([text_file], out, settings, resume=True, progress=False)
    assert torch.isfinite(model(input_ids=torch.tensor([[0xE000, 104, 0xE001]])).last_hidden_state).all()


def test_an_unknown_design_is_a_clear_error():
    with pytest.raises(ValueError, match="--design must be one of word, canine"):
        PretrainSettings(max_steps=2, init_from="x", grow_design="molecules").check()
