"""The shim (layers/shim.py): the inference modes, train mode back after a prediction
(gradient checkpointing), mixed precision on CPU, and saved files: damage named by file,
intact files of another library version named by version."""

import shutil

import numpy
import pytest
import spacy
import srsly
from _pipelines import TEXTS, build, examples, train
from thinc.api import SGD


@pytest.fixture(scope="module")
def trained_ner(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",))
    train(nlp, n_steps=10)
    return nlp


@pytest.mark.issue(12)
@pytest.mark.parametrize("mode,atol", [("int8", 0.3), ("bf16", 0.1)])
def test_inference_modes_are_close_to_fp32(trained_ner, tmp_path, mode, atol):
    nlp = trained_ner
    nlp.to_disk(tmp_path / "p")
    fast = spacy.load(tmp_path / "p", config={"components": {"entangle": {"inference": mode}}})
    assert fast.get_pipe("entangle").model.shims[0].inference == mode
    texts = [text for text, _, _ in TEXTS]
    exact = [d._.entangle.subword for d in nlp.pipe(texts)]
    approx = [d._.entangle.subword for d in fast.pipe(texts)]
    for a, b in zip(exact, approx):
        assert a.shape == b.shape
        assert numpy.abs(a - b).max() < atol
    # training still runs on the exact weights; the fast copy follows them
    fast.update(examples(fast), sgd=SGD(0.01))
    list(fast.pipe(texts))


@pytest.mark.issue(12)
def test_mixed_precision_setting_trains_on_cpu(canine_dir, bert_dir):
    """mixed_precision = true (the paper presets) is a CUDA setting: on the CPU the
    model trains in fp32 instead of crashing in thinc's grad scaler."""
    nlp = build(canine_dir, bert_dir, components=("ner",), mixed_precision=True)
    train(nlp, n_steps=3)
    assert not nlp.get_pipe("entangle").model.shims[0]._grad_scaler._enabled


def _entangle_params(nlp):
    model = nlp.get_pipe("entangle").model.shims[0]._model
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _checkpointed(canine_dir, bert_dir):
    """Gradient checkpointing reruns the forward in the backward pass: it must run in train
    mode again (dropout on), or torch raises CheckpointError."""
    nlp = build(canine_dir, bert_dir, components=("ner",), gradient_checkpointing=True, dropout=0.1)
    sgd = nlp.initialize(lambda: examples(nlp))
    return nlp, sgd


@pytest.mark.issue(22)
def test_checkpointing_trains_with_entangle_annotating(canine_dir, bert_dir):
    """[training] annotating_components = ["entangle"]: spaCy predicts with entangle after
    its update and before ner's update sends the gradients back."""
    nlp, sgd = _checkpointed(canine_dir, bert_dir)
    before = _entangle_params(nlp)
    for _ in range(2):
        losses = nlp.update(examples(nlp), sgd=sgd, annotates=["entangle"])
    assert numpy.isfinite(losses["ner"])
    after = _entangle_params(nlp)
    assert any((after[k] != before[k]).any() for k in before), "the backward reached the encoder"


@pytest.mark.issue(22)
def test_checkpointing_backward_after_evaluate(canine_dir, bert_dir):
    nlp, sgd = _checkpointed(canine_dir, bert_dir)
    entangle, ner = nlp.get_pipe("entangle"), nlp.get_pipe("ner")
    entangle.update(examples(nlp))
    nlp.evaluate(examples(nlp))
    ner.update(examples(nlp), sgd=sgd)  # the last listener runs entangle's backward
    entangle.finish_update(sgd)
    assert entangle.model.shims[0]._model.training, "predict puts the model back in train mode"


@pytest.mark.issue(22)
def test_int8_on_a_device_without_int8_kernels_predicts_fp32(trained_ner, tmp_path):
    """inference = "int8" on a GPU (the meta device stands in for it here) warns when the
    model is moved or the mode set, instead of failing at the first prediction."""
    trained_ner.to_disk(tmp_path / "p")
    nlp = spacy.load(tmp_path / "p", config={"components": {"entangle": {"inference": "int8"}}})
    shim = nlp.get_pipe("entangle").model.shims[0]
    assert shim._predict_mode == "int8"
    shim._model.to("meta")
    with pytest.warns(UserWarning, match="CPU only"):
        shim.set_inference("int8")
    assert shim.inference == "int8" and shim._predict_mode == "fp32"


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


@pytest.mark.issue(12)
@pytest.mark.parametrize(
    "damage,message",
    [
        ("truncate", "truncated"),
        (_drop("model.safetensors"), "lacks model.safetensors"),
        (_truncate("tokenizer/tokenizer.json"), "tokenizer files"),
        (_flip_weights, "sha256"),
    ],
)
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


@pytest.mark.issue(12)
def test_damaged_bytes_name_the_component(saved):
    nlp = spacy.load(saved)
    msg = srsly.msgpack_loads(nlp.get_pipe("entangle").to_bytes())
    msg["model"] = msg["model"][: len(msg["model"]) // 3]
    with pytest.raises(ValueError, match="Cannot load the `entangle` component from bytes"):
        nlp.get_pipe("entangle").from_bytes(srsly.msgpack_dumps(msg))


@pytest.mark.issue(12)
def test_a_pipeline_saved_without_checksum_still_loads(saved, tmp_path):
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    _edit_shim_files(path / "entangle" / "model", _drop("model.safetensors.sha256"))
    nlp = spacy.load(path)
    assert nlp("still works").has_annotation("ENT_IOB")


def _as_saved_by(versions):
    """Edit stored files as another library version would have written them: the versions and
    the checksums are that save's own, so the files are intact."""
    import hashlib

    from spacy_entangle.layers.shim import CHECKSUM, FILE_CHECKSUMS, VERSIONS, _sha256s

    def finish(files):
        files[VERSIONS] = srsly.json_dumps(versions).encode("utf8")
        files[CHECKSUM] = hashlib.sha256(files["model.safetensors"]).hexdigest().encode("ascii")
        files[FILE_CHECKSUMS] = srsly.json_dumps(_sha256s(files)).encode("utf8")

    return finish


def _edit_json(name, keys, value):
    def edit(files):
        data = srsly.json_loads(files[name].decode("utf8"))
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
        files[name] = srsly.json_dumps(data).encode("utf8")

    return edit


FUTURE = {"spacy-entangle": "0.1.0", "transformers": "9.0.0", "tokenizers": "9.1.0", "torch": "2.13.0"}


UNREADABLE = {
    # a tokenizer.json that another tokenizers wrote (tokenizers 0.13, which transformers 4.30
    # needs, fails so on a BPE saved by >= 0.20: "did not match any variant of untagged enum")
    "tokenizer_model": (
        _edit_json("tokenizer/tokenizer.json", ("model", "type"), "FutureModel"),
        "the tokenizer files (tokenizer/",
    ),
    # an architecture a newer transformers added
    "model_type": (
        _edit_json("subword_config.json", ("model_type",), "future-bert"),
        "subword_config.json (model type 'future-bert')",
    ),
}


@pytest.mark.issue(22)
@pytest.mark.parametrize("case", list(UNREADABLE))
def test_intact_files_the_library_cannot_read_name_the_versions_not_damage(saved, tmp_path, case):
    from spacy_entangle.versions import IncompatibleFilesError, installed

    edit, what = UNREADABLE[case]
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    _edit_shim_files(path / "entangle" / "model", lambda files: (edit(files), _as_saved_by(FUTURE)(files)))
    with pytest.raises(IncompatibleFilesError) as err:
        spacy.load(path)
    text = str(err.value)
    assert text.startswith(f"Cannot load the `entangle` component from {path / 'entangle' / 'model'}: {what}")
    assert (
        f"cannot be read with the installed transformers {installed('transformers')}, "
        f"tokenizers {installed('tokenizers')}"
    ) in text
    assert text.endswith(
        "It was saved with transformers 9.0.0, tokenizers 9.1.0: install those "
        "(pip install 'transformers==9.0.0' 'tokenizers==9.1.0'), or load it where they are installed."
    )
    assert "damaged" not in text and "truncated" not in text


@pytest.mark.issue(22)
def test_a_pipeline_that_records_no_versions_says_so(saved, tmp_path):
    """Saved before the versions and file checksums were stored: the same failure says what it
    can (the installed versions) and that damage cannot be ruled out."""
    from spacy_entangle.layers.shim import FILE_CHECKSUMS, VERSIONS

    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    edit = UNREADABLE["tokenizer_model"][0]
    _edit_shim_files(
        path / "entangle" / "model", lambda files: (edit(files), files.pop(VERSIONS), files.pop(FILE_CHECKSUMS))
    )
    with pytest.raises(ValueError, match="does not record the versions it was saved with .* cannot be ruled out"):
        spacy.load(path)


@pytest.mark.issue(22)
def test_an_edited_tokenizer_file_is_damage_named_by_file(saved, tmp_path):
    """A changed vocabulary used to load silently (only the weights had a checksum)."""
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)

    def rename_a_word(files):
        files["tokenizer/tokenizer.json"] = files["tokenizer/tokenizer.json"].replace(b'"the"', b'"thy"', 1)

    _edit_shim_files(path / "entangle" / "model", rename_a_word)
    with pytest.raises(
        ValueError,
        match=r"the tokenizer files are damaged: tokenizer/tokenizer.json missing or not "
        r"matching the stored sha256",
    ):
        spacy.load(path)


@pytest.mark.issue(22)
def test_a_pipeline_saved_without_versions_and_file_checksums_still_loads(saved, tmp_path):
    from spacy_entangle.layers.shim import FILE_CHECKSUMS, VERSIONS

    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    _edit_shim_files(path / "entangle" / "model", lambda files: (files.pop(VERSIONS), files.pop(FILE_CHECKSUMS)))
    assert spacy.load(path)("still works").has_annotation("ENT_IOB")


def _edit_weights(edit):
    from safetensors.torch import load as load_safetensors
    from safetensors.torch import save as save_safetensors

    def apply(files):
        state = load_safetensors(files["model.safetensors"])
        edit(state)
        files["model.safetensors"] = save_safetensors(state)
        _as_saved_by(FUTURE)(files)

    return apply


@pytest.mark.issue(22)
def test_weights_load_across_transformers_position_ids_buffers(saved, tmp_path):
    """transformers 4.30 saved BERT's embeddings.position_ids buffer, later versions neither
    save nor expect it: a pipeline saved either way loads with the same predictions."""
    import torch

    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    extra = "subword_encoder.embeddings.position_ids"
    _edit_shim_files(
        path / "entangle" / "model",
        _edit_weights(lambda state: state.__setitem__(extra, torch.arange(512).unsqueeze(0))),
    )
    text = "Apple is buying a U.K. startup"
    assert spacy.load(path)(text).to_json()["ents"] == spacy.load(saved)(text).to_json()["ents"]


@pytest.mark.issue(22)
def test_weights_that_lack_a_parameter_still_fail(saved, tmp_path):
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    name = "subword_encoder.embeddings.word_embeddings.weight"
    _edit_shim_files(path / "entangle" / "model", _edit_weights(lambda state: state.pop(name)))
    with pytest.raises(ValueError, match=f"the weights do not fit the model: missing \\['{name}'\\]"):
        spacy.load(path)


@pytest.mark.issue(51)
def test_a_load_draws_no_random_weights_and_predicts_as_saved(saved):
    """Every weight of a saved pipeline is loaded, so building it draws none at random (torch's
    random state is as it was) and it predicts what the pipeline it was saved from predicts."""
    import torch

    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    nlp = spacy.load(saved)
    assert torch.equal(torch.random.get_rng_state(), before)
    text = "Apple is buying a U.K. startup"
    torch.manual_seed(1)  # the other load draws at random if it has to: it must not matter
    assert nlp(text).to_json()["ents"] == spacy.load(saved)(text).to_json()["ents"]


@pytest.mark.issue(51)
def test_random_state_that_is_not_saved_is_drawn_after_all(saved, monkeypatch):
    """A model with a random buffer that is neither saved nor rebuilt (the skipped init would
    leave it as allocated) is built again, drawn as usual."""
    import torch

    from spacy_entangle.layers import shim as shim_module

    builds = []

    class WithRandomBuffer(shim_module.EntangleEncoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.register_buffer("noise", torch.empty(64).normal_(), persistent=False)
            builds.append(self)

    monkeypatch.setattr(shim_module, "EntangleEncoder", WithRandomBuffer)
    loaded = []
    for _ in range(2):
        torch.manual_seed(0)
        spacy.load(saved)
        loaded.append(builds[-1].noise.clone())
    assert len(builds) == 4  # each load: the skipped build, then the drawn one
    torch.manual_seed(0)
    assert torch.equal(loaded[0], loaded[1])
    assert torch.isfinite(loaded[0]).all() and loaded[0].std() > 0.5
