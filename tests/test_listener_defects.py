"""Issue 12, defects 4, 5, 8 and 9: the listener / component glue.

4: TextCatCls.v1 applies its dropout; 5: zeros only during shape inference in
initialize (never after it, never serialised); 8: the encoder trains when the last
listening component does not update, and exclude=["entangle"] is an error; 9: a
listener without an `entangle` upstream before it is refused at initialize."""
import numpy
import pytest
import spacy
from thinc.api import SGD, set_dropout_rate

from _pipelines import build, entangle_cfg, examples, ner_model
from spacy_entangle.layers import EntangleListener

NO_OUTPUT = "No output from the upstream component 'entangle'"


def _weights(nlp):
    model = nlp.get_pipe("entangle").model.shims[0]._model
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _changed(before, after) -> bool:
    return any(not bool((before[k] == after[k]).all()) for k in before)


def _entangle_steps(nlp, sgd):
    """How many optimizer steps each entangle parameter got (thinc counts them)."""
    shim_id = nlp.get_pipe("entangle").model.shims[0].id
    return {key[1]: n for key, n in sgd.nr_update.items() if key[0] == shim_id}


# -- 4: TextCatCls.v1 dropout --------------------------------------------------------------


def test_textcat_cls_dropout_in_training_only(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=())
    nlp.add_pipe(
        "textcat",
        config={"model": {"@architectures": "spacy-entangle.TextCatCls.v1", "upstream": "entangle", "dropout": 0.5}},
    )
    nlp.initialize(lambda: examples(nlp))
    doc = nlp.get_pipe("entangle")(nlp.make_doc("Apple is buying a U.K. startup 😀"))
    model = nlp.get_pipe("textcat").model
    output = model.get_ref("output_layer")  # Softmax starts at zero: uniform whatever the input
    output.set_param("W", numpy.random.default_rng(0).normal(size=output.get_param("W").shape).astype("f"))
    predicted = model.predict([doc])
    numpy.testing.assert_array_equal(predicted, model.predict([doc]))  # predict is deterministic
    trained, _ = model.begin_update([doc])
    assert not numpy.allclose(trained, predicted)
    # spaCy's convention: a component's update sets the rate to the training dropout
    set_dropout_rate(model, 0.0)
    numpy.testing.assert_allclose(model.begin_update([doc])[0], predicted, rtol=1e-6)


def test_textcat_cls_bad_dropout_is_refused(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=())
    with pytest.raises(ValueError, match="dropout"):
        nlp.add_pipe("textcat", config={"model": {"@architectures": "spacy-entangle.TextCatCls.v1", "dropout": 1.0}})


# -- 5: no silent zeros after initialize -----------------------------------------------------


def test_disabled_upstream_right_after_initialize_raises(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    nlp.initialize(lambda: examples(nlp))
    with nlp.select_pipes(disable=["entangle"]):
        with pytest.raises(ValueError, match=NO_OUTPUT):
            nlp("Apple is nice")
    nlp.disable_pipe("entangle")
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp("Apple is nice")
    # nor do the docs initialize inferred shapes on read zeros once it is over
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp.get_pipe("ner").predict([eg.predicted for eg in examples(nlp)])


def test_saved_right_after_initialize_then_disabled_raises(canine_dir, bert_dir, tmp_path):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe", disable=["entangle"])
    with pytest.raises(ValueError, match=NO_OUTPUT):
        loaded("Apple is nice")
    # the listener's state is not in the saved model
    (listener,) = [n for n in loaded.get_pipe("ner").model.walk() if isinstance(n, EntangleListener)]
    assert "initializing" not in listener.attrs


def test_initialize_train_predict_still_works(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    for _ in range(3):
        nlp.update(exs, sgd=sgd, drop=0.1)
    doc = nlp("Apple is buying a U.K. startup")
    assert len(doc.cats) == 3 and doc._.entangle is not None


# -- 8: the encoder trains when the last listener's component does not update ----------------


def _warmed_up(canine_dir, bert_dir):
    """ner + textcat (the last listener) after two batches in spacy train's order,
    with plain SGD (no weight decay, no momentum: weights move only with a gradient).
    The heads start at zero (no gradient reaches the encoder before their first step)."""
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs, sgd=SGD(0.05, L2=0.0, grad_clip=0.0))
    assert nlp.get_pipe("entangle").listening_components[-1] == "textcat"
    for _ in range(2):
        _spacy_train_step(nlp, exs, sgd)
    return nlp, exs, sgd


def _spacy_train_step(nlp, exs, sgd, exclude=()):
    """What spacy train does per batch: nlp.update(sgd=False), then finish_update."""
    losses = nlp.update(exs, sgd=False, exclude=exclude)
    for name, proc in nlp.pipeline:
        if name not in exclude:
            proc.finish_update(sgd)
    return losses


def test_last_listener_excluded_spacy_train_order(canine_dir, bert_dir):
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    assert set(_entangle_steps(nlp, sgd).values()) == {2}
    before = _weights(nlp)
    losses = _spacy_train_step(nlp, exs, sgd, exclude=["textcat"])
    assert losses["entangle"] > 0
    assert _changed(before, _weights(nlp))
    assert set(_entangle_steps(nlp, sgd).values()) == {3}  # one step, not two


def test_last_listener_excluded_nlp_update_with_sgd(canine_dir, bert_dir):
    """nlp.update(sgd=...) finishes each component right after its update, before
    the listeners: the batch's backward pass (and step) runs at the next update."""
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    before = _weights(nlp)
    nlp.update(exs, sgd=sgd, exclude=["textcat"])
    assert not _changed(before, _weights(nlp))  # waiting for a listener that will not come
    nlp.update(exs, sgd=sgd, exclude=["textcat"])
    assert _changed(before, _weights(nlp))
    assert set(_entangle_steps(nlp, sgd).values()) == {3}  # the second batch still waits


def test_one_step_per_batch_when_every_listener_updates(canine_dir, bert_dir):
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    before = _weights(nlp)
    nlp.update(exs, sgd=sgd)
    assert _changed(before, _weights(nlp))  # the step follows the backward pass at once
    nlp.update(exs, sgd=sgd)
    assert set(_entangle_steps(nlp, sgd).values()) == {4}


def test_update_excluding_entangle_raises(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp.update(exs, sgd=sgd, exclude=["entangle"])


# -- 9: a listener needs an `entangle` upstream before it -------------------------------------


def _ner_only(canine_dir, bert_dir, upstream):
    nlp = build(canine_dir, bert_dir, components=())
    nlp.add_pipe("ner", config={"model": ner_model(upstream=upstream)})
    return nlp


def test_upstream_names_no_component(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "encoder")
    with pytest.raises(ValueError, match="'ner' listens to upstream = 'encoder'.*no component named 'encoder'"):
        nlp.initialize(lambda: examples(nlp))


def test_upstream_is_not_an_entangle_component(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "sentencizer")
    nlp.add_pipe("sentencizer", first=True)
    with pytest.raises(ValueError, match="'ner' listens to upstream = 'sentencizer'.*not an `entangle`"):
        nlp.initialize(lambda: examples(nlp))


@pytest.mark.parametrize("upstream", ["entangle", "*"])
def test_upstream_after_the_listener(canine_dir, bert_dir, upstream):
    nlp = spacy.blank("en")
    nlp.add_pipe("ner", config={"model": ner_model(upstream=upstream)})
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    with pytest.raises(ValueError, match=f"upstream = '{upstream}'.*not connected"):
        nlp.initialize(lambda: examples(nlp))


def test_no_entangle_component_at_all(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("ner", config={"model": ner_model()})
    with pytest.raises(ValueError, match="upstream = 'entangle'.*not connected"):
        nlp.initialize(lambda: examples(nlp))


def test_wildcard_upstream_still_works(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "*")
    nlp.initialize(lambda: examples(nlp))
    assert nlp.get_pipe("entangle").listening_components == ["ner"]
    assert nlp("Apple in Paris")._.entangle is not None
