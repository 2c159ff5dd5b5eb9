"""Every check of the shipped configs lives here. spaCy's own config tools accept each one:
`spacy debug config` and `spacy debug data` (which builds the pipeline, initializes it and
reads the corpora), run in-process on the tiny offline backbones and a small corpus with every
annotation the configs train on; the optimizer block has no variables; init-config (and
--base) writes configs spaCy accepts; the paper baselines build."""
import random
from pathlib import Path

import pytest
from spacy.cli.debug_config import debug_config
from spacy.cli.debug_data import debug_data
from spacy.tokens import Doc, DocBin, Span
from spacy.vocab import Vocab

import spacy_entangle  # noqa: F401  (registers the factories and the char_tags extension)
from spacy_entangle.configs import config_path

from _cli import cli

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
        # the CPU presets' max_steps refers to it: one number for the budget and the schedule
        "training.optimizer.learn_rate.total_steps": 4,
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


def _variables(block) -> list:
    if isinstance(block, dict):
        return [v for value in block.values() for v in _variables(value)]
    return [block] if isinstance(block, str) and "${" in block else []


@pytest.mark.parametrize("cfg_path", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_optimizer_block_has_no_variables_and_the_budget_follows_the_schedule(cfg_path):
    """spaCy's Language.create_optimizer() (`debug data`, a bare nlp.initialize()) resolves
    [training.optimizer] alone and uninterpolated: a `${training.max_steps}` there fails with
    "total_steps '${training.max_steps}' is not int". So the reference runs the other way: the
    CPU presets' max_steps IS the schedule's total_steps, one override moves both."""
    from spacy.util import load_config

    raw = load_config(cfg_path, interpolate=False)
    assert _variables(raw["training"]["optimizer"]) == []
    if cfg_path.name.endswith("_cpu.cfg"):
        assert raw["training"]["max_steps"] == "${training.optimizer.learn_rate.total_steps}"
        cfg = load_config(cfg_path, overrides={"training.optimizer.learn_rate.total_steps": 321}, interpolate=True)
        assert cfg["training"]["max_steps"] == cfg["training"]["optimizer"]["learn_rate"]["total_steps"] == 321
    else:  # the paper presets run by epochs (max_steps 0) over a fixed schedule
        assert raw["training"]["max_steps"] == 0 and raw["training"]["max_epochs"] > 0


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

    out = tmp_path / "all.cfg"
    args = ["init-config", str(out), "--pipeline", "ner,tagger,textcat", "--preset", "cpu",
            "--char-backbone", str(canine_dir), "--subword-backbone", str(bert_dir), "--lang", "en"]
    result = cli(*args)
    assert result.returncode == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["nlp"]["pipeline"] == ["entangle", "ner", "tagger", "textcat"]
    assert cfg["paths"]["char_backbone"] == str(canine_dir) and cfg["paths"]["subword_backbone"] == str(bert_dir)
    weights = cfg["training"]["score_weights"]
    assert weights["ents_f"] == weights["tag_acc"] == weights["cats_score"] == pytest.approx(0.33)
    assert cfg["training"]["optimizer"]["learn_rate"]["initial_rate"] == 0.0003  # the preset's, not Adam's 1e-3
    assert cfg["training"]["max_steps"] == "${training.optimizer.learn_rate.total_steps}"
    assert _variables(cfg["training"]["optimizer"]) == []
    overrides = {k: v for k, v in _overrides(out, corpus, canine_dir, bert_dir).items() if "backbone" not in k}
    debug_config(out, overrides=overrides)
    debug_data(out, config_overrides=overrides, silent=False)
    assert "Pipeline can be initialized with data" in capsys.readouterr().out
    # bad input: one clear line, exit code 1
    for bad, message in [(["--pipeline", "ner,parser", "--force"], "--pipeline takes components among ner, tagger, textcat"),
                         (["--preset", "gpu", "--force"], "--preset must be one of cpu, paper"),
                         ([], "exists; pass --force")]:
        result = cli("init-config", str(out), *bad)
        assert result.returncode == 1 and message in result.output, result.output


MINIMAL = """
[nlp]
lang = "de"
pipeline = ["entangle","ner"]

[components]

[components.entangle]
factory = "entangle"

[components.entangle.model]
@architectures = "spacy-entangle.EntangleModel.v1"
char_backbone = "{char}"
subword_backbone = "{subword}"

[components.ner]
factory = "ner"

[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
hidden_width = 48
maxout_pieces = 2
use_upper = false

[components.ner.model.tok2vec]
@architectures = "spacy-entangle.EntangleListener.v1"
"""


def test_a_minimal_config_is_filled_from_the_preset_not_from_spacys_defaults(tmp_path, canine_dir, bert_dir):
    """`spacy init fill-config` fills a minimal entangle config with spaCy's defaults (Adam at
    1e-3, no warm-up); `init-config --base` fills it from the preset, the base's values winning."""
    from spacy.cli.init_config import fill_config
    from spacy.util import load_config

    minimal = tmp_path / "minimal.cfg"
    minimal.write_text(MINIMAL.format(char=canine_dir, subword=bert_dir), encoding="utf8")
    fill_config(tmp_path / "spacy_filled.cfg", minimal, silent=True)
    spacy_filled = load_config(tmp_path / "spacy_filled.cfg", interpolate=False)
    assert spacy_filled["training"]["optimizer"]["learn_rate"] == 0.001  # why the README points at --base

    out = tmp_path / "filled.cfg"
    result = cli("init-config", str(out), "--base", str(minimal))
    assert result.returncode == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["nlp"]["lang"] == "de" and cfg["nlp"]["pipeline"] == ["entangle", "ner"]
    assert list(cfg["components"]) == ["entangle", "ner"]
    assert cfg["components"]["ner"]["model"]["hidden_width"] == 48  # the base's
    assert cfg["components"]["entangle"]["model"]["char_backbone"] == str(canine_dir)
    schedule = cfg["training"]["optimizer"]["learn_rate"]
    assert schedule["@schedules"] == "warmup_linear.v1" and schedule["initial_rate"] == 0.0003  # the preset's
    assert cfg["training"]["max_steps"] == "${training.optimizer.learn_rate.total_steps}"
    assert cfg["training"]["score_weights"]["ents_f"] == 1.0
    # a base whose pipeline names a component it gives no block for: one clear line
    bad = tmp_path / "bad.cfg"
    bad.write_text(MINIMAL.format(char=canine_dir, subword=bert_dir).replace('"ner"]', '"ner","mine"]'), encoding="utf8")
    result = cli("init-config", str(tmp_path / "bad_out.cfg"), "--base", str(bad))
    assert result.returncode == 1 and "without a [components.NAME] block: mine" in result.output, result.output


def test_paper_baseline_configs_build(bert_dir):
    """The paper baselines fill and build (on a local backbone: their hub names are not
    reachable here, and they train on a GPU)."""
    from spacy.util import load_config, load_model_from_config

    for name, pipe in (("baseline_tagger_paper.cfg", "tagger"), ("baseline_textcat_paper.cfg", "textcat")):
        config = load_config(config_path(name), overrides={"paths.subword_backbone": str(bert_dir)},
                             interpolate=False)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        assert nlp.pipe_names == ["transformer", pipe], name
        assert config["components"]["transformer"]["model"]["mixed_precision"] is True
        assert config["training"]["max_epochs"] == 50
