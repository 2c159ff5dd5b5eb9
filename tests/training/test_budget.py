"""A training budget shorter than the learning rate's warm-up or than the evaluation interval
is warned about when the pipeline is initialized for training (`spacy train`), before any
step is spent on it; a sound budget says nothing."""

import warnings

import pytest
from _pipelines import build, examples

from spacy_entangle.training.budget import budget_problems


def _training(max_steps, eval_frequency=200, warmup=100, total=None):
    schedule = {"@schedules": "warmup_linear.v1", "warmup_steps": warmup, "total_steps": total or max_steps}
    return {"max_steps": max_steps, "eval_frequency": eval_frequency, "optimizer": {"learn_rate": schedule}}


def test_a_budget_under_the_warm_up_and_the_first_evaluation_is_named():
    warm, scored = budget_problems(_training(20))
    assert "warms up over 100 steps" in warm and "ends at step 20" in warm and "20%" in warm
    assert "--training.optimizer.learn_rate.warmup_steps 2" in warm
    assert "eval_frequency 200 is more than max_steps 20" in scored and "model-best is the untrained" in scored
    # the schedule's own end counts too (the presets' max_steps follows total_steps)
    assert len(budget_problems(_training(0, total=50))) == 1


@pytest.mark.parametrize(
    "training",
    [
        _training(600),  # the shipped budget
        _training(100, eval_frequency=50, warmup=10),
        {"max_steps": 0, "eval_frequency": 200, "optimizer": {"learn_rate": 0.001}},  # spaCy's defaults
        {},
    ],
)
def test_a_sound_budget_says_nothing(training):
    assert budget_problems(training) == []


def test_initialize_warns_once_per_problem(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), store_output=False)
    nlp.config["training"]["max_steps"] = 20
    nlp.config["training"]["optimizer"]["learn_rate"] = {
        "@schedules": "warmup_linear.v1",
        "warmup_steps": 100,
        "total_steps": 20,
        "initial_rate": 5e-5,
    }
    with pytest.warns(UserWarning) as caught:
        nlp.initialize(lambda: examples(nlp))
    said = [str(w.message) for w in caught if "spacy-entangle" in str(w.message)]
    assert len(said) == 2 and "warms up over 100 steps" in said[0] and "eval_frequency 200" in said[1]
    quiet = build(canine_dir, bert_dir, components=("ner",), store_output=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        quiet.initialize(lambda: examples(quiet))
