"""Subword specials (tokenization/subwords.py): the post-processor's, the rule of the first
saves, the record a saved model keeps; tokenizer_config.json that transformers 4 and 5 read."""

import json

import pytest
from transformers import AutoTokenizer

from spacy_entangle.backbone_dirs import make_random_subword
from spacy_entangle.tokenization.subwords import (
    legacy_special_ids,
    make_portable,
    portable_tokenizer_config,
    recorded_special_ids,
    special_ids,
    specials_record,
)


@pytest.fixture(scope="module")
def generic_dir(tmp_path_factory):
    return make_random_subword(
        tmp_path_factory.mktemp("generic"), kind="generic", layers=1, width=32, heads=2, vocab_size=300
    )


def test_a_generic_fast_tokenizer_has_post_processor_specials_but_no_legacy_ones(generic_dir):
    """The case where the two rules disagree: [CLS] x [SEP] from the template, none from
    transformers 4's build_inputs_with_special_tokens (and the same answer under 5.x)."""
    tok = AutoTokenizer.from_pretrained(generic_dir)
    assert type(tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    before, after = special_ids(tok)
    assert tok.convert_ids_to_tokens(list(before + after)) == ["[CLS]", "[SEP]"]
    assert legacy_special_ids(tok) == ((), ())


@pytest.mark.parametrize("name", ["bert_dir", "roberta_dir"])
def test_model_classes_have_the_same_specials_under_both_rules(name, request):
    tok = AutoTokenizer.from_pretrained(request.getfixturevalue(name))
    assert legacy_special_ids(tok) == special_ids(tok)
    assert len(special_ids(tok)[0]) == len(special_ids(tok)[1]) == 1


def test_the_record_round_trips_and_is_checked(bert_dir):
    tok = AutoTokenizer.from_pretrained(bert_dir)
    before, after = special_ids(tok)
    record = json.loads(json.dumps(specials_record(before, after, tok)))
    assert record["before_pieces"] == ["[CLS]"] and record["after_pieces"] == ["[SEP]"]
    assert recorded_special_ids(record, tok) == (before, after)
    assert recorded_special_ids({"before": [], "after": []}, tok) == ((), ())
    with pytest.raises(ValueError, match="outside the saved tokenizer's / encoder's vocabulary \\(size 50\\)"):
        recorded_special_ids(record, tok, vocab_size=50)
    with pytest.raises(ValueError, match="maps those ids to"):
        recorded_special_ids(dict(record, after_pieces=["[PAD]"]), tok)


def _config(**values) -> bytes:
    return json.dumps(values).encode("utf8")


def test_portable_tokenizer_config():
    generic = portable_tokenizer_config(_config(tokenizer_class="TokenizersBackend", backend="tokenizers"))
    assert json.loads(generic) == {"tokenizer_class": "PreTrainedTokenizerFast", "backend": "tokenizers"}
    for kept in (_config(tokenizer_class="BertTokenizer"), _config(model_max_length=512), b"not json", b"[1]"):
        assert portable_tokenizer_config(kept) == kept


def test_backbone_dirs_are_written_portable(generic_dir, tmp_path):
    assert json.loads((generic_dir / "tokenizer_config.json").read_text())["tokenizer_class"] == (
        "PreTrainedTokenizerFast"
    )
    (tmp_path / "tokenizer_config.json").write_bytes(_config(tokenizer_class="TokenizersBackend"))
    make_portable(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    make_portable(tmp_path / "missing")  # no tokenizer_config.json: nothing to do


@pytest.fixture(scope="module")
def no_specials_dir(tmp_path_factory, generic_dir):
    """The generic tokenizer without its post-processor: it adds no special pieces at all."""
    import shutil

    out = tmp_path_factory.mktemp("no_specials") / "sub"
    shutil.copytree(generic_dir, out)
    data = json.loads((out / "tokenizer.json").read_text(encoding="utf8"))
    data["post_processor"] = None
    (out / "tokenizer.json").write_text(json.dumps(data), encoding="utf8")
    return out


def test_a_whitespace_doc_under_a_tokenizer_without_specials_is_predicted(canine_dir, no_specials_dir):
    """No pieces and no specials used to give the encoder an empty sequence (IndexError in
    the pooler); the window now holds one placeholder piece, and a whitespace doc's vectors
    do not depend on the batch it is in."""
    import numpy
    from _pipelines import build, train

    nlp = build(canine_dir, no_specials_dir, components=("ner", "tagger", "textcat"))
    train(nlp, 2)
    assert special_ids(nlp.get_pipe("entangle").model.shims[0].subwords.tokenizer) == ((), ())
    texts = ["   ", " \n ", "", "@john went to Paris!!!"]
    alone = [nlp(t) for t in texts]
    batched = list(nlp.pipe(texts, batch_size=4))
    for a, b in zip(alone, batched):
        assert not a.ents and len(a) == len(b)
        numpy.testing.assert_allclose(a._.entangle.subword, b._.entangle.subword, atol=1e-5)
    assert len(alone[0]._.entangle.token_vectors("subword")) == len(alone[0])


@pytest.mark.parametrize("name", ["bert_dir", "roberta_dir"])
def test_padded_gives_the_windows_pieces_between_specials_cut_and_padded(name, request):
    """SubwordSpec.padded (what onnx-int8 calibrates on): each text's pieces between the
    specials, as a window has them, cut to max_length, padded with the pad id; empty input
    is an empty batch."""
    from transformers import AutoConfig

    from spacy_entangle.tokenization import SubwordSpec

    path = request.getfixturevalue(name)
    tokenizer = AutoTokenizer.from_pretrained(path)
    spec = SubwordSpec.from_tokenizer(tokenizer, AutoConfig.from_pretrained(path), max_length=12)
    texts = ["Apple is buying a U.K. startup", "hi", "a much longer text " * 10]
    ids, mask = spec.padded(texts)
    assert ids.shape == mask.shape and ids.shape[0] == 3 and ids.shape[1] <= 12
    for row, text in enumerate(texts):
        n = int(mask[row].sum())
        expected = tokenizer(text)["input_ids"]
        if len(expected) <= 12:
            assert ids[row, :n].tolist() == expected
        else:  # cut inside the specials, which stay
            assert n == 12 and list(ids[row, :1]) == expected[:1] and ids[row, n - 1] == expected[-1]
        assert (ids[row, n:] == spec.pad_id).all() and mask[row, :n].all()
    empty_ids, empty_mask = spec.padded([])
    assert empty_ids.shape == empty_mask.shape == (0, 0)
