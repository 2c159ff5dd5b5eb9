"""The ONNX Runtime engine (inference = "onnx" / "onnx-mixed" / "onnx-int8", modeling/engines/onnx.py):
outputs against fp32 on the same docs (a tolerance per mode), padding invariance, the
saved pipeline loading offline with the mode set at load time, a clear error without
onnxruntime, and the CPU-only / bf16 warnings."""

import sys
import warnings

import numpy
import pytest
import spacy
from _pipelines import TEXTS, build, examples, train
from thinc.api import SGD

from spacy_entangle.modeling.inference import inference_on_device


def _needs_onnx() -> None:
    """The engine's tests need the `onnx` extra (the full suite's venv has it, the core one not)."""
    for name in ("onnxruntime", "onnx", "onnxscript"):
        pytest.importorskip(name)


# how far from fp32 the states may be: onnx is the same fp32 model, so its largest |difference|
# is float rounding; onnx-int8 quantizes every Linear layer, whose error on a tiny random model
# is noise of the weights' draw and the host's int8 kernels (VNNI or not), so it is bounded as
# the relative error of the doc's states, ||int8 - fp32|| / ||fp32||, not element by element
TOLERANCE = {"onnx": 1e-4}
RELATIVE_TOLERANCE = {"onnx-int8": 0.25, "onnx-mixed": 0.25}


def close_to_fp32(exact: numpy.ndarray, fast: numpy.ndarray, mode: str) -> bool:
    """Whether ``fast`` (one doc's states in ``mode``) is within the mode's tolerance of fp32's."""
    if exact.shape != fast.shape:
        return False
    if mode in TOLERANCE:
        return bool(numpy.abs(exact - fast).max(initial=0) < TOLERANCE[mode])
    norm = numpy.linalg.norm(exact)
    return bool(norm == 0 or numpy.linalg.norm(exact - fast) / norm < RELATIVE_TOLERANCE[mode])


IN_ONNX = {
    "onnx": ["char_encoder.words", "subword_encoder"],
    "onnx-int8": ["char_encoder.words", "char_layers.0", "sub_layers.0", "subword_encoder"],
    "onnx-mixed": ["char_encoder.words", "char_layers.0", "sub_layers.0", "subword_encoder"],
}
LONG = "a long one, with many words and 😀 emoji " * 10


@pytest.fixture(scope="module")
def saved(tmp_path_factory, grown_dir, bert_dir):
    """The shipped shape on tiny backbones: a grown char encoder, m = 1, NER on both sides."""
    _needs_onnx()
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both", n_coattention=1)
    train(nlp, n_steps=4)
    out = tmp_path_factory.mktemp("pipeline") / "p"
    nlp.to_disk(out)
    return out


def _load(path, mode):
    return spacy.load(path, config={"components": {"entangle": {"inference": mode, "store_output": True}}})


def _states(nlp, texts):
    return [(d._.entangle.subword, d._.entangle.char) for d in nlp.pipe(texts)]


@pytest.mark.parametrize("mode", ["onnx", "onnx-mixed", "onnx-int8"])
def test_engine_outputs_are_close_to_fp32_and_padding_invariant(saved, mode):
    texts = [text for text, _, _ in TEXTS] + ["   ", LONG]
    exact = _states(_load(saved, "fp32"), texts)
    fast = _load(saved, mode)
    shim = fast.get_pipe("entangle").model.shims[0]
    assert shim.inference == mode
    approx = _states(fast, texts)
    from spacy_entangle.modeling.engines.onnx import parts

    # the grown encoder's own front end stays in PyTorch, and the co-attention in fp32
    assert sorted(parts(shim._fast_model)) == IN_ONNX[mode]
    for (es, ec), (fs, fc) in zip(exact, approx):
        assert es.shape == fs.shape and ec.shape == fc.shape
        for e, f in ((es, fs), (ec, fc)):
            assert close_to_fp32(e, f, mode)
    # a doc alone and in a batch padded to a long doc's length: the same states
    entangle = fast.get_pipe("entangle")
    alone = entangle.predict([fast.make_doc(texts[1])])[0]
    batched = entangle.predict([fast.make_doc(texts[1]), fast.make_doc(LONG)])[0]
    numpy.testing.assert_allclose(alone.subword, batched.subword, atol=1e-5)
    numpy.testing.assert_allclose(alone.char, batched.char, atol=1e-5)


def test_onnx_int8_leaves_the_graph_nodes_a_what_if_names_in_float(saved, monkeypatch):
    """ONNX_INT8_FLOAT_NODES (int8_accuracy.py --keep-float-nodes) keeps single products in
    float: only the nodes its regexes match, named by part, and those nodes alone."""
    import spacy_entangle.modeling.inference as inference
    from spacy_entangle.modeling.engines.onnx import kept_float_nodes

    texts = [text for text, _, _ in TEXTS]
    exact = _states(_load(saved, "fp32"), texts)
    plain = _load(saved, "onnx-int8")
    default = _states(plain, texts)
    assert kept_float_nodes(plain.get_pipe("entangle").model.shims[0]._fast_model) == []  # the default: none
    ffn_out = r"char_encoder\.words/.*layer\.\d+/output/dense"
    monkeypatch.setattr(inference, "ONNX_INT8_FLOAT_NODES", (ffn_out, r"no such node"))
    nlp = _load(saved, "onnx-int8")
    some_float = _states(nlp, texts)
    kept = kept_float_nodes(nlp.get_pipe("entangle").model.shims[0]._fast_model)
    n_layers = nlp.get_pipe("entangle").model.shims[0]._model.char_encoder.config.num_hidden_layers
    assert n_layers >= 1
    assert kept == [f"char_encoder.words/encoder/encoder/layer.{i}/output/dense/MatMul" for i in range(n_layers)]
    # still within onnx-int8's tolerance of fp32, and not the default's states
    for (es, ec), (fs, fc) in zip(exact, some_float):
        assert close_to_fp32(es, fs, "onnx-int8") and close_to_fp32(ec, fc, "onnx-int8")
    assert any(not numpy.array_equal(dc, fc) for (_, dc), (_, fc) in zip(default, some_float))


def test_onnx_int8_exports_the_subword_encoder_smoothed_on_the_sample_text(saved, monkeypatch):
    """onnx-int8 smooths the subword encoder's activations (ONNX_INT8_SMOOTHING) on the fixed
    sample text, so its copy does not depend on the first batch; off, it does not smooth; the
    states stay within the mode's tolerance of fp32 either way."""
    import spacy_entangle.modeling.inference as inference

    texts = [text for text, _, _ in TEXTS]
    exact = _states(_load(saved, "fp32"), texts)
    results = {}
    for alpha in (0.5, None):
        monkeypatch.setattr(inference, "ONNX_INT8_SMOOTHING", alpha)
        # smoothed, a second copy whose first batch differs (unsmoothed nothing is calibrated)
        copies = [_load(saved, "onnx-int8") for _ in range(2 if alpha is not None else 1)]
        states = _states(copies[0], texts)
        if alpha is not None:
            other = copies[1]
            _states(other, list(reversed(texts)))  # another first batch
            # the same graphs whichever batch came first: the same states on the same batch
            for (fs, fc), (os_, oc) in zip(states, _states(other, texts)):
                numpy.testing.assert_array_equal(fs, os_)
                numpy.testing.assert_array_equal(fc, oc)
        engines = [nlp.get_pipe("entangle").model.shims[0]._fast_model for nlp in copies]
        assert [e.subword_encoder.smoothed for e in engines] == [alpha is not None] * len(engines)
        assert not engines[0].char_encoder.words.smoothed  # called with word vectors: not calibrated
        for (es, ec), (fs, fc) in zip(exact, states):
            assert close_to_fp32(es, fs, "onnx-int8") and close_to_fp32(ec, fc, "onnx-int8")
        results[alpha] = states
    assert any(not numpy.array_equal(a, b) for (a, _), (b, _) in zip(results[0.5], results[None]))


def _kept_rows(nlp, texts):
    """The entangle model's prediction as the listeners ask for it: each token's first row."""
    entangle = nlp.get_pipe("entangle")
    entangle.model.attrs["keep_rows"] = "first"
    return entangle.model.predict([nlp.make_doc(t) for t in texts])


def test_onnx_int8_co_attention_takes_the_kept_rows_into_its_graph(saved):
    """A prediction that keeps each token's first row runs the last co-attention modules'
    graphs with those rows as an input (queries and feed-forward on them alone), as the
    PyTorch model does; the states stay within onnx-int8's tolerance of fp32's."""
    texts = [text for text, _, _ in TEXTS] + ["   ", LONG]
    exact = _kept_rows(_load(saved, "fp32"), texts)
    nlp = _load(saved, "onnx-int8")
    fast = _kept_rows(nlp, texts)
    engine = nlp.get_pipe("entangle").model.shims[0]._fast_model
    import onnx

    for side in ("sub_layers", "char_layers"):
        graphs = getattr(engine, side)[0]._graphs
        assert list(graphs) == ["inputs5"] and graphs["inputs5"] is not None, "the rows graph, exported"
        # by the tracing exporter (opset 17; torch.export's graphs have a later one), from the
        # module's traceable form, whose graph the engine checked at other sizes than the example's
        opsets = {o.domain: o.version for o in onnx.load_from_string(graphs["inputs5"].data).opset_import}
        assert opsets[""] == 17
    for e, f in zip(exact, fast):
        assert e.subword.shape == f.subword.shape and e.char.shape == f.char.shape
        assert e.subword.shape[0] == e.char.shape[0] > 0 or not len(e.subword)
        assert close_to_fp32(e.subword, f.subword, "onnx-int8") and close_to_fp32(e.char, f.char, "onnx-int8")


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_onnx_int8_quantizes_every_weight_product_of_a_co_attention_module(tmp_path, exporter):
    """torch.export leaves the attention's in-projection behind a Split of the packed weight:
    the quantizer only sees initializers, so the engine folds constants first; the traced
    form (what the engine exports a co-attention module from) holds the query and key/value
    weights apart. Every MatMul left in float multiplies two activations (the attention
    scores and their use)."""
    _needs_onnx()
    import onnx
    import torch

    from spacy_entangle.modeling.coattention import CoAttentionModule
    from spacy_entangle.modeling.engines.onnx import _quantize, _write_graph
    from spacy_entangle.modeling.engines.traceable import traceable

    torch.manual_seed(0)
    module = CoAttentionModule(32, 4, 64, 0.0).eval()
    like = [torch.randn(2, 7, 32), torch.zeros(2, 7, dtype=torch.bool), torch.randn(2, 9, 32)]
    like += [torch.zeros(2, 9, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.long)]
    dims = [("batch", "length", None), ("batch", "length"), ("batch", "other_length", None), ("batch", "other_length")]
    dims += [("batch", "rows")]
    names = [f"input_{i}" for i in range(5)]
    exported = traceable(module) if exporter == "torchscript" else module
    assert exported is not None
    graph = onnx.load(str(_quantize(_write_graph(exporter, exported, names, like, dims, tmp_path / "graph.onnx"))))
    weights = {init.name for init in graph.graph.initializer}
    ops = [node.op_type for node in graph.graph.node]
    # q, k/v, out of each attention (2 x 3) + the two feed-forwards (2 x 2)
    assert ops.count("MatMulInteger") == 10
    float_products = [node for node in graph.graph.node if node.op_type in ("MatMul", "Gemm")]
    assert float_products and not any(set(node.input) & weights for node in float_products)


def test_onnx_int8_runs_the_pytorch_parts_left_in_torch_int8(saved, monkeypatch):
    """The grown encoder's front end stays in PyTorch: its Linear layers run in torch's dynamic
    int8, its character layers' feed-forward too (it runs them piece by piece, never fused),
    unless a what-if keeps them in float, with per-channel weights as ONNX Runtime's. A
    TransformerEncoderLayer that runs fused (a co-attention module's, in the int8 mode) keeps
    float weights."""
    import torch

    import spacy_entangle.modeling.inference as inference

    quantized = torch.ao.nn.quantized.dynamic.Linear
    char = _engine(saved, "onnx-int8").char_encoder
    assert all(type(char.join[i]) is quantized and type(char.to_word[i]) is quantized for i in (0, 2))
    assert type(char.char_layers[0].linear1) is quantized and type(char.char_layers[0].linear2) is quantized
    assert char.join[0].weight().qscheme() == torch.per_channel_affine
    int8 = _engine(saved, "int8")
    assert int8.char_encoder.join[0].weight().qscheme() == torch.per_channel_affine
    assert type(int8.char_encoder.char_layers[0].linear1) is quantized
    assert type(int8.sub_layers[0].self_attention.linear1) is torch.nn.Linear, "the fused fast path's"
    assert type(int8.sub_layers[0].cross.ffn[0]) is quantized
    monkeypatch.setattr(inference, "ONNX_INT8_FLOAT_PREFIXES", ("char_encoder.join.",))
    char = _engine(saved, "onnx-int8").char_encoder
    assert type(char.join[0]) is torch.nn.Linear and type(char.to_word[0]) is quantized


def _int8_products(part) -> int:
    """How many int8 weight products (MatMulInteger) the graphs of an engine part hold."""
    import onnx

    graphs = [g for g in part._graphs.values() if g is not None]
    assert graphs, f"{part.part_name}: no graph exported"
    return sum(n.op_type == "MatMulInteger" for g in graphs for n in onnx.load_from_string(g.data).graph.node)


def test_onnx_mixed_keeps_the_pretrained_encoders_in_fp32_and_quantizes_the_added_layers(saved):
    """onnx-mixed splits as int8 does: the subword encoder's and the copied layers' graphs in fp32
    (no int8 product), each co-attention module's in int8, the grown encoder's front end in
    torch's dynamic int8; onnx-int8 quantizes the encoders' graphs too."""
    import torch

    mixed, full = _engine(saved, "onnx-mixed"), _engine(saved, "onnx-int8")
    assert _int8_products(mixed.subword_encoder) == 0 and _int8_products(mixed.char_encoder.words) == 0
    assert _int8_products(full.subword_encoder) > 0 and _int8_products(full.char_encoder.words) > 0
    for side in ("sub_layers", "char_layers"):
        assert _int8_products(getattr(mixed, side)[0]) == _int8_products(getattr(full, side)[0]) > 0
    assert type(mixed.char_encoder.join[0]) is torch.ao.nn.quantized.dynamic.Linear


@pytest.mark.parametrize("saturates", [False, True])
def test_sessions_take_the_u8u8_int8_kernels_exactly_where_the_default_ones_saturate(saved, monkeypatch, saturates):
    """ONNX Runtime's default int8 kernels on an x86 CPU without VNNI add pairs of uint8 x int8
    products in saturating 16-bit lanes; its u8u8 kernels are exact but do not use VNNI (slower
    where it is there). Every session the engine makes asks for the u8u8 ones where the probe of
    the default ones comes back saturated, and none elsewhere (the probe's answer forced each way
    here; the real one is the next test's)."""
    from spacy_entangle.modeling.engines import onnx as engine

    monkeypatch.setattr(engine, "default_int8_saturates", lambda: saturates)
    model = _engine(saved, "onnx-int8")
    graphs = [g for m in model.modules() if isinstance(m, engine._Part) for g in m._graphs.values() if g]
    assert graphs
    for graph in graphs:
        options = graph.session.get_session_options()
        if saturates:
            assert options.get_session_config_entry("session.x64quantprecision") == "1"
        else:
            with pytest.raises(RuntimeError, match="x64quantprecision"):
                options.get_session_config_entry("session.x64quantprecision")


def test_the_probe_reads_whether_the_default_int8_kernels_saturate_and_the_engines_products_are_exact():
    """The probe (a MatMulInteger whose every pair of products passes 16 bits) run with ONNX
    Runtime's default kernels gives the engine's answer; through a session the engine makes, its
    product is exact on this CPU, with or without VNNI."""
    _needs_onnx()
    import onnxruntime

    from spacy_entangle.modeling.engines import onnx as engine

    plain = onnxruntime.InferenceSession(engine._PROBE, providers=["CPUExecutionProvider"])
    assert engine.default_int8_saturates() == (engine.probe_product(plain) != engine.PROBE_EXACT)
    assert engine.probe_product(engine._session(engine._PROBE, threads=1)) == engine.PROBE_EXACT


def _engine(path, mode):
    nlp = _load(path, mode)
    _states(nlp, [TEXTS[0][0]])
    return nlp.get_pipe("entangle").model.shims[0]._fast_model


def test_onnx_follows_training_and_keeps_attention_maps_exact(saved):
    """Training changes the weights: the next prediction exports them again. With the
    co-attention maps kept (store_attention) the exact model predicts: graphs return states."""
    nlp = _load(saved, "onnx")
    texts = [text for text, _, _ in TEXTS]
    before = _states(nlp, texts)
    shim = nlp.get_pipe("entangle").model.shims[0]
    assert shim._fast_model is not None
    nlp.update(examples(nlp), sgd=SGD(0.05))
    assert shim._fast_model is None, "the copy is dropped when the weights change"
    after = _states(nlp, texts)
    assert any(numpy.abs(a[0] - b[0]).max() > 1e-4 for a, b in zip(before, after))
    nlp.get_pipe("entangle").store_attention = True
    doc = nlp(texts[0])
    assert doc._.entangle_attention, "the maps of the exact model"


@pytest.mark.parametrize("mode", ["onnx", "onnx-int8"])
def test_a_canine_char_encoder_stays_in_pytorch_without_an_export_and_says_so(mode, canine_dir, bert_dir, tmp_path):
    """No exporter keeps CANINE's length dynamic (its local attention loops over the
    characters in Python): the engine leaves it in PyTorch with one warning saying why,
    without an export that would fail, on every load, after tens of seconds; the other parts
    still run in ONNX Runtime, and in onnx the states are fp32's."""
    _needs_onnx()
    from spacy_entangle.modeling.engines import onnx as engine

    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", n_coattention=1)
    train(nlp, n_steps=2)
    nlp.to_disk(tmp_path / "p")
    texts = [text for text, _, _ in TEXTS]
    exact = _states(_load(tmp_path / "p", "fp32"), texts)
    fast = _load(tmp_path / "p", mode)
    exported: list = []
    write = engine._write_graph

    def recording(exporter, module, *args, **kwargs):
        exported.append(type(getattr(module, "encoder", module)).__name__)
        return write(exporter, module, *args, **kwargs)

    with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("always")
        patch.setattr(engine, "_write_graph", recording)
        approx = _states(fast, texts)
    ran = engine.parts(fast.get_pipe("entangle").model.shims[0]._fast_model)
    assert "char_encoder" not in ran and "subword_encoder" in ran, ran
    assert "CanineModel" not in exported and exported, exported
    said = [str(w.message) for w in caught if "char encoder (canine) runs in PyTorch" in str(w.message)]
    assert len(said) == 1 and "local attention" in said[0], [str(w.message) for w in caught]
    assert not [w for w in caught if "export of" in str(w.message) and "failed" in str(w.message)]
    if mode == "onnx":
        for (es, ec), (fs, fc) in zip(exact, approx):
            assert numpy.abs(es - fs).max() < 1e-4 and numpy.abs(ec - fc).max() < 1e-4


def test_missing_onnxruntime_predicts_fp32_with_a_warning_naming_the_override(
    grown_dir, bert_dir, tmp_path, monkeypatch
):
    """In the core venv onnxruntime is really absent; elsewhere `import onnxruntime` is made to
    meet what it meets then: the pipeline loads, warns once (the extra and the override) and
    predicts in fp32 (tests/pipeline/test_fast_default.py: a pipeline saved in an onnx mode,
    in a process where onnxruntime cannot be imported)."""
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both", n_coattention=1)
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(tmp_path / "p")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.warns(UserWarning, match=r"pip install 'spacy-entangle\[onnx\]'.*inference = 'fp32'"):
        loaded = _load(tmp_path / "p", "onnx-int8")
    assert loaded.get_pipe("entangle").model.shims[0].predict_mode == "fp32"
    assert loaded(TEXTS[0][0]).text == TEXTS[0][0]


@pytest.mark.parametrize("mode", ["onnx", "onnx-mixed", "onnx-int8"])
def test_onnx_modes_elsewhere_than_the_cpu_predict_fp32_with_a_warning(mode, monkeypatch):
    import spacy_entangle.modeling.inference as inference

    monkeypatch.setattr(inference, "engine_available", lambda: True)  # the core venv lacks onnxruntime
    with pytest.warns(UserWarning, match="CPU only"):
        assert inference_on_device(mode, "cuda") == "fp32"
    assert inference_on_device(mode, "cpu") == mode


def test_bf16_on_the_cpu_warns_that_it_measured_slower_and_still_runs_bf16():
    with pytest.warns(UserWarning, match="measured slower than fp32"):
        assert inference_on_device("bf16", "cpu") == "bf16"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a GPU gets no warning
        assert inference_on_device("bf16", "cuda") == "bf16"
