"""Resuming an interrupted `spacy train` (spacy-entangle.ResumableAdam.v1, resume_weights.v1, the
curve logger's start_step, `variants.py train-one --resume`): the optimizer continues exactly
where it stopped, a mismatched checkpoint is refused, and a curve run stopped halfway finishes
its schedule under a real `spacy train`."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import numpy
import pytest
from _weasel import offline_env
from spacy.tokens import DocBin
from thinc.api import Config, Linear, Relu, chain, fix_random_seed
from thinc.schedules import warmup_linear

from spacy_entangle.noise import perturb_corpus
from spacy_entangle.training import read_curve
from spacy_entangle.training.budget import budget_problems
from spacy_entangle.training.curve import resumed_points
from spacy_entangle.training.resume import resumable_adam, resume_weights, state_dirs

from .test_curve import _wnut

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"L2": 0.01, "grad_clip": 1.0, "use_averages": False}


def _model(width: int = 8):
    fix_random_seed(0)
    model = chain(Relu(width, 4), Linear(3, width))
    model.initialize(X=numpy.zeros((2, 4), dtype="f"), Y=numpy.zeros((2, 3), dtype="f"))
    return model


def _step(model, optimizer, i: int) -> None:
    rng = numpy.random.RandomState(i)
    X, Y = rng.randn(5, 4).astype("f"), rng.randn(5, 3).astype("f")
    out, backprop = model.begin_update(X)
    backprop(out - Y)
    model.finish_update(optimizer)
    optimizer.step_schedules()


def _weights(model):
    return [layer.get_param("W").copy() for layer in model.layers]


def _optimizer(**kw):
    return resumable_adam(warmup_linear(0.01, 3, 20), **SETTINGS, **kw)


def test_a_resumed_optimizer_continues_the_uninterrupted_run_exactly(tmp_path):
    """Ten updates in one go, and five + (saved, reloaded into a fresh model and optimizer)
    five: the same weights bit for bit and the same learning rate (moments, per-parameter
    update counts and the schedule's position all came back)."""
    straight = _model()
    optimizer = _optimizer(state_dir=str(tmp_path / "a"), save_every=4)
    for i in range(10):
        _step(straight, optimizer, i)
    # saved after steps 0, 4 and 8 of the process; the two newest kept
    assert [p.name for p in state_dirs(tmp_path / "a")] == ["step-4", "step-8"]

    first = _model()
    first_opt = _optimizer(state_dir=str(tmp_path / "b"), save_every=4)
    for i in range(5):
        _step(first, first_opt, i)
    resumed = _model()
    resumed.from_bytes(first.to_bytes())
    resumed_opt = _optimizer(state_dir=str(tmp_path / "c"), save_every=4, resume_from=str(tmp_path / "b" / "step-4"))
    for i in range(5, 10):
        _step(resumed, resumed_opt, i)
    for a, b in zip(_weights(straight), _weights(resumed)):
        numpy.testing.assert_array_equal(a, b)
    assert resumed_opt.learn_rate == optimizer.learn_rate
    # its own saves are at spaCy's evaluation steps of the resumed process (its steps 0 and 4)
    assert [p.name for p in state_dirs(tmp_path / "c")] == ["step-5", "step-9"]


def test_weights_from_another_step_or_pipeline_are_refused(tmp_path):
    model = _model()
    optimizer = _optimizer(state_dir=str(tmp_path), save_every=2)
    for i in range(3):
        _step(model, optimizer, i)
    state = str(tmp_path / "step-2")
    # the weights of the start, not of step 2: the checksum says so
    with pytest.raises(ValueError, match="not those the optimizer state of step 2 was saved with"):
        _step(_model(), _optimizer(resume_from=state), 3)
    # another shape: another pipeline
    with pytest.raises(ValueError, match="another pipeline or config"):
        _step(_model(width=6), _optimizer(resume_from=state), 3)
    with pytest.raises(ValueError, match="no optimizer state"):
        _optimizer(resume_from=str(tmp_path / "step-1"))
    with pytest.raises(ValueError, match="use_averages = false"):
        resumable_adam(0.001, use_averages=True)


def test_a_resumed_run_has_no_warmup_problem_and_a_curve_resumes_only_at_its_end(tmp_path):
    training = {"max_steps": 50, "optimizer": {"learn_rate": {"warmup_steps": 100, "total_steps": 2000}}}
    assert budget_problems(training)  # 50 steps never warm up ...
    training["optimizer"]["resume_from"] = "optimizer/step-1949"
    assert not budget_problems(training)  # ... unless they are the last 50 of a resumed run
    curve = tmp_path / "curve.jsonl"
    curve.write_text("".join(json.dumps({"step": s, "score": 0.1}) + "\n" for s in (0, 3, 6)), encoding="utf8")
    assert [p["step"] for p in resumed_points(curve, 7)] == [0, 3, 6]
    assert resumed_points(curve, 0) == []
    with pytest.raises(ValueError, match="ends at step 6"):
        resumed_points(curve, 4)
    with pytest.raises(ValueError, match="does not exist"):
        resumed_points(tmp_path / "none.jsonl", 4)
    with pytest.raises(ValueError, match="no saved pipeline"):
        resume_weights(str(tmp_path))(None)  # type: ignore[arg-type]


VARIANTS = "variants:\n  tiny:\n    config: ner_cpu.cfg\n    char_encoder: default\n    side: subword\n"
TINY = ["--components.entangle.model.hidden_width", "32", "--components.entangle.model.n_heads", "2"]
TINY += ["--components.entangle.model.ffn_width", "64"]


def _train_one(tmp_path: Path, corpus: Path, canine_dir: Path, bert_dir: Path, *args: str) -> List[str]:
    cmd = [sys.executable, str(ROOT / "project" / "scripts" / "variants.py"), "train-one", "tiny"]
    cmd += ["--variants", str(tmp_path / "variants.yml"), "--configs-dir", str(ROOT / "configs")]
    cmd += ["--corpus-dir", str(corpus), "--subword-dir", str(bert_dir), "--char-dir", str(canine_dir)]
    cmd += ["--output", str(tmp_path / "training"), "--curve", str(tmp_path / "curve.jsonl")]
    cmd += ["--extra-dev", f"noisy={corpus / 'noisy.spacy'}", "--eval-frequency", "3", "--max-steps", "30"]
    return cmd + [*args, "--", *TINY]


def test_resume_needs_a_curve_with_a_point_and_a_saved_state(tmp_path):
    from _cli import script

    (tmp_path / "variants.yml").write_text(VARIANTS, encoding="utf8")
    base = _train_one(tmp_path, tmp_path, tmp_path, tmp_path, "--resume", "yes", "--dry-run")[2:]
    # nothing written yet: it starts from the beginning
    r = script(ROOT / "project" / "scripts" / "variants.py", *base, cwd=tmp_path)
    assert r.returncode == 0 and "no point yet: training from the start" in r.output
    assert "resume_from" not in r.output and "ResumableAdam" in r.output
    # a point, no state to go with it: not resumable, and not silently started again
    (tmp_path / "curve.jsonl").write_text(json.dumps({"step": 6, "score": 0.1}) + "\n", encoding="utf8")
    r = script(ROOT / "project" / "scripts" / "variants.py", *base, cwd=tmp_path)
    assert r.returncode != 0 and "no optimizer state for step 6" in r.output
    # a finished run (its states cleared, model-best there): nothing to do
    (tmp_path / "training" / "model-best").mkdir(parents=True)
    r = script(ROOT / "project" / "scripts" / "variants.py", *base, cwd=tmp_path)
    assert r.returncode == 0 and "finished (its curve ends at step 6): nothing to resume" in r.output
    assert "spacy train" not in r.output
    no_curve = [a for a in base if a not in ("--curve", str(tmp_path / "curve.jsonl"))]
    no_curve = no_curve[: no_curve.index("--extra-dev")] + no_curve[no_curve.index("--eval-frequency") :]
    r = script(ROOT / "project" / "scripts" / "variants.py", *no_curve, cwd=tmp_path)
    assert r.returncode != 0 and "it needs --curve" in r.output
    r = script(ROOT / "project" / "scripts" / "variants.py", *base[: -len(TINY) - 1], "--resume", "maybe", cwd=tmp_path)
    assert r.returncode != 0 and "yes or no" in r.output


def _checkpoint(folder: Path, ents_f: float, ents_p: float) -> Path:
    """A model-best folder as `spacy train` writes it, as far as choosing one reads it: the
    config's score weights and the meta's performance."""
    folder.mkdir(parents=True)
    (folder / "config.cfg").write_text(
        "[training]\n\n[training.score_weights]\nents_f = 1.0\nents_p = 0.0\nents_per_type = null\n",
        encoding="utf8",
    )
    meta = {"performance": {"ents_f": ents_f, "ents_p": ents_p, "ents_per_type": {"x": {"f": 1.0}}}}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf8")
    return folder


def test_a_resumed_run_keeps_the_best_checkpoint_of_every_loop(tmp_path):
    """`spacy train` empties model-best when a resumed loop starts: the checkpoint of a best dev
    score reached before the resume is kept aside and comes back at the end when no later
    evaluation beat it, so model-best is the best of the whole run, as its curve reports."""
    from variants_run import RESUMED, checkpoint_score, keep_best, restore_best

    out = tmp_path / "training"
    _checkpoint(out / "model-best", 0.56, 0.9)
    assert checkpoint_score(out / "model-best") == pytest.approx(0.56)  # ents_p weighs 0
    keep_best(out)  # the first resume: the interrupted loop's best goes aside
    assert not (out / "model-best").exists() and (out / RESUMED / "model-best" / "meta.json").exists()
    _checkpoint(out / "model-best", 0.54, 0.0)  # the second loop's best, worse
    keep_best(out)  # the second resume: the better one stays aside
    assert checkpoint_score(out / RESUMED / "model-best") == pytest.approx(0.56)
    _checkpoint(out / "model-best", 0.55, 0.0)  # the last loop's best, still worse
    restore_best(out)
    assert checkpoint_score(out / "model-best") == pytest.approx(0.56)
    assert not (out / RESUMED / "model-best").exists()
    # a later loop that beats it keeps its own
    _checkpoint(out / RESUMED / "model-best", 0.50, 0.0)
    restore_best(out)
    assert checkpoint_score(out / "model-best") == pytest.approx(0.56)
    restore_best(tmp_path / "never-resumed")  # nothing kept: nothing to do


@pytest.mark.slow
def test_a_curve_run_killed_halfway_finishes_its_schedule(tmp_path, shared_data, canine_dir, bert_dir):
    """`variants.py train-one --curve` to 30 steps, killed (the whole process group, as the end
    of a session does) once its curve has a point past step 3; then `--resume yes`: the curve
    goes on after the last point with the words, epochs and seconds counted on, the learning
    rate where the 30-step schedule puts it, the final step scored, and the state a resume needs
    cleared once the run is done."""
    docs = _wnut(shared_data / "wnut17" / "train.conll", 24)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    DocBin(docs=docs[:16]).to_disk(corpus / "train.spacy")
    DocBin(docs=docs[16:]).to_disk(corpus / "dev.spacy")
    perturb_corpus(corpus / "dev.spacy", corpus / "noisy.spacy", rate=0.5, seed=0, progress=False)
    (tmp_path / "variants.yml").write_text(VARIANTS, encoding="utf8")
    out, curve = tmp_path / "training", tmp_path / "curve.jsonl"
    cmd = _train_one(tmp_path, corpus, canine_dir, bert_dir)
    run = subprocess.Popen(cmd, env=offline_env(), cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while run.poll() is None and time.monotonic() < deadline:
        if curve.exists() and any(p["step"] >= 6 for p in read_curve(curve)):
            os.killpg(run.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    run.wait()
    before = read_curve(curve)
    last = before[-1]["step"]
    assert run.returncode == -signal.SIGKILL and 6 <= last < 27, (run.returncode, last)
    assert (out / "optimizer" / f"step-{last}").is_dir() and (out / "model-last").is_dir()

    resumed = subprocess.run(
        [*cmd[: -len(TINY) - 1], "--resume", "yes", "--", *TINY],
        capture_output=True,
        text=True,
        env=offline_env(),
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    after = read_curve(curve)
    assert after[: len(before)] == before
    steps = [p["step"] for p in after[len(before) : -1]]
    assert steps and steps[0] == last + 1 and all(b - a == 3 for a, b in zip(steps, steps[1:])) and steps[-1] >= 27
    # the resumed loop evaluates at LAST + 1 + 3k, never at the schedule's step 30: the final
    # weights (model-last) are scored after the run, their cost extrapolated and said so
    final = after[-1]
    assert final["step"] == 30 > steps[-1] and final["final"] and "cpu_seconds" in final["extrapolated"]
    assert set(final["scores"]) == {"dev", "noisy"} and "ents_f" in final["scores"]["noisy"]
    assert final["score"] == final["scores"]["dev"]["ents_f"]  # ner_cpu.cfg weighs ents_f alone
    assert "the final weights (step 30)" in resumed.stdout
    for key in ("words", "epoch", "cpu_seconds"):  # (spaCy's own clock counts whole seconds)
        assert [p[key] for p in after] == sorted(p[key] for p in after), key
    assert after[len(before)]["seconds"] >= before[-1]["seconds"]
    assert after[len(before)]["words"] > before[-1]["words"] and "noisy" in after[-1]["scores"]
    # the schedule went on from where it was: spaCy prints the rate it starts with
    rate_config = Config().from_disk(ROOT / "configs" / "ner_cpu.cfg", interpolate=False)
    settings = rate_config["training"]["optimizer"]["learn_rate"]
    schedule = warmup_linear(settings["initial_rate"], settings["warmup_steps"], 30)
    rate = [next(schedule) for _ in range(last + 2)][-1]
    started = float(re.search(r"Initial learn rate: ([0-9.e+-]+)", resumed.stdout).group(1))
    assert started == pytest.approx(rate) and started > 0
    assert not (out / "optimizer").exists() and not (out / "resumed").exists()
    assert (out / "model-best" / "meta.json").exists() and (out / "model-last" / "meta.json").exists()
    # model-best is the best evaluation of both loops, not only of the resumed one
    best = json.loads((out / "model-best" / "meta.json").read_text(encoding="utf8"))["performance"]["ents_f"]
    assert best == pytest.approx(max(p["scores"]["dev"]["ents_f"] for p in after if not p.get("final")), abs=1e-6)
