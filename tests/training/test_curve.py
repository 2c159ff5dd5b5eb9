"""The learning-curve logger (spacy-entangle.CurveLogger.v1) under a real `spacy train`: tiny
offline backbones, a few steps, WNUT-17 lines from ../shared/data."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from _weasel import offline_env
from spacy.tokens import Doc, DocBin

from spacy_entangle.noise import perturb_corpus
from spacy_entangle.training import count_words, final_point, read_curve

ROOT = Path(__file__).resolve().parents[2]


def _wnut(path: Path, n: int):
    nlp = spacy.blank("en")
    docs, words, tags = [], [], []
    for line in path.read_text(encoding="utf8").splitlines() + [""]:
        if not line.strip():
            if words:
                docs.append(Doc(nlp.vocab, words=words, ents=tags))
                words, tags = [], []
                if len(docs) == n:
                    break
            continue
        word, tag = line.split("\t")
        words.append(word)
        tags.append(tag)
    return docs


@pytest.fixture(scope="module")
def corpora(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("curve_corpora")
    docs = _wnut(shared_data / "wnut17" / "train.conll", 24)
    DocBin(docs=docs[:16]).to_disk(out / "train.spacy")
    DocBin(docs=docs[16:]).to_disk(out / "dev.spacy")
    perturb_corpus(out / "dev.spacy", out / "dev_noise0.5.spacy", rate=0.5, seed=0, progress=False)
    return out


def _train(corpora, canine_dir, bert_dir, out, *extra):
    cmd = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        str(ROOT / "configs" / "ner_cpu.cfg"),
        "--output",
        str(out),
        "--paths.train",
        str(corpora / "train.spacy"),
        "--paths.dev",
        str(corpora / "dev.spacy"),
        "--paths.char_backbone",
        str(canine_dir),
        "--paths.subword_backbone",
        str(bert_dir),
        "--components.entangle.model.hidden_width",
        "32",
        "--components.entangle.model.n_heads",
        "2",
        "--components.entangle.model.ffn_width",
        "64",
        "--training.max_steps",
        "6",
        "--training.eval_frequency",
        "3",
        "--training.logger.@loggers",
        "spacy-entangle.CurveLogger.v1",
        "--training.logger.path",
        str(out / "curve.jsonl"),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=offline_env(), cwd=out.parent)


@pytest.mark.slow
def test_the_curve_holds_one_point_per_evaluation_with_the_extra_corpora(corpora, canine_dir, bert_dir, tmp_path):
    out = tmp_path / "model"
    extra = {"dev_again": str(corpora / "dev.spacy"), "dev_noise0.5": str(corpora / "dev_noise0.5.spacy")}
    run = _train(corpora, canine_dir, bert_dir, out, "--training.logger.extra_dev", json.dumps(extra))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    points = read_curve(out / "curve.jsonl")
    assert [p["step"] for p in points] == [0, 3, 6]
    words = count_words(corpora / "train.spacy")
    for point in points:
        assert set(point["scores"]) == {"dev", "dev_again", "dev_noise0.5"}
        assert point["score"] == pytest.approx(point["scores"]["dev"]["ents_f"])
        # the same corpus scored by the logger and by spaCy's loop: the same weights, the same figure
        assert point["scores"]["dev_again"]["ents_f"] == pytest.approx(point["scores"]["dev"]["ents_f"])
        assert "ents_f" in point["scores"]["dev_noise0.5"]
        assert point["passes"] == pytest.approx(point["words"] / words, abs=1e-4)
    assert points[-1]["words"] > points[0]["words"]
    assert points[-1]["cpu_seconds"] >= points[0]["cpu_seconds"] >= 0
    assert "curve @ step 3: dev_again ents_f=" in run.stdout
    # the pipeline is trained and saved as with the console logger
    assert (out / "model-best" / "meta.json").exists()


@pytest.mark.slow
def test_the_curve_logger_refuses_parameter_averages(corpora, canine_dir, bert_dir, tmp_path):
    out = tmp_path / "model"
    run = _train(corpora, canine_dir, bert_dir, out, "--training.optimizer.use_averages", "true")
    assert run.returncode != 0
    assert "use_averages = false" in run.stdout + run.stderr


def test_a_missing_extra_corpus_is_named(tmp_path):
    from spacy_entangle.training.curve import curve_logger

    with pytest.raises(ValueError, match="nowhere.spacy"):
        curve_logger(str(tmp_path / "c.jsonl"), extra_dev={"x": str(tmp_path / "nowhere.spacy")})


def test_the_final_point_scores_the_weights_and_extrapolates_the_cost_at_the_mean_rate(tmp_path):
    """A run's final weights: dev (the config's corpus and weights) and the extra corpora scored
    as at an evaluation; words, passes and seconds at the curve's mean rate per step, not the
    rate of the last two points (here a resume's start-up between steps 100 and 101)."""
    dev = tmp_path / "dev.spacy"
    blank = spacy.blank("en")
    DocBin(docs=[blank.make_doc("a tweet"), blank.make_doc("another one here")]).to_disk(dev)
    config = blank.config
    config["paths"]["dev"] = str(dev)
    nlp = spacy.util.load_model_from_config(config)
    points = [
        {"step": 0, "epoch": 0, "words": 0, "passes": 0.0, "seconds": 0.0, "cpu_seconds": 0.0},
        {"step": 100, "epoch": 0, "words": 1000, "passes": 0.5, "seconds": 11.0, "cpu_seconds": 9.0},
        {"step": 101, "epoch": 1, "words": 1010, "passes": 0.505, "seconds": 31.0, "cpu_seconds": 21.0},
    ]
    point = final_point(nlp, points, 200, {"noisy": dev})
    assert point["step"] == 200 and point["final"] is True and point["epoch"] == 1 and point["losses"] == {}
    assert point["words"] == 1010 + 99 * 10 and point["passes"] == pytest.approx(1.0)
    assert point["seconds"] == round(31.0 + 99 * 31.0 / 101, 1) and point["cpu_seconds"] == round(
        21.0 + 99 * 21.0 / 101, 1
    )
    assert set(point["extrapolated"]) == {"epoch", "words", "passes", "seconds", "cpu_seconds"}
    assert point["scores"]["dev"]["token_acc"] == 1.0 and point["scores"]["noisy"] == point["scores"]["dev"]
    with pytest.raises(ValueError, match="not after the curve's last point"):
        final_point(nlp, points, 101, {})
    with pytest.raises(ValueError, match="no point"):
        final_point(nlp, [], 5, {})
