"""Converters: public corpora to spaCy Docs / .spacy files, one module per format (the
`convert*` commands of the CLI are thin wrappers). io.py holds what they share."""

from .io import FormatError, get_vocab, read_lines, write_bytes_atomic, write_docbin_atomic

__all__ = ["FormatError", "get_vocab", "read_lines", "write_bytes_atomic", "write_docbin_atomic"]
