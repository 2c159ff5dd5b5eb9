"""The library versions spacy-entangle is tested with, checked on import, and the versions a
pipeline is saved with (stored beside its weights, so a load under an incompatible library
can say which versions to install instead of calling the files damaged).

Versions are read from the installed distributions' metadata, never by importing the
libraries: importing transformers costs seconds, and spaCy imports this package on start."""

from importlib.metadata import PackageNotFoundError, version
from typing import Dict, Mapping, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

# the range CI tests: the core suite runs on the newest 5.x pip resolves (.venv-core), the full
# suite on the 4.x that spacy-transformers 1.4 pins (.venv); keep setup.cfg's install_requires equal
TRANSFORMERS_RANGE = ">=4.30,<6"
# what a saved pipeline records (see saved_versions)
RECORDED = ("spacy-entangle", "transformers", "tokenizers", "torch")


def installed(dist: str) -> Optional[str]:
    """The installed version of ``dist``, or None when it is not installed."""
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def transformers_problem(found: Optional[str], wanted: str = TRANSFORMERS_RANGE) -> Optional[str]:
    """One line that names the fix when ``found`` is outside ``wanted``; None when it fits."""
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
