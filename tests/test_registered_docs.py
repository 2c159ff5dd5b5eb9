"""Every function spacy-entangle registers with spaCy (architectures, misc, loggers,
augmenters, scorers, ... under ``spacy-entangle.*``, and the pipeline factories of its
setup.cfg entry points) documents each of its parameters on a line of its own, in the
spacy-transformers style: ``name (Type): what it does, its default, the values it takes``."""

import configparser
import inspect
import re
from pathlib import Path
from typing import Callable, Dict, List

import pytest
from spacy.language import Language
from spacy.util import registry

import spacy_entangle  # noqa: F401 (importing it registers every function)

SETUP_CFG = Path(__file__).resolve().parents[1] / "setup.cfg"
PREFIX = "spacy-entangle."
# given by spaCy to every factory: the docstrings may name them together, or not at all
NOT_DOCUMENTED = ("nlp", "name")
ARGS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _entry_points() -> Dict[str, List[str]]:
    """setup.cfg's [options.entry_points]: group -> the names it registers."""
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG, encoding="utf8")
    groups = parser["options.entry_points"]
    return {
        group: [line.split("=", 1)[0].strip() for line in groups[group].splitlines() if line.strip()]
        for group in groups
    }


def _registered() -> Dict[str, Callable]:
    """``registry:name`` -> function, for every ``spacy-entangle.*`` name of spaCy's
    registries and every factory the package's entry points declare."""
    found: Dict[str, Callable] = {}
    for reg in registry.get_registry_names():
        if reg == "factories":  # factories go by their component names (below)
            continue
        for name, func in getattr(registry, reg).get_all().items():
            if name.startswith(PREFIX):
                found[f"{reg}:{name}"] = func
    for name in _entry_points()["spacy_factories"]:
        meta = Language.get_factory_meta(name)
        found[f"factories:{name}"] = registry.factories.get(Language.get_factory_name(meta.factory))
    return found


REGISTERED = _registered()


def test_every_entry_point_is_collected():
    """The collection misses nothing setup.cfg declares (spacy_architectures -> architectures, ...)."""
    declared = {
        f"{group[len('spacy_') :]}:{name}"
        for group, names in _entry_points().items()
        if group.startswith("spacy_")
        for name in names
    }
    assert declared, "setup.cfg declares no spaCy entry points"
    assert sorted(declared - set(REGISTERED)) == []


@pytest.mark.parametrize("key", sorted(REGISTERED))
def test_each_parameter_has_its_line(key):
    func = REGISTERED[key]
    doc = inspect.getdoc(func) or ""
    assert doc.strip(), f"{key} ({func.__module__}.{func.__qualname__}) has no docstring"
    params = [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.name not in NOT_DOCUMENTED and p.kind not in ARGS
    ]
    missing = [p for p in params if not re.search(rf"^\s*{re.escape(p)} \(", doc, re.MULTILINE)]
    assert missing == [], f"{key} ({func.__module__}.{func.__qualname__}): no `name (Type): ...` line for {missing}"
