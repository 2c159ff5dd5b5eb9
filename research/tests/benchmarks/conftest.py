"""Fixtures of the benchmark scripts' tests."""

from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin


@pytest.fixture
def paris_dev(tmp_path) -> Path:
    """Six tweets, each with one gold `location` entity (Paris): a corpus the scripts time and
    score the tiny fixture pipeline on."""
    nlp = spacy.blank("en")
    docs = []
    for i in range(6):
        doc = nlp.make_doc(f"tweet {i} about Paris and @NASA")
        doc.ents = [doc.char_span(doc.text.index("Paris"), doc.text.index("Paris") + 5, label="location")]
        docs.append(doc)
    path = tmp_path / "dev.spacy"
    DocBin(docs=docs).to_disk(path)
    return path
