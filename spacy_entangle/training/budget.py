"""A training budget that cannot do what it is meant to, said before the run instead of found
after it: a learning-rate warm-up that the schedule never finishes (the presets warm up over
100 steps, so a trial run of 20 steps trains at a fifth of the peak rate at most), and an
evaluation interval longer than the run (spaCy then scores dev only at step 0, and
``model-best`` is the untrained pipeline)."""

from typing import Any, List, Mapping

from confection import Config, ConfigValidationError


def budget_problems(training: Mapping[str, Any]) -> List[str]:
    """What is wrong with the ``[training]`` section's budget (interpolated), one sentence
    each; empty when nothing is. Reads ``max_steps``, ``eval_frequency`` and a
    ``warmup_steps`` / ``total_steps`` schedule (thinc's ``warmup_linear``)."""
    problems = []
    max_steps = training.get("max_steps") or 0
    optimizer = training.get("optimizer")
    schedule = optimizer.get("learn_rate") if isinstance(optimizer, Mapping) else None
    # a resumed run (spacy-entangle.ResumableAdam.v1) starts where the schedule was: its
    # max_steps counts the steps left, not the schedule's
    resumed = isinstance(optimizer, Mapping) and bool(optimizer.get("resume_from"))
    if isinstance(schedule, Mapping) and not resumed:
        warmup, total = schedule.get("warmup_steps"), schedule.get("total_steps")
        ends = [n for n in (total, max_steps) if isinstance(n, int) and n > 0]
        end = min(ends) if ends else 0
        if isinstance(warmup, int) and end and end <= warmup:
            problems.append(
                f"the learning rate warms up over {warmup} steps ([training.optimizer.learn_rate] "
                f"warmup_steps) but training ends at step {end}, so it never reaches the peak rate "
                f"(at most {end / warmup:.0%} of it); set warmup_steps to about a tenth of the budget, "
                f"e.g. --training.optimizer.learn_rate.warmup_steps {max(1, end // 10)}"
            )
    eval_frequency = training.get("eval_frequency")
    if isinstance(eval_frequency, int) and max_steps and eval_frequency > max_steps:
        problems.append(
            f"[training] eval_frequency {eval_frequency} is more than max_steps {max_steps}: dev is "
            "scored only before the first step, so model-best is the untrained pipeline; set "
            f"e.g. --training.eval_frequency {max(1, max_steps // 4)}"
        )
    return problems


def config_budget_problems(config: Config) -> List[str]:
    """``budget_problems`` of a pipeline's config (``nlp.config``); none when it has no
    ``[training]`` section or its variables do not resolve (spaCy reports those itself)."""
    if "training" not in config:
        return []
    try:
        training = config.interpolate()["training"]
    except (ConfigValidationError, KeyError, ValueError):
        return []
    return budget_problems(training)
