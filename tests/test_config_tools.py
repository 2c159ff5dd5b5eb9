"""spaCy's own config tools accept every shipped config: `spacy debug config` and `spacy debug
data` (which builds the pipeline, initializes it and reads the corpora), run in-process on the
tiny offline backbones and a small corpus with every annotation the configs train on."""
import random
from pathlib import Path

import pytest
from spacy.cli.debug_config import debug_config
from spacy.cli.debug_data import debug_data
from spacy.tokens import Doc, DocBin, Span
from spacy.vocab import Vocab

import spacy_entangle  # noqa: F401  (registers the factories and the char_tags extension)

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.cfg"))
WORDS = ["Apple", "is", "buying", "a", "startup", "in", "London", "#lol", "😀", "tmrw"]
TAGS = ["PROPN", "AUX", "VERB", "DET", "NOUN", "ADP", "PROPN", "X", "SYM", "NOUN"]
CATS = ["anger", "joy", "optimism", "sadness"]


def _docs(n: int, seed: int):
    rng = random.Random(seed)
    vocab = Vocab()
    docs = []
    for i in range(n):
        k = rng.randint(4, len(WORDS))
        words, tags = WORDS[:k] + [f"n{seed}x{i}"], TAGS[:k] + ["NUM"]  # no doc in both splits
        doc = Doc(vocab, words=words, tags=tags, pos=tags)
        doc.ents = [Span(doc, 0, 1, label="corporation")] + ([Span(doc, 6, 7, label="location")] if k > 6 else [])
        doc.spans["sc"] = list(doc.ents)  # spancat_cpu.cfg
        doc.cats = {c: float(c == CATS[i % len(CATS)]) for c in CATS}
        # char_tagger: one label per character (code-switching: "lang1" / "lang2" / "other")
        doc._.char_tags = [None if ch == " " else ("lang2" if j % 7 == 0 else "lang1") for j, ch in enumerate(doc.text)]
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("config_tools")
    # 100+ training docs: fewer is an error of `debug data` (too few to train a new pipeline)
    for split, n, seed in (("train", 120, 0), ("dev", 8, 1)):
        DocBin(docs=_docs(n, seed), store_user_data=True).to_disk(folder / f"{split}.spacy")
    return folder


def _overrides(cfg_path: Path, corpus: Path, canine_dir: Path, bert_dir: Path) -> dict:
    overrides = {
        "paths.train": str(corpus / "train.spacy"),
        "paths.dev": str(corpus / "dev.spacy"),
        "paths.subword_backbone": str(bert_dir),
        "training.max_steps": 4,
    }
    text = cfg_path.read_text(encoding="utf8")
    if "char_backbone" in text:
        overrides["paths.char_backbone"] = str(canine_dir)
    if 'factory = "entangle"' in text:  # the tiny backbones' sizes
        overrides.update({
            "components.entangle.model.hidden_width": 32,
            "components.entangle.model.n_heads": 2,
            "components.entangle.model.ffn_width": 64,
        })
    return overrides


@pytest.mark.parametrize("cfg_path", CONFIGS, ids=[c.name for c in CONFIGS])
def test_spacy_debug_config_and_data(cfg_path, corpus, canine_dir, bert_dir, capsys):
    overrides = _overrides(cfg_path, corpus, canine_dir, bert_dir)
    debug_config(cfg_path, overrides=overrides)
    debug_data(cfg_path, config_overrides=overrides, silent=False)
    out = capsys.readouterr().out
    assert "Config is valid" in out
    assert "Corpus is loadable" in out
    assert "Pipeline can be initialized with data" in out


def test_init_config_writes_a_complete_config_spacy_accepts(tmp_path, corpus, canine_dir, bert_dir, capsys):
    """`init-config --pipeline ner,tagger,textcat`: one entangle, three listeners, the score
    weights spread over the tasks; spaCy's debug config and debug data accept it."""
    from spacy.util import load_config
    from typer.testing import CliRunner

    from spacy_entangle.cli import app

    out = tmp_path / "all.cfg"
    args = ["init-config", str(out), "--pipeline", "ner,tagger,textcat", "--preset", "cpu",
            "--char-backbone", str(canine_dir), "--subword-backbone", str(bert_dir), "--lang", "en"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["nlp"]["pipeline"] == ["entangle", "ner", "tagger", "textcat"]
    assert cfg["paths"]["char_backbone"] == str(canine_dir) and cfg["paths"]["subword_backbone"] == str(bert_dir)
    weights = cfg["training"]["score_weights"]
    assert weights["ents_f"] == weights["tag_acc"] == weights["cats_score"] == pytest.approx(0.33)
    assert cfg["training"]["optimizer"]["learn_rate"]["initial_rate"] == 0.0003  # the preset's, not Adam's 1e-3
    overrides = {k: v for k, v in _overrides(out, corpus, canine_dir, bert_dir).items() if "backbone" not in k}
    debug_config(out, overrides=overrides)
    debug_data(out, config_overrides=overrides, silent=False)
    assert "Pipeline can be initialized with data" in capsys.readouterr().out
    # bad input: one clear line, exit code 1
    for bad, message in [(["--pipeline", "ner,parser", "--force"], "--pipeline takes components among ner, tagger, textcat"),
                         (["--preset", "gpu", "--force"], "--preset must be one of cpu, paper"),
                         ([], "exists; pass --force")]:
        result = CliRunner().invoke(app, ["init-config", str(out), *bad])
        assert result.exit_code == 1 and message in result.output, result.output
