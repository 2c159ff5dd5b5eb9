"""Which tokens a doc's states were computed for.

States are read by token position (``DocAlignment``): once a component retokenizes the doc
(``merge_entities``, any ``doc.retokenize()``), or once states reach another doc (user data
copied or deserialised onto other tokens), position k no longer names the token the rows
were computed for. A short hash of every token's text, offset, length and trailing space
tells such states apart from the doc's own at the cost of one ``doc.to_array`` (ORTH is a
hash of the token's text that every vocabulary computes alike, so the identity holds
across processes and pipelines)."""

import hashlib
from typing import Tuple

import numpy
from spacy.attrs import IDX, LENGTH, ORTH, SPACY
from spacy.tokens import Doc

TOKEN_ATTRS = [ORTH, IDX, LENGTH, SPACY]


def token_array(doc: Doc) -> numpy.ndarray:
    """(n_tokens, 4) uint64: each token's ORTH, IDX, LENGTH, SPACY (what ``token_key`` hashes)."""
    return numpy.ascontiguousarray(doc.to_array(TOKEN_ATTRS), dtype="uint64").reshape(len(doc), len(TOKEN_ATTRS))


def key_of(tokens: numpy.ndarray) -> str:
    """The identity of the tokens ``token_array`` gave."""
    digest = hashlib.blake2b(numpy.ascontiguousarray(tokens, dtype="uint64").tobytes(), digest_size=8)
    return f"{len(tokens)}:{digest.hexdigest()}"


def token_key(doc: Doc) -> str:
    """The identity of the doc's tokens now: "<n_tokens>:<16 hex digits>"."""
    return key_of(token_array(doc))


def token_bounds(tokens: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Each token's first character and end (int64) from a ``token_array``."""
    starts = tokens[:, 1].astype("int64")
    return starts, starts + tokens[:, 2].astype("int64")
