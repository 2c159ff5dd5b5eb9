"""The `entangle` component's state and outputs: what a
doc keeps, which listeners are read for, which settings a loaded pipeline follows."""

import warnings

import numpy
import pytest
import spacy
from _pipelines import build, entangle_cfg, examples, listener, ner_model
from spacy.tokens import DocBin
from thinc.api import SGD

from spacy_entangle.layers import EntangleListener

TEXT = "Apple is buying a U.K. startup 😀 for $1 billion"


def _initialized(canine_dir, bert_dir, **kw):
    nlp = build(canine_dir, bert_dir, **kw)
    nlp.initialize(lambda: examples(nlp))
    return nlp


@pytest.fixture(scope="module")
def saved(canine_dir, bert_dir, tmp_path_factory):
    """ner (subword) + tagger (char) + textcat, saved with the default config."""
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    nlp.add_pipe("ner", config={"model": ner_model("subword")})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("char")}})
    nlp.initialize(lambda: examples(nlp))
    path = tmp_path_factory.mktemp("saved") / "pipe"
    nlp.to_disk(path)
    return path


# -- 1 / 12: no states in the doc unless asked for ----------------------------------------------


def test_default_keeps_no_states_after_the_listeners(saved):
    nlp = spacy.load(saved)
    assert nlp.get_pipe("entangle").cfg["store_output"] is False
    docs = list(nlp.pipe([TEXT, "@john went to Paris!!!", ""]))
    assert all(doc._.entangle is None and len(doc.ents) >= 0 for doc in docs)
    assert all(len(doc) == 0 or doc[0].tag_ for doc in docs)  # the listeners did read
    # nothing left behind for docs that every listener has read
    assert not any(doc in nlp.get_pipe("entangle")._outputs for doc in docs)
    bulk = DocBin(store_user_data=True, docs=docs).to_bytes()
    plain = DocBin(store_user_data=False, docs=docs).to_bytes()
    assert len(bulk) < len(plain) + 200


def test_the_same_doc_twice_in_a_batch_is_read_twice(saved):
    """A Doc object that occurs twice in one batch gets its states for each occurrence
    (the store counts reads; the first read used to drop them for the second)."""
    nlp = spacy.load(saved)
    doc = nlp.make_doc(TEXT)
    other = nlp.make_doc(TEXT)
    once = [t.tag_ for t in list(nlp.pipe([other]))[0]]
    twice = list(nlp.pipe([doc, doc]))
    assert [t.tag_ for t in twice[0]] == once
    assert doc not in nlp.get_pipe("entangle")._outputs


def test_store_output_follows_the_load_config(saved, tmp_path):
    on = spacy.load(saved, config={"components": {"entangle": {"store_output": True}}})
    doc = on(TEXT)
    assert doc._.entangle is not None and doc._.entangle.source == "entangle"
    on.to_disk(tmp_path / "on")  # saved with store_output = true: kept on load ...
    assert spacy.load(tmp_path / "on")(TEXT)._.entangle is not None
    off = spacy.load(tmp_path / "on", config={"components": {"entangle": {"store_output": False}}})
    assert off(TEXT)._.entangle is None  # ... unless the load config says otherwise
    frozen = spacy.load(tmp_path / "on", config={"components": {"entangle": {"frozen": True}}})
    assert frozen.get_pipe("entangle").frozen


def test_listener_reads_the_doc_once_without_store_output(canine_dir, bert_dir):
    nlp = _initialized(canine_dir, bert_dir, components=("ner",), store_output=False)
    doc = nlp.get_pipe("entangle")(nlp.make_doc(TEXT))
    ner = nlp.get_pipe("ner")
    ner.predict([doc])
    with pytest.raises(ValueError, match="read before.*store_output = true"):
        ner.predict([doc])


# -- 3: the listeners enabled now decide the sides and the readers ------------------------------


def test_disabled_at_load_then_enabled(saved):
    nlp = spacy.load(saved, disable=["tagger"])
    ent = nlp.get_pipe("entangle")
    nlp("Apple in Paris")
    assert ent.model.attrs["sides"] == ("subword",)  # the tagger's char side is not computed
    nlp.enable_pipe("tagger")
    docs = list(nlp.pipe([TEXT, "so sad that Bowie died"]))
    assert all(t.tag_ for doc in docs for t in doc)
    assert ent.model.attrs["sides"] == ("subword", "char")
    assert not any(doc in ent._outputs for doc in docs)  # both listeners counted
    nlp.disable_pipe("tagger")
    nlp(TEXT)
    assert ent.model.attrs["sides"] == ("subword",)
    with nlp.select_pipes(disable=["ner"]):
        nlp.enable_pipe("tagger")
        assert all(t.tag_ for t in nlp(TEXT))
        assert ent.model.attrs["sides"] == ("char",)


def test_disabled_listener_lets_the_step_run_in_its_update(canine_dir, bert_dir):
    """nlp.update(sgd=...) with the last listener's component disabled: the backward pass
    and the step run within the update, with the listeners that did report."""
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs, sgd=SGD(0.05, L2=0.0, grad_clip=0.0))
    for _ in range(2):  # the heads start at zero: no gradient reaches the encoder at first
        nlp.update(exs, sgd=sgd)
    shim = nlp.get_pipe("entangle").model.shims[0]
    before = {k: v.detach().clone() for k, v in shim._model.state_dict().items()}
    with nlp.select_pipes(disable=["textcat"]):
        nlp.update(exs, sgd=sgd)
    assert nlp.get_pipe("entangle")._deferred.pending is None
    after = shim._model.state_dict()
    assert any(not bool((before[k] == after[k]).all()) for k in before)


def test_excluded_last_listener_warns_and_save_takes_the_step(canine_dir, bert_dir, tmp_path):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs, sgd=SGD(0.05, L2=0.0, grad_clip=0.0))
    for _ in range(2):
        nlp.update(exs, sgd=sgd)
    nlp.update(exs, sgd=sgd, exclude=["textcat"])
    with pytest.warns(UserWarning, match="textcat in `exclude`.*select_pipes"):
        nlp.update(exs, sgd=sgd, exclude=["textcat"])
    assert nlp.get_pipe("entangle")._deferred.pending is not None
    nlp.to_disk(tmp_path / "pipe")  # the waiting step is taken before saving
    assert nlp.get_pipe("entangle")._deferred.pending is None


def test_deferred_step_waits_for_the_backward_pass():
    """finish_update before any listener reported: the step waits for the batch's backward
    pass, which then steps once (DeferredBackward owns the batch, grads and optimizer)."""
    from thinc.api import Linear

    from spacy_entangle.data import EntangleData
    from spacy_entangle.pipeline.deferred import DeferredBackward

    model = Linear(2, 2).initialize()
    Y, bp = model.begin_update(model.ops.asarray2f([[1.0, 2.0]]))
    before = model.get_param("W").copy()
    deferred = DeferredBackward(model)
    batch = deferred.begin([EntangleData(Y, None, None)], lambda grads: bp(grads[0].subword), sgd=None)
    sgd = SGD(0.1, L2=0.0, grad_clip=0.0)
    assert deferred.defer_step(sgd) and deferred.step_waits
    assert numpy.array_equal(model.get_param("W"), before)  # nothing to step yet
    assert batch.add([EntangleData(model.ops.asarray2f([[1.0, 1.0]]), None, None)]) == 2.0
    assert deferred.take() is batch and deferred.pending is None and deferred.take() is None
    deferred.backward(batch)
    stepped = model.get_param("W").copy()
    assert not numpy.array_equal(stepped, before) and not deferred.grads_waiting
    deferred.step(sgd)  # no gradients waiting: no second step
    assert numpy.array_equal(model.get_param("W"), stepped)


def test_frozen_upstream_hands_listeners_a_picklable_backprop(canine_dir, bert_dir):
    """A named function, not a lambda: a listener holding it still pickles (spaCy's way)."""
    import pickle

    nlp = build(canine_dir, bert_dir, components=("ner",), frozen=True)
    exs = examples(nlp)
    nlp.initialize(lambda: exs)
    component = nlp.get_pipe("entangle")
    component.update(exs)
    assert pickle.loads(pickle.dumps(component.listeners[0]._backprop))([]) == []


# -- 4: each listener reads its own upstream --------------------------------------------------------


def test_two_entangle_components_each_listener_reads_its_own(canine_dir, bert_dir, roberta_dir):
    nlp = spacy.blank("en")
    for name, sub in (("ent_bert", bert_dir), ("ent_roberta", roberta_dir)):
        nlp.add_pipe("entangle", name=name, config={"model": entangle_cfg(canine_dir, sub), "store_output": True})
    nlp.add_pipe("ner", config={"model": ner_model("subword", upstream="ent_bert")})
    nlp.add_pipe(
        "tagger",
        config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("subword", upstream="ent_roberta")}},
    )
    nlp.initialize(lambda: examples(nlp))
    for text in (TEXT, "@john went to Paris!!! http://t.co/x"):
        doc = nlp.make_doc(text)
        for name in ("ent_bert", "ent_roberta"):
            nlp.get_pipe(name)(doc)
        expected = nlp.get_pipe("ent_bert").predict([nlp.make_doc(text)])[0].subword
        (ner_listener,) = [n for n in nlp.get_pipe("ner").model.walk() if isinstance(n, EntangleListener)]
        (read,) = ner_listener.predict([doc])
        numpy.testing.assert_allclose(read.subword, expected, atol=1e-5)
        assert read.source == "ent_bert" and doc._.entangle.source == "ent_roberta"  # the later one's
        doc = nlp(text)
        assert all(t.tag_ for t in doc)


def test_wildcard_listener_with_two_entangle_components_is_refused(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    for name in ("a", "b"):
        nlp.add_pipe("entangle", name=name, config={"model": entangle_cfg(canine_dir, bert_dir)})
    nlp.add_pipe("ner", config={"model": ner_model(upstream="*")})
    with pytest.raises(ValueError, match=r"'\*'.*2 `entangle` components come before it \(a, b\)"):
        nlp.initialize(lambda: examples(nlp))


# -- 5: settings that do not shape the weights follow the load config --------------------------


def test_runtime_settings_follow_the_load_config(saved):
    reference = spacy.load(saved)
    override = {"max_batch_chars": 100, "gradient_checkpointing": True, "backbone_lr_scale": 0.1, "dropout": 0.2}
    nlp = spacy.load(saved, config={"components": {"entangle": {"model": override}}})
    shim = nlp.get_pipe("entangle").model.shims[0]
    settings = shim.settings
    assert {k: getattr(settings, k) for k in override} == override
    assert all(layer.checkpointing for layer in shim._model.sub_layers)
    assert shim._model.sub_layers[0].cross.dropout.p == 0.2
    assert _forward_calls(nlp, 4) == 4 and _forward_calls(reference, 4) == 1  # one chunk per ~100 chars
    # the weights (and what shapes them) are the saved ones
    assert settings.hidden_width == reference.get_pipe("entangle").model.shims[0].settings.hidden_width
    a = reference.get_pipe("entangle").predict([reference.make_doc(TEXT)])[0]
    b = nlp.get_pipe("entangle").predict([nlp.make_doc(TEXT)])[0]
    numpy.testing.assert_allclose(a.subword, b.subword, atol=1e-5)


def _forward_calls(nlp, n_docs: int) -> int:
    """How many padded chunks the encoder runs for n_docs tweets (one forward each)."""
    calls = []
    hook = nlp.get_pipe("entangle").model.shims[0]._model.register_forward_hook(lambda *a: calls.append(1))
    try:
        nlp.get_pipe("entangle").predict([nlp.make_doc("@john went to Paris!!! " * 2)] * n_docs)
    finally:
        hook.remove()
    return len(calls)


# -- 6: replace_listeners gives the copy its own optimizer state ----------------------------------


def test_replace_listeners_copy_has_its_own_optimizer_state(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    nlp.replace_listeners("entangle", "ner", ["model.tok2vec"])
    original = nlp.get_pipe("entangle").model.shims[0]
    (copy,) = [shim for node in nlp.get_pipe("ner").model.walk() for shim in node.shims]
    assert copy.id != original.id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            nlp.update(exs, sgd=sgd)
    steps = {}
    for (shim_id, _), n in sgd.nr_update.items():
        steps.setdefault(shim_id, set()).add(n)
    assert steps[original.id] == {3} and steps[copy.id] == {3}  # shared: 6 steps on one state


@pytest.mark.issue(12)
def test_unknown_inference_mode_is_a_clear_error(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"inference.*'fp32', 'int8', 'bf16'"):  # the config's validation
        nlp.add_pipe("entangle", config={"inference": "int4", "model": entangle_cfg(canine_dir, bert_dir)})


def _ner_only(canine_dir, bert_dir, upstream):
    nlp = build(canine_dir, bert_dir, components=())
    nlp.add_pipe("ner", config={"model": ner_model(upstream=upstream)})
    return nlp


@pytest.mark.issue(12)
def test_upstream_names_no_component(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "encoder")
    with pytest.raises(ValueError, match="'ner' listens to upstream = 'encoder'.*no component named 'encoder'"):
        nlp.initialize(lambda: examples(nlp))


@pytest.mark.issue(12)
def test_upstream_is_not_an_entangle_component(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "sentencizer")
    nlp.add_pipe("sentencizer", first=True)
    with pytest.raises(ValueError, match="'ner' listens to upstream = 'sentencizer'.*not an `entangle`"):
        nlp.initialize(lambda: examples(nlp))


@pytest.mark.issue(12)
@pytest.mark.parametrize("upstream", ["entangle", "*"])
def test_upstream_after_the_listener(canine_dir, bert_dir, upstream):
    nlp = spacy.blank("en")
    nlp.add_pipe("ner", config={"model": ner_model(upstream=upstream)})
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    with pytest.raises(ValueError, match=f"upstream = '{upstream}'.*not connected"):
        nlp.initialize(lambda: examples(nlp))


@pytest.mark.issue(12)
def test_no_entangle_component_at_all(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("ner", config={"model": ner_model()})
    with pytest.raises(ValueError, match="upstream = 'entangle'.*not connected"):
        nlp.initialize(lambda: examples(nlp))


@pytest.mark.issue(12)
def test_wildcard_upstream_still_works(canine_dir, bert_dir):
    nlp = _ner_only(canine_dir, bert_dir, "*")
    nlp.initialize(lambda: examples(nlp))
    assert nlp.get_pipe("entangle").listening_components == ["ner"]
    assert nlp("Apple in Paris")._.entangle is not None
