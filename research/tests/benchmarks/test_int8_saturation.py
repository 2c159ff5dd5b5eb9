"""research/benchmarks/int8_saturation.py and the --int8-kernels what-if of the int8 benchmarks:
the probe through the engine's own sessions, and the what-if switching the engine's sessions to
ONNX Runtime's default kernels for one run only."""

import json
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def engine(monkeypatch):
    """The engine module, its INT8_KERNELS setting put back after the test (the what-if sets it)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from spacy_entangle.modeling.engines import onnx as engine

    monkeypatch.setattr(engine, "INT8_KERNELS", "exact")
    return engine


def test_the_engines_serialized_probe_is_the_model_the_benchmark_builds(engine):
    import int8_saturation

    assert engine._PROBE == int8_saturation.probe_model()
    assert engine.PROBE_EXACT == int8_saturation.K * 255 * 127


def test_the_probe_is_exact_with_the_engines_and_the_u8u8_kernels_and_says_whether_the_default_saturates(engine):
    """With the engine's kernels and the u8u8 ones the probe's product comes back exact on any CPU;
    the default kernels' is exact or about half (saturated), and the report says which."""
    import int8_saturation

    got = int8_saturation.report()
    assert got["exact"] == engine.PROBE_EXACT == 64 * 255 * 127
    assert got["exact_kernels"] == got["u8u8_kernels"] == got["exact"]
    if got["default_saturates"]:
        assert got["default_kernels"] < 0.6 * got["exact"]
    else:
        assert got["default_kernels"] == got["exact"]
    assert got["default_saturates"] == engine.default_int8_saturates()
    assert engine.INT8_KERNELS == "exact"  # the probe leaves the engine's setting as it found it


def test_use_kernels_switches_the_sessions_made_from_then_on(engine):
    from int8_saturation import use_kernels

    use_kernels("default")
    options = engine._session(engine._PROBE, threads=1).get_session_options()
    with pytest.raises(RuntimeError, match="x64quantprecision"):
        options.get_session_config_entry("session.x64quantprecision")
    use_kernels("u8u8")
    options = engine._session(engine._PROBE, threads=1).get_session_options()
    assert options.get_session_config_entry("session.x64quantprecision") == "1"
    with pytest.raises(ValueError, match="int8 kernels"):
        use_kernels("saturating")


@pytest.mark.slow
def test_int8_accuracy_records_the_kernels_and_whether_the_products_were_saturated(engine, tmp_path):
    """int8_accuracy.py --int8-kernels default scores onnx-int8 with ONNX Runtime's default
    kernels and records it: the products were saturated only where those saturate on this CPU."""
    import int8_accuracy
    import int8_saturation

    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc(f"tweet {i} about Paris and @NASA") for i in range(4)]).to_disk(tmp_path / "dev.spacy")
    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    out = tmp_path / "f1.json"
    args = [str(saved), str(tmp_path / "dev.spacy"), "--modes", "onnx-int8", "--int8-kernels", "default"]
    assert int8_accuracy.main([*args, "--output", str(out)]) == 0
    got = json.loads(out.read_text(encoding="utf8"))
    saturates = int8_saturation.report()["default_saturates"]
    assert got["int8_kernels"] == "default" and got["int8_products"] == ("saturated" if saturates else "exact")
    assert set(got["onnx-int8"]) == {"dev.spacy"} and engine.INT8_KERNELS == "default"
