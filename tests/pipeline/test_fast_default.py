"""A fast default that behaves: the engine modes' ONNX graphs are exported once, saved with
the pipeline (checked against the weights they come from) and read on load; a pipeline
without them exports once and says so in one log line; one saved in an onnx mode loads and
predicts fp32 where onnxruntime is missing; the pipeline pickles, deep-copies, replaces its
listeners and runs `nlp.pipe(n_process=2)` under fork and spawn in every inference mode,
before and after its first prediction, even after a prediction on more than one torch
thread; `inference = "auto"` and the project's `package` step ship the fast mode."""

import copy
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy
import pytest
import spacy
import torch
from _pipelines import TEXTS, build, examples, train
from thinc.api import SGD

from spacy_entangle.modeling.inference import (
    AUTO_CPU_FALLBACK,
    AUTO_CPU_MODE,
    ENGINE_MODES,
    INFERENCE_MODES,
    inference_on_device,
)

REPO = Path(__file__).resolve().parents[2]
DOCS = [text for text, _, _ in TEXTS] + ["a longer one, with many words and 😀 emoji " * 6]
ENGINE_PARTS = {
    "onnx": ["char_encoder.words", "subword_encoder"],
    "onnx-int8": ["char_encoder.words", "char_layers.0", "sub_layers.0", "subword_encoder"],
    "onnx-mixed": ["char_encoder.words", "char_layers.0", "sub_layers.0", "subword_encoder"],
}


def _config(mode):
    return {"components": {"entangle": {"inference": mode}}}


def _states(nlp):
    """The entangle states the listeners read, per doc (both sides)."""
    entangle = nlp.get_pipe("entangle")
    return [(o.subword, o.char) for o in entangle.predict([nlp.make_doc(t) for t in DOCS])]


def _same(a, b, atol=1e-5):
    assert len(a) == len(b)
    for (sa, ca), (sb, cb) in zip(a, b):
        numpy.testing.assert_allclose(sa, sb, atol=atol)
        numpy.testing.assert_allclose(ca, cb, atol=atol)


def _engine(nlp):
    return nlp.get_pipe("entangle").model.shims[0]._fast_model


def _parts(nlp):
    from spacy_entangle.modeling.engines.onnx import parts

    return sorted(parts(_engine(nlp)))


@pytest.fixture(scope="module")
def saved(tmp_path_factory, grown_dir, bert_dir):
    """The shipped shape on tiny backbones: `plain` saved as trained, `cached` saved in
    onnx-int8 after every engine mode exported its graphs (the one export of each in this
    module), with the states each mode predicted."""
    for name in ("onnxruntime", "onnx", "onnxscript"):
        pytest.importorskip(name)
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both", n_coattention=1, store_output=False)
    train(nlp, n_steps=2)
    root = tmp_path_factory.mktemp("fast")
    nlp.to_disk(root / "plain")
    fast = spacy.load(root / "plain", config=_config("onnx-int8"))
    shim = fast.get_pipe("entangle").model.shims[0]
    states = {}
    for mode in ("onnx-int8", "onnx", "onnx-mixed"):
        shim.set_inference(mode)
        states[mode] = _states(fast)  # the first prediction exports the mode's graphs
    fast.to_disk(root / "cached")
    return root, states


def test_saved_graphs_are_read_on_load_instead_of_exported(saved, monkeypatch, caplog):
    """The cached pipeline holds every engine mode's graphs; loading it exports nothing (an export
    would fail here and warn), runs the same parts and predicts the same states."""
    import spacy_entangle.modeling.engines.onnx as engine

    def no_export(*args, **kwargs):
        raise AssertionError("exported instead of reading the saved graph")

    root, states = saved
    monkeypatch.setattr(engine, "_write_graph", no_export)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "spacy_entangle"):
        warnings.simplefilter("always")
        for mode in ("onnx-int8", "onnx-mixed", "onnx"):
            nlp = spacy.load(root / "cached", config=_config(mode))
            _same(_states(nlp), states[mode])
            assert _parts(nlp) == ENGINE_PARTS[mode]
    assert not [w for w in caught if "ONNX export" in str(w.message)]
    assert not caplog.records
    assert _engine(nlp).subword_encoder.smoothed is False  # onnx: never smoothed
    held = spacy.load(root / "cached").get_pipe("entangle").model.shims[0].graph_names()
    assert sorted(held) == sorted(
        [
            "onnx:char_encoder.words/inputs_embeds",
            "onnx:subword_encoder/input_ids",
            "onnx-int8:char_encoder.words/inputs_embeds",
            "onnx-int8:char_layers.0/inputs5",
            "onnx-int8:sub_layers.0/inputs5",
            "onnx-int8:subword_encoder/input_ids",
            "onnx-mixed:char_encoder.words/inputs_embeds",
            "onnx-mixed:char_layers.0/inputs5",
            "onnx-mixed:sub_layers.0/inputs5",
            "onnx-mixed:subword_encoder/input_ids",
        ]
    )


def test_without_saved_graphs_it_exports_once_and_says_so_in_one_line(saved, caplog):
    root, states = saved
    nlp = spacy.load(root / "plain", config=_config("onnx"))
    with caplog.at_level(logging.INFO, "spacy_entangle"):
        _same(_states(nlp), states["onnx"])
        _states(nlp)  # exported once
    (line,) = [r.getMessage() for r in caplog.records]
    assert "exported 2 ONNX graph(s) for inference = 'onnx' in " in line
    assert "(the pipeline was saved without them)" in line and "nlp.to_disk" in line
    caplog.clear()
    nlp.update(examples(nlp), sgd=SGD(0.05))  # other weights: their graphs are exported again
    with caplog.at_level(logging.INFO, "spacy_entangle"):
        nlp(DOCS[0])
    (line,) = [r.getMessage() for r in caplog.records]
    assert "exported 2 ONNX graph(s)" in line and "the weights changed" in line


def test_a_part_that_did_not_export_is_not_exported_again_on_load(saved, tmp_path, monkeypatch):
    """A part whose export fails runs in PyTorch with one warning, and the failure is saved
    with the graphs: loaded under the same torch, that part runs in PyTorch at once (one
    warning, naming why) while the others read their graphs; under another torch, whose
    exporters may take it, it is exported again."""
    import spacy_entangle.modeling.engines.onnx as engine

    root, states = saved
    real, tried = engine._write_graph, []

    def char_part_fails(exporter, module, names, like, dims, path):
        tried.append(names[0])
        if names[0] == "inputs_embeds":  # the grown char encoder's copied layers
            raise RuntimeError("no ONNX form for this encoder")
        return real(exporter, module, names, like, dims, path)

    def exported_warnings(caught):
        return [str(w.message) for w in caught if str(w.message).startswith("ONNX export of")]

    monkeypatch.setattr(engine, "_write_graph", char_part_fails)
    nlp = spacy.load(root / "plain", config=_config("onnx"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _same(_states(nlp), states["onnx"], atol=1e-4)
    assert [m.split(" failed")[0] for m in exported_warnings(caught)] == ["ONNX export of char_encoder.words"]
    assert _parts(nlp) == ["subword_encoder"]
    nlp.to_disk(tmp_path / "p")
    # loaded again: nothing is exported (the subword graph is read, the char part is known)
    tried.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = spacy.load(tmp_path / "p", config=_config("onnx"))
        (failed,) = again.get_pipe("entangle").model.shims[0]._graphs.modes["onnx"].failed.items()
        _same(_states(again), states["onnx"], atol=1e-4)
        _states(again)
    assert failed[0] == "char_encoder.words/inputs_embeds" and failed[1].torch == torch.__version__
    assert tried == [] and _parts(again) == ["subword_encoder"] and not exported_warnings(caught)
    (why,) = [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)]
    assert why.startswith("char_encoder.words runs in PyTorch") and "no ONNX form for this encoder" in why
    # recorded under another torch: tried again
    other = spacy.load(tmp_path / "p", config=_config("onnx"))
    other.get_pipe("entangle").model.shims[0]._graphs.modes["onnx"].failed[failed[0]].torch = "0.0"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _states(other)
    assert "inputs_embeds" in tried and len(exported_warnings(caught)) == 1


def test_graphs_of_other_weights_or_settings_are_not_used():
    from spacy_entangle.modeling.engines.graphs import GraphStore, ModeGraphs, SavedGraph

    store = GraphStore()
    store.for_mode("onnx", {}).graphs["subword_encoder/input_ids"] = SavedGraph(b"graph bytes")
    files = store.to_files("a" * 64)
    assert GraphStore.from_files(files, "a" * 64).names() == ["onnx:subword_encoder/input_ids"]
    other = GraphStore.from_files(files, "b" * 64)
    assert other.names() == [] and other.reason == "the saved ones were exported from other weights"
    damaged = {**files, "onnx/onnx/subword_encoder.input_ids.onnx": b"other bytes"}
    assert GraphStore.from_files(damaged, "a" * 64).names() == []
    held = GraphStore.from_files(files, "a" * 64)
    assert isinstance(held.for_mode("onnx", {"smoothing": 0.5}), ModeGraphs)
    assert held.names() == [] and held.reason == "the saved ones were made with other engine settings"


_NO_ONNXRUNTIME = """
import json, sys, warnings

sys.modules["onnxruntime"] = None  # as if not installed: importing it fails, find_spec finds nothing
import numpy, spacy

path = sys.argv[1]
texts = ["Apple is buying a U.K. startup 😀 for $1 billion", "@john went to Paris!!!"]

def states(nlp):
    out = nlp.get_pipe("entangle").predict([nlp.make_doc(t) for t in texts])
    return [o.subword.tolist() for o in out]

exact = states(spacy.load(path, config={"components": {"entangle": {"inference": "fp32"}}}))
result = {}
for setting in ("saved", "auto", "onnx"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = {} if setting == "saved" else {"components": {"entangle": {"inference": setting}}}
        nlp = spacy.load(path, config=config)
        got = states(nlp)
    result[setting] = {
        "inference": nlp.get_pipe("entangle").model.shims[0].inference,
        "mode": nlp.get_pipe("entangle").model.shims[0].predict_mode,
        "warnings": [str(w.message) for w in caught if "ONNX Runtime" in str(w.message)],
        "same": len(got) == len(exact) and all(numpy.allclose(a, b, atol=1e-5) for a, b in zip(got, exact)),
    }
print(json.dumps(result))
"""


def test_saved_in_an_onnx_mode_it_loads_and_predicts_fp32_without_onnxruntime(saved, tmp_path):
    """The cached pipeline was saved in onnx-int8 (its config.cfg says so): where onnxruntime
    cannot be imported it loads, warns once naming the override, and predicts in fp32; so does
    `onnx` set at load. `auto` predicts in its CPU mode when that is a PyTorch mode (nothing to
    warn about), else in its fallback, with one warning that names it."""
    root, _ = saved
    script = tmp_path / "no_onnxruntime.py"
    script.write_text(_NO_ONNXRUNTIME, encoding="utf8")
    run = subprocess.run(
        [sys.executable, str(script), str(root / "cached")], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["saved"]["inference"] == "onnx-int8"
    for setting, got in result.items():
        if setting == "auto" and AUTO_CPU_MODE not in ENGINE_MODES:
            assert got["mode"] == AUTO_CPU_MODE and not got["warnings"], got
            continue
        if setting == "auto":
            (warning,) = got["warnings"]
            assert got["mode"] == AUTO_CPU_FALLBACK and f"inference = '{AUTO_CPU_FALLBACK}'" in warning, got
            continue
        assert got["mode"] == "fp32" and got["same"], (setting, got)
        (warning,) = got["warnings"]
        assert "inference = 'fp32'" in warning and "pip install 'spacy-entangle[onnx]'" in warning


@pytest.mark.parametrize("mode", INFERENCE_MODES)
def test_the_pipeline_pickles_copies_and_replaces_listeners_before_and_after_predicting(saved, mode):
    root, _ = saved
    nlp = spacy.load(root / "cached", config=_config(mode))
    copies = [pickle.loads(pickle.dumps(nlp)), copy.deepcopy(nlp)]
    reference = _states(nlp)  # the first prediction: an engine mode's sessions now exist
    copies += [pickle.loads(pickle.dumps(nlp)), copy.deepcopy(nlp)]
    for other in copies:
        _same(_states(other), reference, atol=1e-4)
    ents = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(DOCS)]
    nlp.replace_listeners("entangle", "ner", ["model.tok2vec"])
    nlp.remove_pipe("entangle")  # no listener reads it now: `ner` predicts with its own copy
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(DOCS)] == ents
    assert [[(e.start, e.end) for e in doc.ents] for doc in pickle.loads(pickle.dumps(nlp)).pipe(DOCS)] == [
        [(s, e) for s, e, _ in doc] for doc in ents
    ]


# the default (an engine mode on a CPU) and the two PyTorch kinds of prediction
FORK_MODES = ("fp32", "int8", "auto")

_N_PROCESS = """
import json, multiprocessing, sys

def predicted(nlp, texts, **kwargs):
    return [doc.tensor for doc in nlp.pipe(texts, batch_size=1, **kwargs)]

def main():
    import numpy, spacy, torch

    path, modes = sys.argv[1], sys.argv[2].split(",")
    texts = ["Apple is buying a U.K. startup 😀 for $1 billion", "@john went to Paris!!!"]
    result = {}
    for start, modes in (("fork", modes), ("spawn", ["auto"])):
        multiprocessing.set_start_method(start, force=True)
        for mode in modes:
            config = {"components": {"entangle": {"inference": mode, "doc_tensor": "both"}}}
            nlp = spacy.load(path, config=config)
            torch.set_num_threads(2)  # the parent predicts on two threads first
            parent = predicted(nlp, texts)
            workers = predicted(nlp, texts, n_process=2)
            same = len(workers) == len(parent) and all(numpy.allclose(a, b, atol=1e-3) for a, b in zip(parent, workers))
            result[f"{start} {mode}"] = same
    print(json.dumps(result))

if __name__ == "__main__":
    main()
"""


def test_n_process_never_hangs_after_a_prediction_on_two_threads(saved, tmp_path):
    """torch's thread pool does not survive a fork (nor do ONNX Runtime's sessions): the
    workers predict what the parent predicts under fork, in each kind of mode (the model
    itself, torch int8, the default's ONNX Runtime sessions: the other engine modes build
    theirs the same way), and under spawn (the pickled pipeline rebuilds its engine from the
    saved graphs, no export); a hang fails by the timeout. OMP_WAIT_POLICY=PASSIVE: two torch
    threads spin-wait on a busy machine."""
    root, _ = saved
    script = tmp_path / "n_process.py"
    script.write_text(_N_PROCESS, encoding="utf8")
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    try:
        run = subprocess.run(
            [sys.executable, str(script), str(root / "cached"), ",".join(FORK_MODES)],
            capture_output=True,
            text=True,
            timeout=400,
            cwd=REPO,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("nlp.pipe(n_process=2) hung")
    assert run.returncode == 0, run.stderr[-3000:]
    expected = {f"fork {mode}": True for mode in FORK_MODES}
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {**expected, "spawn auto": True}
    assert "ONNX graph(s) for inference" not in run.stderr, "the workers read the saved graphs"


def test_auto_is_the_fast_cpu_mode_and_the_model_itself_on_a_gpu(monkeypatch):
    """Where onnxruntime imports (made so in the core venv, which lacks it): the fast mode on a
    CPU, the model itself on a GPU, without a warning; where it does not and the fast mode
    needs it, the fallback (a PyTorch mode) with one warning."""
    import spacy_entangle.modeling.inference as inference

    monkeypatch.setattr(inference, "engine_available", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert inference_on_device("auto", "cpu") == inference.AUTO_CPU_MODE
        assert inference_on_device("auto", "cuda") == "fp32"
    monkeypatch.setattr(inference, "engine_available", lambda: False)
    assert inference.AUTO_CPU_FALLBACK not in inference.ENGINE_MODES
    if inference.AUTO_CPU_MODE in inference.ENGINE_MODES:
        with pytest.warns(UserWarning, match=rf"inference = '{inference.AUTO_CPU_FALLBACK}' to silence"):
            assert inference_on_device("auto", "cpu") == inference.AUTO_CPU_FALLBACK
    else:  # a PyTorch mode: nothing to install, nothing to warn about
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert inference_on_device("auto", "cpu") == inference.AUTO_CPU_MODE


# the shipped recipe's per-seed F1 files and the side-by-side speed run of every CPU mode: the
# README's modes table is rendered from the same two (research/benchmarks/mode_f1_seeds.py modes)
# the shipped pipeline's 3 seeds with exact int8 products, and the modes side by side on a host
# where the engine's int8 kernels are ONNX Runtime's default ones (VNNI, AMX)
MODE_F1 = REPO / "docs" / "results" / "data" / "mode_f1_exact"
MODE_SPEED = REPO / "docs" / "results" / "data" / "speed_modes_amx_exact.json"


def test_auto_on_a_cpu_is_the_fastest_mode_within_the_f1_bound_over_3_seeds():
    """The CPU mode `auto` names is the fastest of the modes the shipped recipe's 3 seeds keep
    within 0.3 F1 of fp32, clean and at noise 0.5 (mean over the seeds), and its fallback the
    fastest of those that need nothing but torch: the rule, read from the committed per-seed
    files and the committed side-by-side speed run, not restated."""
    import statistics

    import spacy_entangle.modeling.inference as inference

    files = sorted(MODE_F1.glob("seed*.json"))
    assert len({f.name.split("_")[0] for f in files}) >= 3, "the rule needs 3 seeds"
    costs: dict = {}
    for path in files:
        scores = json.loads(path.read_text(encoding="utf8"))
        for mode, got in scores.items():
            if mode in ("fp32", "pipeline") or not isinstance(got, dict) or "dev.spacy" not in got:
                continue
            smoothing = scores.get("onnx_int8_smoothing", "n/a") if mode == "onnx-int8" else None
            if mode == "onnx-int8" and smoothing != inference.ONNX_INT8_SMOOTHING:
                continue  # the what-if setting, not the one the mode runs with
            for corpus in ("dev.spacy", "dev_noise0.5.spacy"):
                costs.setdefault((mode, corpus), []).append(100 * (got[corpus] - scores["fp32"][corpus]))
    assert all(len(v) >= 3 for v in costs.values()), {k: len(v) for k, v in costs.items()}
    within = {
        m
        for m, _ in costs
        if all(abs(statistics.mean(costs[(m, c)])) <= 0.3 for c in ("dev.spacy", "dev_noise0.5.spacy"))
    }
    run = json.loads(MODE_SPEED.read_text(encoding="utf8"))["pipelines"]
    models = run["models"]
    (entangle,) = [name for name in models if name != run["reference"] and "@" not in name]
    speed = {mode: models[f"{entangle}@{mode}"]["relative_to_reference"] for mode in within}
    means = {k: round(statistics.mean(v), 2) for k, v in costs.items()}
    assert inference.AUTO_CPU_MODE == max(speed, key=speed.__getitem__), (means, speed)
    torch_only = {m: v for m, v in speed.items() if m not in inference.ENGINE_MODES}
    assert inference.AUTO_CPU_FALLBACK == max(torch_only, key=torch_only.__getitem__), (means, speed)


def test_the_package_step_ships_auto_with_its_graphs_and_the_onnx_extra(saved, tmp_path, monkeypatch, caplog):
    """project/scripts/fast_default.py sets `inference = "auto"` and saves the graphs it predicts
    with (here read from the cached pipeline: nothing is exported again); package_meta.py then
    names the `onnx` extra in the package's requirements, and only then."""
    from fast_default import main as fast_default
    from package_meta import inference_extras, plugin_requirement

    root, states = saved
    shipped = tmp_path / "shipped"
    shutil.copytree(root / "cached", shipped)
    with caplog.at_level(logging.INFO, "spacy_entangle"):
        fast_default(shipped, None, "auto")
    assert not caplog.records, "the saved graphs were used"
    nlp = spacy.load(shipped)
    shim = nlp.get_pipe("entangle").model.shims[0]
    assert nlp.config["components"]["entangle"]["inference"] == "auto"
    assert (shim.inference, shim.predict_mode) == ("auto", AUTO_CPU_MODE)
    if AUTO_CPU_MODE in ENGINE_MODES:  # its graphs are saved, and the package needs the engine
        assert f"{AUTO_CPU_MODE}:subword_encoder/input_ids" in shim.graph_names()
        _same(_states(nlp), states[AUTO_CPU_MODE])
        assert inference_extras(shipped) == ["onnx"]
    else:  # a PyTorch mode: no graphs to carry, no extra to require
        assert inference_extras(shipped) == []
    assert inference_extras(root / "plain") == []
    assert plugin_requirement(["onnx"]).startswith("spacy-entangle[onnx]>=")


def test_setting_the_mode_on_a_loaded_pipeline_switches_its_prediction(canine_dir, bert_dir, tmp_path):
    """`nlp.get_pipe("entangle").inference = MODE` predicts in MODE from the next doc on, as
    loading with the override does (it was a plain attribute that nothing read); a bad mode is
    refused with the modes that exist."""
    nlp = build(canine_dir, bert_dir, components=("ner",), store_output=False)
    train(nlp, n_steps=1)
    entangle = nlp.get_pipe("entangle")
    shim = entangle.model.shims[0]
    exact = _states(nlp)
    assert entangle.inference == "fp32" and shim.predict_mode == "fp32"
    entangle.inference = "int8"
    assert entangle.inference == "int8" and shim.predict_mode == "int8"
    quantized = _states(nlp)
    assert any(not numpy.array_equal(a, b) for (a, _), (b, _) in zip(exact, quantized))
    entangle.inference = "fp32"
    assert all(numpy.array_equal(a, b) for (a, _), (b, _) in zip(exact, _states(nlp)))
    with pytest.raises(ValueError, match="onnx-int8"):
        entangle.inference = "int4"
    assert entangle.inference == "fp32"
