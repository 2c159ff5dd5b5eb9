"""Every check of the shipped configs lives here. spaCy's own config tools accept each one:
`spacy debug config` and `spacy debug data` (which builds the pipeline, initializes it and
reads the corpora), run in-process on the tiny offline backbones and a small corpus with every
annotation the configs train on; the optimizer block has no variables; init-config (and
--base) writes configs spaCy accepts; the paper baselines build."""

import importlib
import random
from pathlib import Path

import pytest
from _cli import cli
from spacy.cli.debug_config import debug_config
from spacy.cli.debug_data import debug_data
from spacy.tokens import Doc, DocBin, Span
from spacy.vocab import Vocab

import spacy_entangle  # noqa: F401  (registers the factories and the char_tags extension)
from spacy_entangle.configs import config_names, config_path
from spacy_entangle.configs.compose import compose, merge, parse, render
from spacy_entangle.configs.shipped import SHIPPED

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.cfg"))
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
        morphs = ["Number=Sing" if t in ("NOUN", "PROPN") else "" for t in tags]  # morphologizer
        doc = Doc(vocab, words=words, tags=tags, pos=tags, morphs=morphs)
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
        overrides.update(
            {
                "components.entangle.model.hidden_width": 32,
                "components.entangle.model.n_heads": 2,
                "components.entangle.model.ffn_width": 64,
            }
        )
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
    if cfg_path.name.startswith("baseline_"):
        pytest.importorskip("spacy_transformers")  # the `baseline` extra; not in the core suite's venv
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
    args = [
        "init-config",
        str(out),
        "--pipeline",
        "ner,tagger,textcat",
        "--preset",
        "cpu",
        "--char-backbone",
        str(canine_dir),
        "--subword-backbone",
        str(bert_dir),
        "--lang",
        "en",
    ]
    result = cli(*args)
    assert result.returncode == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["nlp"]["pipeline"] == ["entangle", "ner", "tagger", "textcat"]
    assert cfg["paths"]["char_backbone"] == str(canine_dir) and cfg["paths"]["subword_backbone"] == str(bert_dir)
    sizes = cfg["components"]["entangle"]["model"]
    assert sizes["hidden_width"] is sizes["n_heads"] is sizes["ffn_width"] is None  # sized from the backbones
    weights = cfg["training"]["score_weights"]
    assert weights["ents_f"] == weights["tag_acc"] == weights["cats_score"] == pytest.approx(0.33)
    assert cfg["training"]["optimizer"]["learn_rate"]["initial_rate"] == 0.0003  # the preset's, not Adam's 1e-3
    assert cfg["training"]["max_steps"] == "${training.optimizer.learn_rate.total_steps}"
    assert _variables(cfg["training"]["optimizer"]) == []
    overrides = {
        k: v
        for k, v in _overrides(out, corpus, canine_dir, bert_dir).items()
        if "backbone" not in k and not k.startswith("components.entangle")
    }  # sized from the backbones
    debug_config(out, overrides=overrides)
    debug_data(out, config_overrides=overrides, silent=False)
    assert "Pipeline can be initialized with data" in capsys.readouterr().out
    # bad input: one clear line, exit code 1
    for bad, message in [
        (
            ["--pipeline", "ner,nope", "--force"],
            "--pipeline takes components among char_tagger, morphologizer, ner, parser, spancat, tagger, textcat",
        ),
        (["--preset", "gpu", "--force"], "--preset must be one of cpu, paper"),
        ([], "exists; pass --force"),
    ]:
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
    bad.write_text(
        MINIMAL.format(char=canine_dir, subword=bert_dir).replace('"ner"]', '"ner","mine"]'), encoding="utf8"
    )
    result = cli("init-config", str(tmp_path / "bad_out.cfg"), "--base", str(bad))
    assert result.returncode == 1 and "without a [components.NAME] block: mine" in result.output, result.output


SOURCED = """
[nlp]
lang = "en"
pipeline = ["entangle","ner","tagger"]

[components]

[components.entangle]
source = "{src}"

[components.ner]
source = "{src}"
"""


def test_init_config_base_with_sourced_components(tmp_path, canine_dir, bert_dir):
    """`init-config --base` where the base sources trained components (spaCy's `source =`):
    the sourced blocks stay `source` alone (the preset's factory settings were unexpected
    arguments there), the preset adds the new tagger listening to the sourced entangle, and
    spaCy builds the written config."""
    import spacy
    from _pipelines import build
    from spacy.util import load_config, load_model_from_config

    src = tmp_path / "trained"
    trained = build(canine_dir, bert_dir, components=("ner",))
    trained.initialize()
    trained.to_disk(src)
    base = tmp_path / "base.cfg"
    base.write_text(SOURCED.format(src=src), encoding="utf8")
    out = tmp_path / "out.cfg"
    result = cli("init-config", str(out), "--pipeline", "tagger", "--base", str(base))
    assert result.returncode == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["components"]["entangle"] == cfg["components"]["ner"] == {"source": str(src)}
    assert cfg["components"]["tagger"]["model"]["tok2vec"]["upstream"] == "entangle"
    nlp = load_model_from_config(cfg, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["entangle", "ner", "tagger"]
    assert spacy.load(src).get_pipe("ner").labels == nlp.get_pipe("ner").labels


def test_paper_baseline_configs_build(bert_dir):
    """The paper baselines fill and build (on a local backbone: their hub names are not
    reachable here, and they train on a GPU)."""
    pytest.importorskip("spacy_transformers")  # the `baseline` extra
    from spacy.util import load_config, load_model_from_config

    for name, pipe in (("baseline_tagger_paper.cfg", "tagger"), ("baseline_textcat_paper.cfg", "textcat")):
        config = load_config(config_path(name), overrides={"paths.subword_backbone": str(bert_dir)}, interpolate=False)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        assert nlp.pipe_names == ["transformer", pipe], name
        assert config["components"]["transformer"]["model"]["mixed_precision"] is True
        assert config["training"]["max_epochs"] == 50


# ---------------------------------------------------------------------------- composed configs


def test_the_shipped_configs_are_generated_from_the_parts():
    """Every shipped config is its recipe's text (a base, task blocks, its own lines): after
    editing parts/ or shipped.py, `python -m spacy_entangle.configs --write` regenerates them."""
    assert sorted(SHIPPED) == config_names()
    for name, recipe in SHIPPED.items():
        assert config_path(name).read_text(encoding="utf8") == recipe.text(), f"{name} is stale: --write"
    assert cli_check() == 0


def cli_check() -> int:
    from spacy_entangle.configs.__main__ import main

    return main(["--check"])


def test_merge_keeps_comments_and_places_new_sections_beside_their_relatives():
    base = parse(
        "# doc of the base, not copied\n\n[nlp]\n# why this batch size\nbatch_size = 64\n\n"
        '[components]\n\n[components.a]\nfactory = "a"\n\n[training]\nseed = 0\n'
    )
    part = parse(
        '[components.b]\nfactory = "b"\n\n[components.b.model]\nx = 1\n\n[nlp]\nbatch_size = 32\nlang = "es"\n'
    )
    text = render(merge(base, part), ["# header"])
    assert text == (
        '# header\n\n[nlp]\n# why this batch size\nbatch_size = 32\nlang = "es"\n\n[components]\n\n'
        '[components.a]\nfactory = "a"\n\n[components.b]\nfactory = "b"\n\n'
        "[components.b.model]\nx = 1\n\n[training]\nseed = 0\n"
    )
    with pytest.raises(ValueError, match="a comment must sit right above a key"):
        parse('[nlp]\n# lost\n\nlang = "en"\n')
    with pytest.raises(ValueError, match="add the component 'ner' twice"):
        compose("entangle_cpu", ["ner", "ner"])
    with pytest.raises(ValueError, match="no config part tasks/nope.cfg"):
        compose("entangle_cpu", ["nope"])


def test_compose_refuses_a_base_without_an_nlp_section(tmp_path, monkeypatch):
    """The task blocks extend the base's [nlp] pipeline: a base without one is a clear
    error, not an AttributeError."""
    (tmp_path / "bases").mkdir()
    (tmp_path / "bases" / "bare.cfg").write_text("[training]\nseed = 0\n", encoding="utf8")
    # the module (spacy_entangle.configs.compose is also the name of its function)
    monkeypatch.setattr(importlib.import_module("spacy_entangle.configs.compose"), "PARTS_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"the config base 'bare' has no \[nlp\] section"):
        compose("bare", [])


@pytest.mark.parametrize("pipeline", ["ner,spancat", "ner,tagger,morphologizer"])
def test_init_config_composes_tasks_that_spacy_debug_accepts(pipeline, tmp_path, corpus, canine_dir, bert_dir, capsys):
    from spacy.util import load_config

    out = tmp_path / "out.cfg"
    result = cli(
        "init-config",
        str(out),
        "--pipeline",
        pipeline,
        "--char-backbone",
        str(canine_dir),
        "--subword-backbone",
        str(bert_dir),
    )
    assert result.returncode == 0, result.output
    cfg = load_config(out, interpolate=False)
    assert cfg["nlp"]["pipeline"] == ["entangle", *pipeline.split(",")]
    overrides = {
        k: v
        for k, v in _overrides(out, corpus, canine_dir, bert_dir).items()
        if "backbone" not in k and not k.startswith("components.entangle")
    }
    debug_config(out, overrides=overrides)
    debug_data(out, config_overrides=overrides, silent=False)
    printed = capsys.readouterr().out
    assert "Config is valid" in printed and "Pipeline can be initialized with data" in printed


def test_a_preset_backbone_keeps_the_presets_sizes():
    from spacy_entangle.configs import build_config

    model = build_config(["ner"], "cpu")["components"]["entangle"]["model"]
    assert (model["hidden_width"], model["n_heads"], model["ffn_width"]) == (384, 6, 768)


def test_morphologizer_and_parser_learn_on_the_listener(canine_dir, bert_dir):
    """spaCy's stock morphologizer and parser train on the entangle listener as on a tok2vec:
    a few updates memorise a tiny treebank (POS, features, heads and labels all right)."""
    from spacy.training import Example
    from spacy.util import load_model_from_config
    from thinc.api import Adam, fix_random_seed

    from spacy_entangle.configs import build_config

    fix_random_seed(0)  # the same initial weights and draws under every transformers version
    config = build_config(["morphologizer", "parser"], char_backbone=str(canine_dir), subword_backbone=str(bert_dir))
    config["components"]["parser"]["min_action_freq"] = 1  # 4 docs: keep every label
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    gold = dict(
        words=["She", "reads", "old", "books", "."],
        pos=["PRON", "VERB", "ADJ", "NOUN", "PUNCT"],
        morphs=["Case=Nom", "Tense=Pres", "Degree=Pos", "Number=Plur", ""],
        heads=[1, 1, 3, 1, 1],
        deps=["nsubj", "ROOT", "amod", "obj", "punct"],
    )
    examples = [Example(nlp.make_doc("She reads old books ."), Doc(nlp.vocab, **gold)) for _ in range(4)]
    nlp.initialize(lambda: examples)
    optimizer, first, losses = Adam(1e-3), {}, {}
    for _ in range(60):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses, drop=0.0)
        first = first or dict(losses)
    assert losses["morphologizer"] < first["morphologizer"] and losses["parser"] < first["parser"] / 2
    scores = nlp.evaluate(examples)
    assert scores["pos_acc"] == scores["morph_acc"] == scores["dep_uas"] == scores["dep_las"] == 1.0


def test_a_sourced_entangle_never_reads_its_training_machines_backbone_paths(tmp_path, corpus, canine_dir, bert_dir):
    """A packaged pipeline's config keeps the paths it was trained with (char_backbone =
    "backbones/canine-masked"), but the weights live inside the component: `spacy train`
    with `source = PIPELINE` does not initialize a sourced component (spacy.training.
    initialize.init_nlp resumes it instead), and initializing a loaded entangle does not
    reload its backbones. So a new listener trains on a sourced entangle whose backbone
    folders are gone."""
    import shutil

    import spacy
    from spacy.cli.train import train
    from spacy.training import Corpus
    from spacy.util import load_config, load_model_from_config

    from spacy_entangle.configs import build_config

    gone = {"char": tmp_path / "gone" / "canine", "subword": tmp_path / "gone" / "bert"}
    shutil.copytree(canine_dir, gone["char"])
    shutil.copytree(bert_dir, gone["subword"])
    nlp = load_model_from_config(
        build_config(["ner"], char_backbone=str(gone["char"]), subword_backbone=str(gone["subword"])),
        auto_fill=True,
        validate=True,
    )
    nlp.initialize(lambda: Corpus(corpus / "dev.spacy")(nlp))
    nlp.to_disk(tmp_path / "packaged")
    shutil.rmtree(tmp_path / "gone")
    assert load_config(tmp_path / "packaged" / "config.cfg")["paths"]["char_backbone"] == str(gone["char"])
    spacy.load(tmp_path / "packaged").initialize()  # a loaded entangle keeps its weights

    config = build_config(["ner", "tagger"], char_backbone="unused", subword_backbone="unused")
    config["components"]["entangle"] = {"source": str(tmp_path / "packaged")}
    config["components"]["ner"] = {"source": str(tmp_path / "packaged")}
    config.to_disk(tmp_path / "sourced.cfg")
    train(
        tmp_path / "sourced.cfg",
        tmp_path / "out",
        overrides={
            "paths.train": str(corpus / "train.spacy"),
            "paths.dev": str(corpus / "dev.spacy"),
            "training.optimizer.learn_rate.total_steps": 2,
            "training.eval_frequency": 1,
            "training.logger.progress_bar": False,
        },
    )
    trained = spacy.load(tmp_path / "out" / "model-last")
    assert trained.pipe_names == ["entangle", "ner", "tagger"] and trained("Apple is in London")[0].tag_
