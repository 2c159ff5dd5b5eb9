"""Turning spaCy Docs into encoder inputs, with alignments back to spaCy tokens.

Both encoders see the same text spans (windows); every token is aligned to its
subword pieces (fast-tokenizer offsets) and to its characters (codepoint offsets).
"""
from .chars import CharSpec
from .subwords import SubwordSpec
from .windows import configure_windows, WindowGetter
from .batch import DocAlignment, WindowInput, prepare_docs

__all__ = [
    "CharSpec",
    "SubwordSpec",
    "configure_windows",
    "WindowGetter",
    "DocAlignment",
    "WindowInput",
    "prepare_docs",
]
