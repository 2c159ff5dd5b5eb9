"""The deferred backward pass (pipeline/deferred.py): the encoder trains once per batch when the
last listener does not update, and excluding `entangle` from an update is an error."""

import pytest
from _pipelines import build, examples
from thinc.api import SGD


def _weights(nlp):
    model = nlp.get_pipe("entangle").model.shims[0]._model
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _changed(before, after) -> bool:
    return any(not bool((before[k] == after[k]).all()) for k in before)


def _entangle_steps(nlp, sgd):
    """How many optimizer steps each entangle parameter got (thinc counts them)."""
    shim_id = nlp.get_pipe("entangle").model.shims[0].id
    return {key[1]: n for key, n in sgd.nr_update.items() if key[0] == shim_id}


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


@pytest.mark.issue(12)
def test_last_listener_excluded_spacy_train_order(canine_dir, bert_dir):
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    assert set(_entangle_steps(nlp, sgd).values()) == {2}
    before = _weights(nlp)
    losses = _spacy_train_step(nlp, exs, sgd, exclude=["textcat"])
    assert losses["entangle"] > 0
    assert _changed(before, _weights(nlp))
    assert set(_entangle_steps(nlp, sgd).values()) == {3}  # one step, not two


@pytest.mark.issue(12)
def test_last_listener_excluded_nlp_update_with_sgd(canine_dir, bert_dir):
    """nlp.update(sgd=...) finishes each component right after its update, before
    the listeners: the batch's backward pass (and step) runs at the next update."""
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    before = _weights(nlp)
    nlp.update(exs, sgd=sgd, exclude=["textcat"])
    assert not _changed(before, _weights(nlp))  # waiting for a listener that will not come
    with pytest.warns(UserWarning, match="select_pipes"):  # which says how not to wait
        nlp.update(exs, sgd=sgd, exclude=["textcat"])
    assert _changed(before, _weights(nlp))
    assert set(_entangle_steps(nlp, sgd).values()) == {3}  # the second batch still waits


@pytest.mark.issue(12)
def test_one_step_per_batch_when_every_listener_updates(canine_dir, bert_dir):
    nlp, exs, sgd = _warmed_up(canine_dir, bert_dir)
    before = _weights(nlp)
    nlp.update(exs, sgd=sgd)
    assert _changed(before, _weights(nlp))  # the step follows the backward pass at once
    nlp.update(exs, sgd=sgd)
    assert set(_entangle_steps(nlp, sgd).values()) == {4}


NO_OUTPUT = "No output from the upstream component 'entangle'"


@pytest.mark.issue(12)
def test_update_excluding_entangle_raises(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    with pytest.raises(ValueError, match=NO_OUTPUT):
        nlp.update(exs, sgd=sgd, exclude=["entangle"])
