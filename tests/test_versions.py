"""The transformers range (versions.py) is read where it is written once: the installed
metadata of setup.cfg's install_requires, or a source checkout's setup.cfg."""

from importlib.metadata import PackageNotFoundError

import pytest
from packaging.specifiers import SpecifierSet

from spacy_entangle import versions


def _setup_cfg_range() -> str:
    lines = versions._setup_cfg_requires()
    assert lines, f"no install_requires in {versions.SETUP_CFG}"
    found = versions.requirement_range("transformers", lines)
    assert found
    return found


def test_the_range_is_the_one_setup_cfg_declares():
    assert versions.TRANSFORMERS_RANGE == versions.declared_transformers_range()
    assert SpecifierSet(versions.TRANSFORMERS_RANGE) == SpecifierSet(_setup_cfg_range())
    assert versions.TRANSFORMERS_RANGE.startswith(">="), "lower bound first, as written"


def test_the_range_comes_from_the_installed_metadata(monkeypatch):
    monkeypatch.setattr(
        versions,
        "requires",
        lambda dist: ["torch>=2.0", 'transformers<4; extra == "old"', "Transformers<5,>=4.40"],
    )
    assert versions.declared_transformers_range() == ">=4.40,<5"


def test_without_metadata_a_source_checkout_reads_setup_cfg(monkeypatch):
    def missing(dist):
        raise PackageNotFoundError(dist)

    monkeypatch.setattr(versions, "requires", missing)
    assert versions.declared_transformers_range() == _setup_cfg_range()


def test_without_metadata_or_setup_cfg_the_check_is_skipped(monkeypatch, tmp_path):
    def missing(dist):
        raise PackageNotFoundError(dist)

    monkeypatch.setattr(versions, "requires", missing)
    monkeypatch.setattr(versions, "SETUP_CFG", tmp_path / "setup.cfg")
    assert versions.declared_transformers_range() is None
    assert versions.transformers_problem("1.0.0", wanted=None) is None


@pytest.mark.parametrize(
    "lines,expected",
    [
        (["transformers"], None),  # no range declared
        (["not a requirement !!", "transformers>=4.30"], ">=4.30"),
        (['transformers>=5; python_version >= "3.10"'], None),  # conditional: not the range
        ([], None),
    ],
)
def test_requirement_range(lines, expected):
    assert versions.requirement_range("transformers", lines) == expected
