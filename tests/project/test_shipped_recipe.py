"""`init-config` writes the recipe the project ships: the CPU NER preset, project.yml's
ship_variant (with its char_dir) and that variant's entry in variants.yml (side, char encoder,
its own `settings:`, the char-noise augmenter with project.yml's aug_level / aug_rate) agree,
and so does configs/ner_cpu.cfg, which the variant trains. The variants that train without
the augmenter turn the preset's off, and spaCy reads that override."""

import json
from pathlib import Path
from typing import Any, List

import srsly
from _cli import cli
from _variants import load_variants
from spacy.cli._util import parse_config_overrides
from spacy.training import dont_augment
from spacy.util import load_config, load_model_from_config, registry

from spacy_entangle.configs import config_path

PROJECT = Path(__file__).resolve().parents[2] / "project"


def _at(config: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        config = config[key]
    return config


def _value(text: str) -> Any:
    """A variants.yml setting as the config reads it (JSON where it parses, else the string)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_init_config_writes_the_shipped_recipe(tmp_path):
    project_vars = srsly.read_yaml(PROJECT / "project.yml")["vars"]
    variant = load_variants(PROJECT / "variants.yml")[project_vars["ship_variant"]]
    out = tmp_path / "ner.cfg"
    result = cli("init-config", str(out), "--pipeline", variant.component)  # the cpu preset
    assert result.returncode == 0, result.output
    written = load_config(out, interpolate=False)
    shipped = load_config(config_path(variant.config), interpolate=False)
    char_dir = variant.char_dir(Path("backbones"), project_vars["char_encoder"], project_vars["char_dir"])
    side_key = f"components.{variant.component}.{variant.side_key}"
    # the augmenter the variant trains with (its own level and rate where variants.yml names
    # them, else variants_run.py's --aug-level / --aug-rate defaults, project.yml's aug_level /
    # aug_rate), or none
    augmenter = json.loads(_train_command(variant, "ner_cpu.cfg")[1]) if variant.augment else None
    if variant.augment:
        assert augmenter == {
            "@augmenters": "spacy-entangle.char_noise_augmenter.v1",
            "level": project_vars["aug_level"] if variant.aug_level is None else variant.aug_level,
            "rate": project_vars["aug_rate"] if variant.aug_rate is None else variant.aug_rate,
        }
    # the preset's budget is the recipe's, read off its learning curve (project.yml's budget_steps)
    if variant.name == project_vars["budget_variant"]:
        steps = project_vars["budget_steps"]
        assert load_config(config_path(variant.config))["training"]["optimizer"]["learn_rate"]["total_steps"] == steps
    for name, config in (("init-config", written), (variant.config, shipped)):
        assert config["paths"]["char_backbone"] == char_dir, name
        assert _at(config, side_key) == variant.side, name
        for key, value in variant.settings:
            assert _at(config, key) == _value(value), f"{name}: {key} is not {variant.name}'s {value}"
        own = config["corpora"]["train"]["augmenter"]
        # init-config writes the augmenter's defaults out too (attacks, seed)
        assert own == augmenter if augmenter is None else {k: own[k] for k in augmenter} == augmenter, name
        assert config["corpora"]["dev"]["augmenter"] is None, name
    # the rest too: init-config's output is the shipped config, filled as spaCy fills it
    filled = load_model_from_config(shipped, auto_fill=True, validate=True).config
    assert written.interpolate() == filled.interpolate()
    # the char encoder folder is one the project builds, by the command the config names
    commands = {c["name"]: c for c in srsly.read_yaml(PROJECT / "project.yml")["commands"]}
    assert f"{char_dir}/" in commands["pretrain-grown"]["outputs"]
    assert "python -m weasel run pretrain-grown ." in config_path(variant.config).read_text(encoding="utf8")


def _train_command(variant: Any, config: str) -> List[str]:
    """The `--corpora.train.augmenter VALUE` pair of the variant's `spacy train` command
    (variants_run.py, with its command-line defaults), [] when it has none."""
    from variants_run import AUG_LEVEL, AUG_RATE, train_command

    cmd = train_command(
        variant,
        0,
        output=Path("training"),
        corpus_dir=Path("corpus"),
        configs_dir=config_path(config).parent,
        backbones_dir=Path("backbones"),
        subword_dir=Path("backbones/minilm"),
        char_encoder="grown",
        max_steps=None,
        eval_frequency=None,
        n_coattention=None,
        gpu_id=-1,
        aug_level=AUG_LEVEL.default,
        aug_rate=AUG_RATE.default,
    )
    at = [i for i, arg in enumerate(cmd) if arg == "--corpora.train.augmenter"]
    assert len(at) <= 1
    return cmd[at[0] : at[0] + 2] if at else []


def test_variants_train_with_or_without_the_presets_augmenter():
    """variants.yml's `augment` decides: a variant with it trains with its own level and rate,
    else the project's (the shipped recipe's are the preset's own: test above), entangle-both
    (the shipped recipe's side and settings, no augmenter) and the other ner_cpu.cfg variants
    without it turn the preset's off by an override spaCy accepts, the baseline preset has
    none (baseline-aug adds it)."""
    variants = load_variants(PROJECT / "variants.yml")
    project_vars = srsly.read_yaml(PROJECT / "project.yml")["vars"]
    ship = variants[project_vars["ship_variant"]]
    preset = load_config(config_path(ship.config), interpolate=False)
    assert ship.augment and preset["corpora"]["train"]["augmenter"] is not None
    # entangle-both: the shipped variant less the augmenter, nothing else
    both = variants["entangle-both"]
    assert (both.config, both.char_encoder, both.side, both.settings) == (
        ship.config,
        ship.char_encoder,
        ship.side,
        ship.settings,
    )
    assert not both.augment
    for variant in variants.values():
        config = load_config(config_path(variant.config), interpolate=False)
        own = config["corpora"]["train"].get("augmenter")
        pair = _train_command(variant, variant.config)
        if variant.augment:
            # the augmenter the variant asks for: its own level and rate where it names them
            # (both-mild), else the project's (variants_run.py's --aug-level / --aug-rate)
            from variants_run import AUG_LEVEL, AUG_RATE

            asked = json.loads(pair[1]) if pair else None
            assert asked is not None, variant.name
            named = {"level": variant.aug_level, "rate": variant.aug_rate}
            defaults = {"level": AUG_LEVEL.default, "rate": AUG_RATE.default}
            for key, value in named.items():
                assert asked[key] == (defaults[key] if value is None else value), (variant.name, key)
        elif own is not None:
            assert pair == ["--corpora.train.augmenter", "null"], variant.name
        else:
            assert pair == [], variant.name
    assert load_config(config_path("baseline_ner_cpu.cfg"))["corpora"]["train"]["augmenter"] is None
    # spaCy reads the override from the command line as `spacy train` does: the corpus the
    # training reads gets no augmenter, and without it the preset's char-noise one
    for pair, augmented in ((_train_command(both, both.config), False), ([], True)):
        overrides = parse_config_overrides(["--paths.train", "corpus/train.spacy", *pair])
        config = load_config(config_path(ship.config), overrides=overrides, interpolate=True)
        corpus = registry.resolve({"train": config["corpora"]["train"]})["train"]
        assert (corpus.augmenter is not dont_augment) == augmented, pair


def test_init_config_writes_tweeteval_s_recipe(tmp_path):
    """`init-config --pipeline textcat` (the cpu preset) is TweetEval's recipe: the project's
    curve and budget variant trains configs/textcat_cpu.cfg, whose side and augmenter are that
    variant's, over the grown char encoder the project passes; the file is init-config's output
    as spaCy fills it."""
    project = PROJECT / "tweeteval"
    project_vars = srsly.read_yaml(project / "project.yml")["vars"]
    assert project_vars["curve_variant"] == project_vars["budget_variant"]
    variant = load_variants(project / "variants.yml")[project_vars["budget_variant"]]
    assert variant.component == "textcat" and variant.char_encoder == "default" and variant.augment
    assert project_vars["grown_dir"] == "../backbones/grown"
    out = tmp_path / "textcat.cfg"
    result = cli("init-config", str(out), "--pipeline", "textcat")
    assert result.returncode == 0, result.output
    written = load_config(out, interpolate=False)
    shipped = load_config(config_path(variant.config), interpolate=False)
    for name, config in (("init-config", written), (variant.config, shipped)):
        assert config["paths"]["char_backbone"] == "backbones/grown", name
        assert _at(config, f"components.textcat.{variant.side_key}") == variant.side, name
        assert config["components"]["textcat"]["model"]["@architectures"] == "spacy.TextCatReduce.v1", name
        own = config["corpora"]["train"]["augmenter"]
        assert (own["level"], own["rate"]) == (variant.aug_level, variant.aug_rate), name
        for key, value in variant.settings:
            assert _at(config, key) == _value(value), f"{name}: {key} is not {variant.name}'s {value}"
    filled = load_model_from_config(shipped, auto_fill=True, validate=True).config
    assert written.interpolate() == filled.interpolate()
    # the paper preset keeps the paper's head
    paper = tmp_path / "paper.cfg"
    assert cli("init-config", str(paper), "--pipeline", "textcat", "--preset", "paper").returncode == 0
    head = load_config(paper, interpolate=False)["components"]["textcat"]["model"]
    assert head["@architectures"] == "spacy-entangle.TextCatCls.v1"
