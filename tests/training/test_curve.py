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
from spacy_entangle.training import count_words, read_curve

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
