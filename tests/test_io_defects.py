"""Bad settings and damaged files fail clearly, naming what is wrong (issue 12:
defects 10, 11, 12)."""
import shutil

import pytest
import spacy
import srsly
from spacy.tokens import DocBin

from _pipelines import build, entangle_cfg, train
from spacy_entangle.converters.codeswitch import convert_codeswitch
from spacy_entangle.tokenization import configure_windows


@pytest.mark.parametrize("key,value", [
    ("hidden_width", 0), ("hidden_width", -8), ("n_heads", 0), ("ffn_width", 0),
    ("max_batch_chars", 0), ("n_coattention", -1), ("dropout", 1.0), ("dropout", -0.1),
    ("backbone_lr_scale", -1.0),
])
def test_bad_model_settings_fail_at_add_pipe(canine_dir, bert_dir, key, value):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=key):
        nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir, **{key: value})})


@pytest.mark.parametrize("key", ["max_pieces", "max_chars"])
@pytest.mark.parametrize("value", [0, -4])
def test_zero_or_negative_window_sizes_are_refused(key, value):
    with pytest.raises(ValueError, match=f"{key} must be a positive integer or null"):
        configure_windows(**{key: value})


def test_null_window_sizes_mean_the_encoders_limits(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",),
                window_getter={"@misc": "spacy-entangle.windows.v1", "max_pieces": None, "max_chars": None})
    train(nlp, n_steps=1)
    doc = nlp("Emoji 😀 in a doc. " * 200)
    assert len(doc._.entangle.align.window_rows) >= 2


def test_codeswitch_rerun_without_test_split_leaves_no_stale_test(shared_data, tmp_path):
    source = shared_data / "codeswitch_es_wix" / "mixed_annotated.txt"
    if not source.exists():
        pytest.skip(f"{source} not found")
    out = tmp_path / "corpus"
    convert_codeswitch(source, out, dev_frac=0.2, test_frac=0.2)
    assert (out / "test.spacy").exists()
    stats = convert_codeswitch(source, out, dev_frac=0.2, test_frac=0.0)
    assert not (out / "test.spacy").exists()
    assert any("test.spacy" in w for w in stats.warnings)
    nlp = spacy.blank("es")
    splits = srsly.read_json(out / "splits.json")
    assert splits["test"] == []
    n = sum(len(DocBin().from_disk(out / f"{s}.spacy")) for s in ("train", "dev"))
    assert n == len(splits["train"]) + len(splits["dev"])


@pytest.fixture(scope="module")
def saved(canine_dir, bert_dir, tmp_path_factory):
    nlp = build(canine_dir, bert_dir, components=("ner",))
    train(nlp, n_steps=2)
    path = tmp_path_factory.mktemp("saved") / "pipeline"
    nlp.to_disk(path)
    return path


def _edit_shim_files(model_file, edit):
    """Apply ``edit`` to the shim's stored files inside the saved `model` file."""
    msg = srsly.msgpack_loads(model_file.read_bytes())
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim_msg = srsly.msgpack_loads(shim_bytes)
            edit(shim_msg["files"])
            node_shims[i] = srsly.msgpack_dumps(shim_msg)
    model_file.write_bytes(srsly.msgpack_dumps(msg))


def _flip_weights(files):
    data = bytearray(files["model.safetensors"])
    data[-100:-80] = bytes(b ^ 0xFF for b in data[-100:-80])
    files["model.safetensors"] = bytes(data)


def _drop(name):
    return lambda files: files.pop(name)


def _truncate(name):
    return lambda files: files.__setitem__(name, files[name][: len(files[name]) // 2])


@pytest.mark.parametrize("damage,message", [
    ("truncate", "truncated"),
    (_drop("model.safetensors"), "lacks model.safetensors"),
    (_truncate("tokenizer/tokenizer.json"), "tokenizer files"),
    (_flip_weights, "sha256"),
])
def test_damaged_saved_component_names_itself_and_the_file(saved, tmp_path, damage, message):
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    model_file = path / "entangle" / "model"
    if damage == "truncate":
        model_file.write_bytes(model_file.read_bytes()[:1000])
    else:
        _edit_shim_files(model_file, damage)
    with pytest.raises(ValueError) as err:
        spacy.load(path)
    text = str(err.value)
    assert "`entangle` component" in text and str(model_file) in text and message in text, text


def test_damaged_bytes_name_the_component(saved):
    nlp = spacy.load(saved)
    msg = srsly.msgpack_loads(nlp.get_pipe("entangle").to_bytes())
    msg["model"] = msg["model"][: len(msg["model"]) // 3]
    with pytest.raises(ValueError, match="Cannot load the `entangle` component from bytes"):
        nlp.get_pipe("entangle").from_bytes(srsly.msgpack_dumps(msg))


def test_a_pipeline_saved_without_checksum_still_loads(saved, tmp_path):
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    _edit_shim_files(path / "entangle" / "model", _drop("model.safetensors.sha256"))
    nlp = spacy.load(path)
    assert nlp("still works").has_annotation("ENT_IOB")
