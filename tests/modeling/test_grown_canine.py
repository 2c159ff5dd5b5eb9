"""Design (a) of the grown char encoder (modeling/grown_canine.py): a plain CANINE
whose deep stack is the subword encoder's first k layers."""

import shutil

import pytest
import torch
from _pipelines import check_char_backbone_pipeline
from transformers import AutoConfig, AutoModel, CanineModel

from spacy_entangle.modeling.backbones import canine_config
from spacy_entangle.modeling.grown_canine import grow_canine
from spacy_entangle.tokenization import CharSpec


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_copied_layers_equal_the_teachers_bit_for_bit(kind, request, tmp_path):
    sub_dir = request.getfixturevalue(f"{kind}_dir")
    teacher = AutoModel.from_pretrained(sub_dir)
    grow_canine(sub_dir, tmp_path, k=1, seed=0)
    for model in (grow_canine(sub_dir, k=1, seed=0), AutoModel.from_pretrained(tmp_path)):
        assert isinstance(model, CanineModel)  # a plain CANINE: transformers alone loads it
        source = teacher.encoder.layer[0].state_dict()
        copied = model.encoder.layer[0].state_dict()
        assert copied.keys() == source.keys() and all(torch.equal(copied[k], source[k]) for k in source)
        assert model.config.hidden_size == teacher.config.hidden_size
        assert model.config.intermediate_size == teacher.config.intermediate_size
        assert model.config.layer_norm_eps == teacher.config.layer_norm_eps
        assert (model.config.grown_from, model.config.copied_layers) == (str(sub_dir), 1)
    # the CANINE char spec applies as it is: the same specials, padding rule and window limit
    spec = CharSpec.from_config(AutoConfig.from_pretrained(tmp_path))
    assert spec == CharSpec.from_config(canine_config(width=model.config.hidden_size, heads=2))


def test_k_is_checked(bert_dir):
    with pytest.raises(ValueError, match="k must be 1..1"):
        grow_canine(bert_dir, k=2)


def test_plugs_into_a_pipeline_and_loads_offline_without_backbones(tmp_path, bert_dir):
    char_dir, sub_dir = tmp_path / "grown-canine", tmp_path / "bert"
    grow_canine(bert_dir, char_dir, k=1, seed=0)
    shutil.copytree(bert_dir, sub_dir)
    check_char_backbone_pipeline(char_dir, sub_dir, tmp_path / "pipeline")


@pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated")
def test_int8_keeps_the_copied_stack_in_float(bert_dir, canine_dir):
    """inference = "int8" leaves design (a)'s copied deep stack in float, as design (b)'s
    copied layers (its registered design says so); CANINE's own layers, and a CANINE that
    was not grown, are quantized."""
    from spacy_entangle.modeling.entangle import EntangleEncoder
    from spacy_entangle.modeling.inference import float_prefixes, quantize_int8

    subword = AutoModel.from_pretrained(bert_dir)
    model = EntangleEncoder(grow_canine(bert_dir, k=1, seed=0), subword, n_coattention=1, width=32, n_heads=2)
    assert float_prefixes(model) == ("subword_encoder.", "char_encoder.encoder.")
    linear = {n: type(m) for n, m in quantize_int8(model.eval()).named_modules() if "Linear" in type(m).__name__}
    copied = [n for n in linear if n.startswith("char_encoder.encoder.")]
    assert copied and all(linear[n] is torch.nn.Linear for n in copied)
    own = [n for n in linear if n.startswith("char_encoder.initial_char_encoder.")]
    assert own and all(linear[n] is not torch.nn.Linear for n in own)
    plain = EntangleEncoder(AutoModel.from_pretrained(canine_dir), subword, n_coattention=1, width=32, n_heads=2)
    assert float_prefixes(plain) == ("subword_encoder.",)
