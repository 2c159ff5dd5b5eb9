"""Stability training (`spacy-entangle.noise_consistency.v1`, the `entangle` component's
``consistency`` setting), on the tiny offline backbones: the attacked copies, the loss and
its gradient, and what it does to training."""

import random
from functools import partial

import numpy
import pytest
import spacy
from _pipelines import build, entangle_cfg, examples, ner_model

from spacy_entangle.noise import NoiseConsistency, create_noise_consistency, perturb_doc

CONSISTENCY = {"@misc": "spacy-entangle.noise_consistency.v1", "weight": 1.0, "level": 1.0, "rate": 1.0, "seed": 0}


def _pipeline(canine_dir, bert_dir, consistency=None):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", store_output=False)
    nlp.get_pipe("entangle").consistency = consistency
    return nlp


@pytest.mark.parametrize(
    "kw,message", [({"level": 1.5}, "level"), ({"weight": -1.0}, "weight"), ({"rate": 2.0}, "rate")]
)
def test_bad_settings_are_clear_errors(kw, message):
    with pytest.raises(ValueError, match=message):
        create_noise_consistency(**kw)


def test_copies_keep_the_tokens_and_skip_unchanged_docs():
    nlp = spacy.blank("en")
    docs = [nlp("Apple is buying a startup in London tonight"), nlp("ok !!"), nlp("")]
    picked, copies = create_noise_consistency(level=1.0, rate=1.0, seed=0).perturb(docs)
    # the second and third have no word of 4+ characters: no copy, no forward pass for them
    assert picked == [0]
    assert len(copies[0]) == len(docs[0]) and copies[0].text != docs[0].text
    assert create_noise_consistency(weight=0.0, level=1.0, rate=1.0).perturb(docs) == ([], [])
    assert create_noise_consistency(level=0.0, rate=1.0).perturb(docs) == ([], [])


def test_loss_and_gradient(canine_dir, bert_dir):
    """The loss is weight x the squared distance of the first rows (mean over the width,
    summed over tokens), 0 for a copy equal to the doc; the gradient sits on each token's
    first rows only and is the loss's derivative."""
    nlp = _pipeline(canine_dir, bert_dir)
    nlp.initialize(lambda: examples(nlp))
    entangle = nlp.get_pipe("entangle")
    doc = nlp.make_doc("Apple is buying a startup in London tonight")
    noisy, _ = perturb_doc(doc, 1.0, random.Random(0))
    clean_out, noisy_out = entangle.model.predict([doc, noisy])
    rule = NoiseConsistency(2.0, 1.0, 1.0, ("drop",), random.Random(0))
    sides = ("subword", "char")
    assert rule.loss([clean_out], [clean_out], sides)[0] == pytest.approx(0.0)
    loss, (grad,) = rule.loss([clean_out], [noisy_out], sides)
    expected = 0.0
    for side in sides:
        first_clean = clean_out.side(side)[[rows[0] for rows in _token_rows(clean_out, side)]]
        first_noisy = noisy_out.side(side)[[rows[0] for rows in _token_rows(noisy_out, side)]]
        expected += ((first_noisy - first_clean) ** 2).sum() / (2 * first_clean.shape[1])
        firsts = [rows[0] for rows in _token_rows(noisy_out, side)]
        d = grad.side(side)
        others = numpy.ones(len(d), dtype=bool)
        others[firsts] = False
        assert not d[others].any()
        numpy.testing.assert_allclose(d[firsts], 2.0 * 2.0 * (first_noisy - first_clean) / (2 * d.shape[1]), rtol=1e-5)
    assert loss == pytest.approx(2.0 * expected, rel=1e-5)


def _token_rows(data, side):
    align = data.align
    lengths = getattr(align, f"{side}_lengths")
    rows = getattr(align, f"{side}_rows")
    out, start = [], 0
    for n in lengths:
        out.append(list(rows[start : start + n]))
        start += n
    return out


def _probe_distance(nlp) -> float:
    """The consistency loss on fixed attacked copies of the training texts (seed 7)."""
    entangle = nlp.get_pipe("entangle")
    docs = [eg.predicted for eg in examples(nlp)]
    rng = random.Random(7)
    noisy = [perturb_doc(doc, 1.0, rng)[0] for doc in docs]
    outs = entangle.model.predict(docs + noisy)
    rule = NoiseConsistency(1.0, 1.0, 1.0, ("drop",), rng)
    return rule.loss(outs[: len(docs)], outs[len(docs) :], ("subword", "char"))[0]


def test_training_pulls_the_copies_to_the_clean_states(canine_dir, bert_dir):
    """Same seed, same batches: with the term the attacked copies end closer to the clean
    docs' states than without it; the term is reported as `entangle_consistency`."""
    distances = {}
    for weight in (0.0, 20.0):
        random.seed(0)
        rule = create_noise_consistency(weight=weight, level=1.0, rate=1.0, seed=0)
        nlp = _pipeline(canine_dir, bert_dir, rule)
        exs = examples(nlp)
        sgd = nlp.initialize(partial(list, exs))
        before = _probe_distance(nlp)
        for _ in range(15):
            losses = nlp.update(exs, sgd=sgd, drop=0.0)
        assert ("entangle_consistency" in losses) == (weight > 0)
        distances[weight] = _probe_distance(nlp) / before
    assert distances[20.0] < distances[0.0]


def test_config_round_trip(canine_dir, bert_dir, tmp_path):
    """The setting lives in the config: a saved pipeline loads offline with it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir), "consistency": CONSISTENCY})
    nlp.add_pipe("ner", config={"model": ner_model("subword")})
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    losses = nlp.update(exs, sgd=sgd)
    assert losses["entangle_consistency"] > 0
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe")
    assert isinstance(loaded.get_pipe("entangle").consistency, NoiseConsistency)
    assert loaded.config["components"]["entangle"]["consistency"]["weight"] == 1.0
