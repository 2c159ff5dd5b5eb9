"""The learned gate between the two sides (EntangleListener.v2, combine = "gate")."""

import numpy
import pytest
import spacy
from thinc.api import Ops

from spacy_entangle.architectures import EntangleListener_v2
from spacy_entangle.layers.side_gate import side_gate

from .._pipelines import build, examples, listener, ner_model, train


def gated_listener() -> dict:
    return {**listener("both"), "@architectures": "spacy-entangle.EntangleListener.v2", "combine": "gate"}


def test_gate_starts_as_the_average_and_its_gradient_is_exact():
    rng = numpy.random.default_rng(0)
    gate = side_gate()
    X = rng.normal(size=(5, 8)).astype("float32")
    gate.initialize(X=X)
    assert gate.get_dim("nO") == 4
    numpy.testing.assert_allclose(gate.predict(X), (X[:, :4] + X[:, 4:]) / 2, atol=1e-6)
    # away from the start: compare the backward with finite differences (float64)
    for node in gate.walk():
        node.ops = Ops(numpy)  # the generic ops: float64, for finite differences
    g = gate.layers[0]  # thinc's Sigmoid holds W and b
    W = rng.normal(size=(4, 8))
    b = rng.normal(size=4)
    X64 = X.astype("float64")
    dY = rng.normal(size=(5, 4))
    g.set_param("W", W.copy())
    g.set_param("b", b.copy())
    _, backprop = gate(X64, is_train=True)
    dX = backprop(dY)

    def loss(values: dict) -> float:
        g.set_param("W", values["W"])
        g.set_param("b", values["b"])
        return float((gate.predict(values["X"]) * dY).sum())

    point = {"W": W, "b": b, "X": X64}
    eps = 1e-6
    for name, value in point.items():
        numeric = numpy.zeros_like(value)
        for i in numpy.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[i] += eps
            down[i] -= eps
            numeric[i] = (loss({**point, name: up}) - loss({**point, name: down})) / (2 * eps)
        analytic = dX if name == "X" else g.get_grad(name)
        numpy.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="needs side = 'both'"):
        EntangleListener_v2(side="subword", combine="gate")
    with pytest.raises(ValueError, match="combine must be 'concat' or 'gate'"):
        EntangleListener_v2(side="both", combine="sum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="equal width"):
        side_gate().initialize(X=numpy.zeros((2, 5), dtype="float32"))


def test_gated_ner_trains_saves_and_replaces_its_listener(canine_dir, bert_dir, tmp_path):
    """NER on a gated listener: the gate learns, the listener width is the encoder's (not 2 x),
    the pipeline round-trips, and replace_listeners keeps the gate (EntangleTok2Vec.v2)."""
    nlp = build(canine_dir, bert_dir, components=())
    nlp.add_pipe("ner", config={"model": {**ner_model("both"), "tok2vec": gated_listener()}})
    history = train(nlp, n_steps=25)
    first, last = (numpy.mean([h["ner"] for h in part]) for part in (history[:3], history[-3:]))
    assert last < first, history
    tok2vec = nlp.get_pipe("ner").model.get_ref("tok2vec")
    gate = next(node for node in tok2vec.walk() if node.name == "entangle-side-gate")
    width = nlp.get_pipe("entangle").model.get_dim("nO")
    assert gate.get_dim("nI") == 2 * width and gate.get_dim("nO") == width
    assert numpy.abs(gate.layers[0].get_param("W")).sum() > 0  # it moved from its zero start

    texts = [ex.reference.text for ex in examples(nlp)]
    expected = [[(e.text, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe")
    assert [[(e.text, e.label_) for e in doc.ents] for doc in loaded.pipe(texts)] == expected

    loaded.replace_listeners("entangle", "ner", ["model.tok2vec"])
    cfg = loaded.config["components"]["ner"]["model"]["tok2vec"]
    assert cfg["@architectures"] == "spacy-entangle.EntangleTok2Vec.v2" and cfg["combine"] == "gate"
    loaded.remove_pipe("entangle")
    assert [[(e.text, e.label_) for e in doc.ents] for doc in loaded.pipe(texts)] == expected
    loaded.to_disk(tmp_path / "ner_only")
    again = spacy.load(tmp_path / "ner_only")
    assert [[(e.text, e.label_) for e in doc.ents] for doc in again.pipe(texts)] == expected
