"""The entangle pipelines on a CUDA GPU: training (fp32 and mixed precision with loss
scaling), prediction equal to the CPU's, the prediction modes' GPU fallbacks, `auto`'s GPU
path, bf16, a long document, the side gate and the consistency term, `spacy train --gpu-id 0`
with the shipped config, and a pipeline trained on the GPU that loads and predicts on the CPU.

These tests skip where torch sees no GPU (the project's CI machines); on a GPU machine,
`python -m pytest tests/devices` runs them (docs/inference.md, "Devices")."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy
import pytest
import spacy
import torch
from _pipelines import TEXTS, build, entangle_cfg, examples, listener, ner_model, train
from _weasel import offline_env
from spacy.tokens import DocBin
from thinc.api import to_numpy

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = Path(__file__).resolve().parents[2]
DOCS = [text for text, _, _ in TEXTS] + ["   ", "a long one, with many words and 😀 emoji " * 10]


@pytest.fixture
def gpu():
    """thinc's and torch's default device is the GPU inside the test, the CPU after it."""
    spacy.require_gpu(0)
    try:
        yield
    finally:
        spacy.require_cpu()


@pytest.fixture(params=["grown", "canine"])
def char_dir(request):
    return request.getfixturevalue(f"{request.param}_dir")


def _load(path, **settings):
    return spacy.load(path, config={"components": {"entangle": {"store_output": True, **settings}}})


def _states(nlp):
    return [(d._.entangle.subword, d._.entangle.char) for d in nlp.pipe(DOCS)]


def _device(nlp) -> torch.device:
    return next(nlp.get_pipe("entangle").model.shims[0]._model.parameters()).device


def _on_cpu(states):
    """Rows as numpy arrays, wherever they were computed (cupy on the GPU)."""
    return [tuple(to_numpy(a) for a in pair) for pair in states]


@pytest.mark.parametrize("mixed", [False, True])
def test_training_on_the_gpu_lowers_the_loss_with_finite_weights(gpu, char_dir, bert_dir, mixed):
    nlp = build(char_dir, bert_dir, components=("ner", "tagger", "textcat"), mixed_precision=mixed)
    losses = train(nlp, n_steps=12)
    shim = nlp.get_pipe("entangle").model.shims[0]
    assert _device(nlp).type == "cuda"
    # mixed precision on CUDA: fp16 autocast with loss scaling (the scaler is on and on the GPU)
    assert shim._grad_scaler._enabled is mixed
    assert losses[-1]["tagger"] < losses[0]["tagger"], (losses[0], losses[-1])
    assert all(numpy.isfinite(list(step.values())).all() for step in losses)
    assert all(torch.isfinite(p).all() for p in shim._model.parameters())


def test_gpu_prediction_equals_the_cpus(tmp_path, char_dir, bert_dir):
    nlp = build(char_dir, bert_dir, components=("ner", "tagger"), side="both")
    train(nlp, n_steps=4)
    nlp.to_disk(tmp_path / "p")
    on_cpu = _on_cpu(_states(_load(tmp_path / "p")))
    spacy.require_gpu(0)
    try:
        loaded = _load(tmp_path / "p")
        assert _device(loaded).type == "cuda"
        on_gpu = _on_cpu(_states(loaded))
    finally:
        spacy.require_cpu()
    for (cs, cc), (gs, gc) in zip(on_cpu, on_gpu):
        assert cs.shape == gs.shape and cc.shape == gc.shape
        numpy.testing.assert_allclose(gs, cs, atol=1e-3)
        numpy.testing.assert_allclose(gc, cc, atol=1e-3)


def test_trained_on_the_gpu_loads_and_predicts_the_same_on_the_cpu(tmp_path, grown_dir, bert_dir):
    spacy.require_gpu(0)
    try:
        nlp = build(grown_dir, bert_dir, components=("ner", "tagger"), side="both")
        train(nlp, n_steps=4)
        on_gpu = _on_cpu(_states(nlp))
        nlp.to_disk(tmp_path / "p")
    finally:
        spacy.require_cpu()
    loaded = _load(tmp_path / "p")
    assert _device(loaded).type == "cpu"
    for (gs, gc), (cs, cc) in zip(on_gpu, _on_cpu(_states(loaded))):
        numpy.testing.assert_allclose(cs, gs, atol=1e-3)
        numpy.testing.assert_allclose(cc, gc, atol=1e-3)


@pytest.mark.parametrize("mode", ["int8", "onnx", "onnx-int8"])
def test_cpu_only_modes_predict_fp32_on_the_gpu_with_a_warning(gpu, tmp_path, grown_dir, bert_dir, mode):
    if mode.startswith("onnx"):
        pytest.importorskip("onnxruntime")
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both")
    train(nlp, n_steps=2)
    nlp.to_disk(tmp_path / "p")
    exact = _on_cpu(_states(_load(tmp_path / "p")))
    with pytest.warns(UserWarning, match="runs on the CPU only"):
        fallback = _load(tmp_path / "p", inference=mode)
    assert fallback.get_pipe("entangle").model.shims[0]._predict_mode == "fp32"
    # the same fp32 model (CUDA kernels are not bit-for-bit reproducible run to run)
    for (es, ec), (fs, fc) in zip(exact, _on_cpu(_states(fallback))):
        numpy.testing.assert_allclose(fs, es, atol=1e-5)
        numpy.testing.assert_allclose(fc, ec, atol=1e-5)


def test_auto_on_the_gpu_predicts_with_the_model_itself_without_a_warning(gpu, tmp_path, grown_dir, bert_dir):
    """The shipped default (`inference = "auto"`) takes the GPU path on a GPU: the fp32 model on
    its device, no ONNX engine and no warning."""
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both")
    train(nlp, n_steps=2)
    nlp.to_disk(tmp_path / "p")
    exact = _on_cpu(_states(_load(tmp_path / "p")))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        auto = _load(tmp_path / "p", inference="auto")
        shim = auto.get_pipe("entangle").model.shims[0]
        assert (shim.inference, shim.predict_mode, _device(auto).type) == ("auto", "fp32", "cuda")
        states = _on_cpu(_states(auto))
    assert shim._fast_model is None and shim.graph_names() == []
    for (es, ec), (fs, fc) in zip(exact, states):
        numpy.testing.assert_allclose(fs, es, atol=1e-5)
        numpy.testing.assert_allclose(fc, ec, atol=1e-5)


def test_bf16_on_the_gpu_is_close_to_fp32_without_a_warning(gpu, tmp_path, grown_dir, bert_dir):
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both")
    train(nlp, n_steps=2)
    nlp.to_disk(tmp_path / "p")
    exact = _on_cpu(_states(_load(tmp_path / "p")))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fast = _load(tmp_path / "p", inference="bf16")
        approx = _on_cpu(_states(fast))
    for (es, ec), (fs, fc) in zip(exact, approx):
        assert fs.shape == es.shape and fc.shape == ec.shape
        assert numpy.isfinite(fs).all() and numpy.isfinite(fc).all()
        assert numpy.abs(fs - es).max() < 0.25 and numpy.abs(fc - ec).max() < 0.25


def test_a_long_document_on_the_gpu_gets_one_finite_row_per_token(gpu, grown_dir, bert_dir):
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both", store_output=False)
    train(nlp, n_steps=2)
    text = "RT @user: watching Star Wars in London 😀 #fun, again and again. " * 400  # 26k chars
    (rows,) = _on_cpu([(out.subword, out.char) for out in nlp.get_pipe("entangle").predict([nlp.make_doc(text)])])
    doc = nlp(text)  # the ner listener reads the same rows
    assert len(doc) > 5000 and rows[0].shape[0] == rows[1].shape[0] == len(doc)
    assert numpy.isfinite(rows[0]).all() and numpy.isfinite(rows[1]).all()


def test_the_side_gate_and_the_consistency_term_train_on_the_gpu(gpu, tmp_path, grown_dir, bert_dir):
    """NER on a gated both-side listener (EntangleListener.v2) with stability training on:
    the gate's weights live on the GPU and move, the consistency term is reported, every
    loss is finite, and the pipeline predicts the same on the CPU."""
    consistency = {"@misc": "spacy-entangle.noise_consistency.v1", "weight": 1.0, "level": 1.0, "rate": 1.0}
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(grown_dir, bert_dir), "consistency": consistency})
    tok2vec = {**listener("both"), "@architectures": "spacy-entangle.EntangleListener.v2", "combine": "gate"}
    nlp.add_pipe("ner", config={"model": {**ner_model("both"), "tok2vec": tok2vec}})
    losses = train(nlp, n_steps=12)
    gate = next(n for n in nlp.get_pipe("ner").model.walk() if n.name == "entangle-side-gate").layers[0]
    assert "cupy" in type(gate.get_param("W")).__module__
    assert float(abs(gate.get_param("W")).sum()) > 0
    assert all(step["entangle_consistency"] > 0 for step in losses[1:])
    assert all(numpy.isfinite(list(step.values())).all() for step in losses)
    ents = [[(e.text, e.label_) for e in doc.ents] for doc in nlp.pipe(DOCS)]
    nlp.to_disk(tmp_path / "p")
    spacy.require_cpu()
    assert [[(e.text, e.label_) for e in doc.ents] for doc in spacy.load(tmp_path / "p").pipe(DOCS)] == ents


@pytest.mark.parametrize("mixed", ["false", "true"])
def test_spacy_train_gpu_id_0_with_the_shipped_config(tmp_path, grown_dir, bert_dir, mixed):
    """`spacy train configs/ner_cpu.cfg --gpu-id 0` (the shipped recipe: the char-noise
    augmenter, NER on both sides) on the tiny backbones; then `spacy evaluate --gpu-id 0`."""
    nlp = spacy.blank("en")
    docs = [ex.reference for ex in examples(nlp)]
    DocBin(docs=docs * 4).to_disk(tmp_path / "train.spacy")
    DocBin(docs=docs).to_disk(tmp_path / "dev.spacy")
    out = tmp_path / "model"
    # fmt: off
    cmd = [
        sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / "ner_cpu.cfg"), "--output", str(out),
        "--paths.train", str(tmp_path / "train.spacy"), "--paths.dev", str(tmp_path / "dev.spacy"),
        "--paths.char_backbone", str(grown_dir), "--paths.subword_backbone", str(bert_dir),
        "--components.entangle.model.hidden_width", "32", "--components.entangle.model.n_heads", "2",
        "--components.entangle.model.ffn_width", "64", "--components.entangle.model.mixed_precision", mixed,
        "--training.max_steps", "8", "--training.eval_frequency", "4", "--training.logger.progress_bar", "false",
        "--gpu-id", "0",
    ]
    # fmt: on
    run = subprocess.run(cmd, capture_output=True, text=True, env=offline_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "ents_f" in json.loads((out / "model-last" / "meta.json").read_text())["performance"]
    ev = subprocess.run(
        [sys.executable, "-m", "spacy", "evaluate", str(out / "model-best"), str(tmp_path / "dev.spacy")]
        + ["--output", str(tmp_path / "m.json"), "--gpu-id", "0"],
        capture_output=True,
        text=True,
        env=offline_env(),
    )
    assert ev.returncode == 0, ev.stdout[-2000:] + ev.stderr[-2000:]
    assert "ents_f" in json.loads((tmp_path / "m.json").read_text())
