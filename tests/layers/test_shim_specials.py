"""A saved model runs with the subword specials it was trained with (layers/shim.py), and its
tokenizer files load under transformers 4 and 5: the tokenizer is a generic
PreTrainedTokenizerFast whose template post-processor adds [CLS] x [SEP], while transformers
4's ``build_inputs_with_special_tokens`` (the rule before versions.json) adds nothing for it."""

import dataclasses
import hashlib
import shutil

import numpy
import pytest
import spacy
import srsly
from _pipelines import build, train

from spacy_entangle.backbone_dirs import make_random_subword
from spacy_entangle.layers.shim import (
    CHECKSUM,
    FILE_CHECKSUMS,
    SPECIALS,
    TOKENIZER_CONFIG,
    VERSIONS,
    _sha256s,
)
from spacy_entangle.tokenization.subwords import special_ids

TEXTS = ["Apple is buying a U.K. startup for $1 billion", "@john went to Paris!!!", "   ", "so sad that Bowie died"]


@pytest.fixture(scope="module")
def generic_dir(tmp_path_factory):
    return make_random_subword(
        tmp_path_factory.mktemp("generic"), kind="generic", layers=1, width=32, heads=2, vocab_size=300
    )


def _outputs(nlp, texts=TEXTS):
    docs = list(nlp.pipe(texts))
    return [(d.to_json()["ents"], d._.entangle.subword, d._.entangle.char) for d in docs]


def _assert_same(a, b):
    for (ents_a, sub_a, char_a), (ents_b, sub_b, char_b) in zip(a, b):
        assert ents_a == ents_b
        numpy.testing.assert_allclose(sub_a, sub_b, atol=1e-5)
        # the char side's last module runs only when a listener reads it (here none does)
        assert (char_a is None) == (char_b is None)
        if char_a is not None:
            numpy.testing.assert_allclose(char_a, char_b, atol=1e-5)


def _load(path):
    """Loaded keeping doc._.entangle, which the comparisons read."""
    return spacy.load(path, config={"components": {"entangle": {"store_output": True}}})


def _shim(nlp):
    return nlp.get_pipe("entangle").model.shims[0]


def _edit_files(path, edit):
    """Apply ``edit`` to the shim's stored files, then re-checksum them (intact files, as a
    pipeline saved that way would be)."""
    model_file = path / "entangle" / "model"
    msg = srsly.msgpack_loads(model_file.read_bytes())
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim_msg = srsly.msgpack_loads(shim_bytes)
            files = shim_msg["files"]
            edit(files)
            files[CHECKSUM] = hashlib.sha256(files["model.safetensors"]).hexdigest().encode("ascii")
            if FILE_CHECKSUMS in files:
                files[FILE_CHECKSUMS] = srsly.json_dumps(_sha256s(files)).encode("utf8")
            node_shims[i] = srsly.msgpack_dumps(shim_msg)
    model_file.write_bytes(srsly.msgpack_dumps(msg))


def _edit_json(name, change):
    def edit(files):
        data = srsly.json_loads(files[name].decode("utf8"))
        change(data)
        files[name] = srsly.json_dumps(data).encode("utf8")

    return edit


@pytest.fixture(scope="module")
def saved(canine_dir, generic_dir, tmp_path_factory):
    nlp = build(canine_dir, generic_dir, components=("ner",))
    train(nlp, n_steps=3)
    path = tmp_path_factory.mktemp("generic_saved") / "pipeline"
    nlp.to_disk(path)
    return path, _outputs(nlp)


def _copy(saved, tmp_path):
    path = tmp_path / "pipeline"
    shutil.copytree(saved[0], path)
    return path


@pytest.mark.issue(29)
def test_the_specials_a_model_was_trained_with_are_saved_and_used(saved, tmp_path):
    """The saved tokenizer's post-processor now adds no specials (as another transformers may
    read the same files): the model still gets the [CLS] x [SEP] it was trained with."""
    path = _copy(saved, tmp_path)
    loaded = _load(path)
    spec = _shim(loaded).subwords
    pieces = spec.tokenizer.convert_ids_to_tokens(list(spec.before + spec.after))
    assert pieces == ["[CLS]", "[SEP]"]
    _assert_same(_outputs(loaded), saved[1])

    _edit_files(path, _edit_json("tokenizer/tokenizer.json", lambda data: data.__setitem__("post_processor", None)))
    reread = _load(path)
    assert special_ids(_shim(reread).subwords.tokenizer) == ((), ())  # what its post-processor says now
    assert (_shim(reread).subwords.before, _shim(reread).subwords.after) == (spec.before, spec.after)
    _assert_same(_outputs(reread), saved[1])


@pytest.mark.issue(29)
def test_a_save_before_versions_json_keeps_the_rule_it_was_trained_with(canine_dir, generic_dir, tmp_path):
    """Saved before versions.json (transformers 4, ``build_inputs_with_special_tokens``): no
    specials for a generic fast tokenizer. Loading it used to add the post-processor's
    [CLS] x [SEP]: two rows more per window, other predictions, silently."""
    nlp = build(canine_dir, generic_dir, components=("ner",))
    nlp.initialize()
    shim = _shim(nlp)
    shim.subwords = dataclasses.replace(shim.subwords, before=(), after=(), prefix=0, n_special=0)
    train(nlp, n_steps=3, sgd=nlp.resume_training())
    # not "   ": with no specials a whitespace-only doc has no subword rows (a limit of that rule)
    texts = [text for text in TEXTS if text.strip()]
    before = _outputs(nlp, texts)
    nlp.to_disk(tmp_path / "old")
    _edit_files(
        tmp_path / "old", lambda files: [files.pop(name, None) for name in (SPECIALS, VERSIONS, FILE_CHECKSUMS)]
    )
    loaded = _load(tmp_path / "old")
    assert (_shim(loaded).subwords.before, _shim(loaded).subwords.after) == ((), ())
    _assert_same(_outputs(loaded, texts), before)


@pytest.mark.issue(29)
def test_a_save_with_versions_json_but_no_record_reads_the_post_processor(saved, tmp_path):
    """Saved by the code that read the specials from the post-processor (it wrote versions.json)."""
    path = _copy(saved, tmp_path)
    _edit_files(path, lambda files: files.pop(SPECIALS, None))
    loaded = _load(path)
    spec = _shim(loaded).subwords
    assert spec.tokenizer.convert_ids_to_tokens(list(spec.before + spec.after)) == ["[CLS]", "[SEP]"]
    _assert_same(_outputs(loaded), saved[1])


@pytest.mark.issue(29)
@pytest.mark.parametrize(
    "change,message",
    [
        (lambda record: record.__setitem__("after", [99999]), r"\[99999\] are outside the saved tokenizer"),
        (
            lambda record: record.__setitem__("before_pieces", ["<s>"]),
            r"trained with the special pieces \['<s>'\] x \['\[SEP\]'\] .* maps those ids to \['\[CLS\]'\]",
        ),
        (lambda record: record.pop("before"), "cannot be read: KeyError"),
    ],
)
def test_specials_that_cannot_be_honoured_are_refused(saved, tmp_path, change, message):
    path = _copy(saved, tmp_path)
    _edit_files(path, _edit_json(SPECIALS, change))
    with pytest.raises(ValueError, match=f"{SPECIALS}: .*{message}"):
        _load(path)


@pytest.mark.issue(34)
def test_the_saved_tokenizer_config_names_a_class_every_transformers_knows(saved, tmp_path):
    """transformers 5 writes "TokenizersBackend" for a generic fast tokenizer, which 4.x cannot
    load; the saved files say "PreTrainedTokenizerFast", which both load (a save made before
    that, under 5.x, still loads: the class is rewritten on reading too)."""
    path = _copy(saved, tmp_path)
    files = srsly.msgpack_loads(srsly.msgpack_loads((path / "entangle" / "model").read_bytes())["shims"][0][0])["files"]
    assert srsly.json_loads(files[TOKENIZER_CONFIG].decode("utf8"))["tokenizer_class"] == "PreTrainedTokenizerFast"
    _edit_files(
        path, _edit_json(TOKENIZER_CONFIG, lambda data: data.__setitem__("tokenizer_class", "TokenizersBackend"))
    )
    _assert_same(_outputs(_load(path)), saved[1])


@pytest.mark.issue(34)
def test_the_generic_backbone_dir_loads_in_every_transformers(generic_dir):
    config = srsly.read_json(generic_dir / "tokenizer_config.json")
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
