"""`init-config` writes the recipe the project ships: the CPU NER preset, project.yml's
ship_variant (with its char_dir) and that variant's entry in variants.yml (side, char encoder,
its own `settings:`) agree, and so does configs/ner_cpu.cfg, which the variant trains."""

import json
from pathlib import Path
from typing import Any

import srsly
from _cli import cli
from _variants import load_variants
from spacy.util import load_config, load_model_from_config

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
    for name, config in (("init-config", written), (variant.config, shipped)):
        assert config["paths"]["char_backbone"] == char_dir, name
        assert _at(config, side_key) == variant.side, name
        for key, value in variant.settings:
            assert _at(config, key) == _value(value), f"{name}: {key} is not {variant.name}'s {value}"
    # the rest too: init-config's output is the shipped config, filled as spaCy fills it
    filled = load_model_from_config(shipped, auto_fill=True, validate=True).config
    assert written.interpolate() == filled.interpolate()
    # the char encoder folder is one the project builds, by the command the config names
    commands = {c["name"]: c for c in srsly.read_yaml(PROJECT / "project.yml")["commands"]}
    assert f"{char_dir}/" in commands["pretrain-grown"]["outputs"]
    assert "python -m weasel run pretrain-grown ." in config_path(variant.config).read_text(encoding="utf8")
