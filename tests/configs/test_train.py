"""`spacy train` with the shipped CPU config (tiny offline backbones, a few steps) on real
lines from ../shared/data, then `spacy evaluate` and a load that keeps the entangle output.
ner (WNUT-17) here; the tagger and textcat configs train the same way in the task projects'
workflow tests (tests/project/test_task_projects.py: Tweebank's `train`, TweetEval's
`train-mean`), each a `spacy train` of its own, so they are not trained a second time here.
Set ENTANGLE_TRAIN_ALL_CONFIGS=1 to train all three here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from _weasel import offline_env
from spacy.cli.evaluate import evaluate
from spacy.tokens import Doc, DocBin

ROOT = Path(__file__).resolve().parents[2]
TINY = [
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
    "--training.logger.progress_bar",
    "false",
    "--nlp.batch_size",
    "16",
]


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


def _tweeteval(folder: Path, split: str, n: int):
    nlp = spacy.blank("en")
    names = dict(line.split("\t") for line in (folder / "mapping.txt").read_text().splitlines())
    texts = (folder / f"{split}_text.txt").read_text(encoding="utf8").splitlines()[:n]
    labels = (folder / f"{split}_labels.txt").read_text().split()[:n]
    docs = []
    for text, label in zip(texts, labels):
        doc = nlp.make_doc(text)
        doc.cats = {name: float(i == label) for i, name in names.items()}
        docs.append(doc)
    return docs


def _write_corpus(task: str, shared_data: Path, out: Path) -> None:
    """TASK_train.spacy and TASK_dev.spacy in OUT, from the first lines of the task's data."""
    if task == "ner":
        wnut = _wnut(shared_data / "wnut17" / "train.conll", 24)
        DocBin(docs=wnut[:16]).to_disk(out / "ner_train.spacy")
        DocBin(docs=wnut[16:]).to_disk(out / "ner_dev.spacy")
    elif task == "textcat":
        emo = shared_data / "tweeteval_emotion"
        DocBin(docs=_tweeteval(emo, "train", 16)).to_disk(out / "textcat_train.spacy")
        DocBin(docs=_tweeteval(emo, "val", 8)).to_disk(out / "textcat_dev.spacy")
    else:  # Tweebank through spaCy's own CoNLL-U converter (first 24 tweets)
        conllu = (shared_data / "tweebank" / "train.conllu").read_text(encoding="utf8").split("\n\n")
        (out / "tb.conllu").write_text("\n\n".join(conllu[:24]) + "\n\n", encoding="utf8")
        subprocess.run(
            [sys.executable, "-m", "spacy", "convert", str(out / "tb.conllu"), str(out), "-n", "1", "-c", "conllu"],
            check=True,
            capture_output=True,
            env=offline_env(),
        )
        tb = list(DocBin().from_disk(out / "tb.spacy").get_docs(spacy.blank("en").vocab))
        for doc in tb:  # Tweebank's XPOS column is empty: tag with UPOS
            for token in doc:
                token.tag_ = token.pos_
        DocBin(docs=tb[:16]).to_disk(out / "tagger_train.spacy")
        DocBin(docs=tb[16:]).to_disk(out / "tagger_dev.spacy")


@pytest.fixture
def corpora(task, tmp_path, shared_data) -> Path:
    """The corpus of the parametrized task only (the others are not trained here by default)."""
    out = tmp_path / "corpora"
    out.mkdir()
    _write_corpus(task, shared_data, out)
    return out


CONFIGS = [("ner", "ents_f"), ("tagger", "tag_acc"), ("textcat", "cats_score")]


@pytest.mark.slow
@pytest.mark.parametrize("task,score", CONFIGS if os.environ.get("ENTANGLE_TRAIN_ALL_CONFIGS") else CONFIGS[:1])
def test_spacy_train_cpu_config(task, score, corpora, canine_dir, bert_dir, tmp_path):
    out = tmp_path / "model"
    cmd = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        str(ROOT / "configs" / f"{task}_cpu.cfg"),
        "--output",
        str(out),
        "--paths.train",
        str(corpora / f"{task}_train.spacy"),
        "--paths.dev",
        str(corpora / f"{task}_dev.spacy"),
        "--paths.char_backbone",
        str(canine_dir),
        "--paths.subword_backbone",
        str(bert_dir),
        *TINY,
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, env=offline_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    meta = json.loads((out / "model-last" / "meta.json").read_text())
    assert score in meta["performance"]
    # the losses logged by spacy train: the listener's loss falls from the first to the last row
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) >= 2
    nlp = spacy.load(out / "model-last", config={"components": {"entangle": {"store_output": True}}})
    doc = nlp("RT @user: watching Star Wars in London 😀 #fun")
    assert doc._.entangle is not None  # kept when the load config asks for it
    # spaCy's `evaluate` command in this process (the trained pipeline is loaded here above)
    evaluate(str(out / "model-last"), corpora / f"{task}_dev.spacy", output=tmp_path / "metrics.json")
    assert score in json.loads((tmp_path / "metrics.json").read_text())
