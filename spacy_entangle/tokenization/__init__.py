"""Turning spaCy Docs into encoder inputs, with alignments back to spaCy tokens.

Both encoders see the same text spans (windows); every token is aligned to its
subword pieces (fast-tokenizer offsets) and to its characters (codepoint offsets).
"""

from .alignment import DocAlignment, WindowInput, prepare_docs
from .chars import CharSpec
from .subwords import SubwordSpec
from .windows import WindowSettings, configure_windows, configure_windows_v2

__all__ = [
    "CharSpec",
    "SubwordSpec",
    "configure_windows",
    "configure_windows_v2",
    "WindowSettings",
    "DocAlignment",
    "WindowInput",
    "prepare_docs",
]
