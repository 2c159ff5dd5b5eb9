"""The library versions spacy-entangle is tested with, checked on import, and the versions a
pipeline is saved with (stored beside its weights, so a load under an incompatible library
can say which versions to install instead of calling the files damaged).

Versions are read from the installed distributions' metadata, never by importing the
libraries: importing transformers costs seconds, and spaCy imports this package on start."""

import configparser
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

DISTRIBUTION = "spacy-entangle"
# where install_requires is written (the one place): a source checkout's setup.cfg
SETUP_CFG = Path(__file__).resolve().parent.parent / "setup.cfg"
# what a saved pipeline records (see saved_versions)
RECORDED = ("spacy-entangle", "transformers", "tokenizers", "torch")


def installed(dist: str) -> Optional[str]:
    """The installed version of ``dist``, or None when it is not installed."""
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def requirement_range(dist: str, lines: Iterable[str]) -> Optional[str]:
    """The version range of ``dist`` among requirement lines (extras' lines skipped), or None."""
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None and req.name.lower() == dist.lower():
            # lower bounds first, as people write them (">=4.30,<6")
            specs = sorted(req.specifier, key=lambda spec: (spec.operator.startswith("<"), str(spec)))
            return ",".join(str(spec) for spec in specs) or None
    return None


def _setup_cfg_requires(path: Optional[Path] = None) -> Optional[List[str]]:
    """install_requires of a source checkout's setup.cfg, or None where there is none."""
    path = SETUP_CFG if path is None else path
    if not path.is_file():
        return None
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf8")
        text = parser.get("options", "install_requires")
    except (configparser.Error, UnicodeDecodeError):
        return None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def declared_transformers_range() -> Optional[str]:
    """The transformers range spacy-entangle declares, read where it is written once: the
    installed distribution's metadata (setup.cfg's install_requires), or, when the package runs
    from a source tree that is not installed, that setup.cfg itself. None when neither can be
    read: then the import check is skipped rather than guessed."""
    try:
        lines = requires(DISTRIBUTION)
    except PackageNotFoundError:
        lines = None
    if lines is None:
        lines = _setup_cfg_requires()
    return requirement_range("transformers", lines or ())


# the range CI tests: the core suite runs on the newest 5.x pip resolves (.venv-core), the full
# suite on the 4.x that spacy-transformers 1.4 pins (.venv)
TRANSFORMERS_RANGE = declared_transformers_range()


def transformers_problem(found: Optional[str], wanted: Optional[str] = TRANSFORMERS_RANGE) -> Optional[str]:
    """One line that names the fix when ``found`` is outside ``wanted``; None when it fits
    (or when no range is known: see declared_transformers_range)."""
    if wanted is None:
        return None
    try:
        fits = found is not None and SpecifierSet(wanted).contains(Version(found), prereleases=True)
    except InvalidVersion:
        fits = False
    if fits:
        return None
    return (
        f"spacy-entangle needs transformers{wanted}; found {found or 'none installed'}: "
        f"pip install 'transformers{wanted}'"
    )


def check_transformers() -> None:
    """Refuse, at import, a transformers outside the tested range (one line, with the fix),
    rather than failing later inside a tokenizer or a saved pipeline's load."""
    problem = transformers_problem(installed("transformers"))
    if problem:
        raise ImportError(problem)


def saved_versions() -> Dict[str, Optional[str]]:
    """The versions a pipeline is saved with (``versions.json`` among the model's files)."""
    return {dist: installed(dist) for dist in RECORDED}


class IncompatibleFilesError(ValueError):
    """A saved pipeline's files are intact (their checksums match) but the installed
    libraries cannot read them: a version mismatch, not damage."""


def library_mismatch(what: str, err: Exception, saved: Mapping[str, Optional[str]], verified: bool) -> str:
    """What cannot be read, with which installed versions, and the fix: the versions the
    pipeline was saved with when it records them (pipelines saved before it did do not)."""
    libraries = ("transformers", "tokenizers")
    now = ", ".join(f"{dist} {installed(dist) or 'not installed'}" for dist in libraries)
    text = f"{what} cannot be read with the installed {now} ({type(err).__name__}: {err})."
    then = {dist: saved.get(dist) for dist in libraries if saved.get(dist)}
    if not then:
        text += (
            " The pipeline does not record the versions it was saved with (saved by an older "
            "spacy-entangle): load it with the transformers and tokenizers versions it was saved with."
        )
    elif any(version != installed(dist) for dist, version in then.items()):
        pins = " ".join(f"'{dist}=={version}'" for dist, version in then.items())
        text += (
            f" It was saved with {', '.join(f'{d} {v}' for d, v in then.items())}: install those "
            f"(pip install {pins}), or load it where they are installed."
        )
    else:
        text += " It was saved with these same versions: please report this."
    if not verified:
        text += " (Its files carry no checksums, so damaged files cannot be ruled out.)"
    return text
