"""Shared by the project's scripts: NAME=MODEL_DIR arguments, loaded once each."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Tuple

if TYPE_CHECKING:
    from spacy.language import Language


def load_models(specs: Iterable[str], script: str) -> Iterator[Tuple[str, str, "Language"]]:
    """Yield (name, model_dir, nlp) per ``NAME=MODEL_DIR``; a directory that does not exist
    (a variant that was not trained) is skipped with a note, a malformed spec exits."""
    import spacy

    for spec in specs:
        name, sep, model_dir = spec.partition("=")
        if not sep or not name or not model_dir:
            sys.exit(f"{script}: expected NAME=MODEL_DIR, got {spec!r}")
        if not Path(model_dir).exists():
            print(f"ℹ {name}: no {model_dir}, skipped")
            continue
        yield name, model_dir, spacy.load(model_dir)
