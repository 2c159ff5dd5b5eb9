"""The ONNX Runtime engine leaves the user's process as it found it (modeling/engines/onnx.py):
an export redirects no stdout, switches off no logging and flips no torch flag, so another
thread's prints, warnings and log records all arrive; two threads exporting at once both get
a working engine; ONNX Runtime's threads follow torch's thread count at prediction time."""

import logging
import sys
import threading
import warnings

import pytest
import spacy
import torch
from _pipelines import TEXTS, build, train


@pytest.fixture(scope="module")
def plain(tmp_path_factory, grown_dir, bert_dir):
    """The shipped shape on tiny backbones, saved without graphs (each load exports)."""
    for name in ("onnxruntime", "onnx", "onnxscript"):
        pytest.importorskip(name)
    nlp = build(grown_dir, bert_dir, components=("ner",), side="both", n_coattention=1, store_output=False)
    train(nlp, n_steps=2)
    out = tmp_path_factory.mktemp("citizen") / "p"
    nlp.to_disk(out)
    return out


def _onnx(path):
    return spacy.load(path, config={"components": {"entangle": {"inference": "onnx"}}})


def _engine_parts(nlp):
    from spacy_entangle.modeling.engines.onnx import parts

    return sorted(parts(nlp.get_pipe("entangle").model.shims[0]._fast_model))


def _process_state():
    return sys.stdout, logging.root.manager.disable, torch.backends.mha.get_fastpath_enabled()


def test_an_export_leaves_another_threads_prints_warnings_and_logs_alone(plain, capsys):
    nlp = _onnx(plain)
    records = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    other = logging.getLogger("test.another_thread")
    other.addHandler(handler)
    before = _process_state()
    done = threading.Event()
    sent = []

    def chatter() -> None:
        while not done.is_set() or len(sent) < 20:
            i = len(sent)
            print(f"another thread {i}")
            warnings.warn(f"another thread {i}", UserWarning, stacklevel=1)
            other.warning("another thread %d", i)
            sent.append(i)
            done.wait(0.002)

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            thread = threading.Thread(target=chatter)
            thread.start()
            try:
                nlp(TEXTS[0][0])  # the first prediction exports
            finally:
                done.set()
                thread.join()
    finally:
        other.removeHandler(handler)
    assert _engine_parts(nlp), "the graphs were exported"
    assert _process_state() == before
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("another thread")]
    assert len(printed) == len(sent)
    assert len([w for w in caught if str(w.message).startswith("another thread")]) == len(sent)
    assert len(records) == len(sent)


def test_two_threads_exporting_at_once_both_get_an_engine_and_change_nothing(plain):
    pipelines = [_onnx(plain), _onnx(plain)]
    before = _process_state()
    barrier = threading.Barrier(len(pipelines))
    errors = []

    def first_prediction(nlp) -> None:
        try:
            barrier.wait()
            nlp(TEXTS[1][0])
        except Exception as err:  # noqa: BLE001 - reported by the test
            errors.append(err)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=first_prediction, args=(nlp,)) for nlp in pipelines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert not [w for w in caught if "ONNX export of" in str(w.message)]
    assert _process_state() == before
    expected = ["char_encoder.words", "subword_encoder"]
    assert [_engine_parts(nlp) for nlp in pipelines] == [expected, expected]


def test_onnx_runtime_threads_follow_torch_at_prediction_time(plain):
    nlp = _onnx(plain)
    threads = torch.get_num_threads()
    try:
        seen = []
        for n in (2, 1):
            torch.set_num_threads(n)
            nlp(TEXTS[2][0])
            engine = nlp.get_pipe("entangle").model.shims[0]._fast_model
            session = engine.subword_encoder._graphs["input_ids"].session
            seen.append(session.get_session_options().intra_op_num_threads)
    finally:
        torch.set_num_threads(threads)
    assert seen == [2, 1]
