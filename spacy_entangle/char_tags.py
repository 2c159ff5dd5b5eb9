"""The ``doc._.char_tags`` and ``doc._.char_spans`` extensions (what `char_tagger` writes and
reads), and moving char_tags between two texts that differ in whitespace only.

- ``doc._.char_tags``: a tuple with one label (str) or None per character of ``doc.text``
  (``len(doc._.char_tags) == len(doc.text)``, checked when set; set it from any sequence);
- ``doc._.char_spans``: computed from ``char_tags``: the maximal runs of one label as
  ``(start_char, end_char, label)`` (end exclusive; characters without a label break runs).

char_tags is a getter/setter extension (spaCy's public ``Doc.set_extension``) that keeps
its value in ``doc.user_data`` under ``CHAR_TAGS_KEY``: the key spaCy itself gives a plain
``default=None`` extension. That key is what ``Doc.to_bytes`` and ``DocBin(store_user_data=True)``
write, so every .spacy corpus written before (``convert-codeswitch``) and after reads alike;
a plain extension would have the same key but neither the check nor the tuple.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

from spacy.tokens import Doc


def char_spans_from_tags(tags: Optional[Sequence[Optional[str]]]) -> List[Tuple[int, int, str]]:
    """Maximal runs of one label: [(start_char, end_char, label)], end exclusive;
    None (no label, e.g. whitespace) breaks runs."""
    if not tags:
        return []
    spans: List[Tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(tags) + 1):
        if i == len(tags) or tags[i] != tags[start]:
            label = tags[start]
            if label is not None:
                spans.append((start, i, label))
            start = i
    return spans


# the user_data key spaCy gives a plain `default=None` doc extension named char_tags (what saved
# DocBins hold; tests/pipeline/test_char_tags.py pins it against spaCy's own)
CHAR_TAGS_KEY = ("._.", "char_tags", None, None)


def _user_data(doc: Doc) -> Dict[Any, Any]:
    """doc.user_data, typed as it is used: spaCy's stub says Dict[str, Any], but its own
    extension keys (CHAR_TAGS_KEY) are tuples."""
    return cast(Dict[Any, Any], doc.user_data)


def _get_char_tags(doc: Doc) -> Optional[Tuple[Optional[str], ...]]:
    value = _user_data(doc).get(CHAR_TAGS_KEY)
    return None if value is None else tuple(value)


def _set_char_tags(doc: Doc, value: Optional[Sequence[Optional[str]]]) -> None:
    """Stored as a tuple (what msgpack gives back after Doc.to_bytes / DocBin anyway),
    checked: one label (str) or None per character of doc.text."""
    if value is None:
        _user_data(doc)[CHAR_TAGS_KEY] = None
        return
    if isinstance(value, str):
        raise ValueError("doc._.char_tags takes a sequence of labels (one per character), not a string")
    value = tuple(value)
    if len(value) != len(doc.text):
        raise ValueError(
            f"doc._.char_tags needs one label (or None) per character of doc.text: got {len(value)} "
            f"labels for {len(doc.text)} characters"
        )
    bad = next((v for v in value if v is not None and not isinstance(v, str)), None)
    if bad is not None:
        raise ValueError(f"doc._.char_tags labels are strings or None, got {bad!r}")
    _user_data(doc)[CHAR_TAGS_KEY] = value


def _get_char_spans(doc: Doc) -> List[Tuple[int, int, str]]:
    return char_spans_from_tags(doc._.char_tags)


def install_extensions() -> None:
    if not Doc.has_extension("char_tags"):
        Doc.set_extension("char_tags", getter=_get_char_tags, setter=_set_char_tags)
    if not Doc.has_extension("char_spans"):
        Doc.set_extension("char_spans", getter=_get_char_spans)


install_extensions()


def align_char_tags(tags: Optional[Sequence[Optional[str]]], src_text: str, dst_text: str) -> List[Optional[str]]:
    """``tags`` (one per character of ``src_text``) moved onto ``dst_text``. Equal texts:
    a copy. Texts that differ in whitespace only (what spaCy's Example alignment
    allows): matched on their non-whitespace characters; whitespace gets None."""
    if tags is None:
        return [None] * len(dst_text)
    if len(tags) != len(src_text):
        raise ValueError(
            f"doc._.char_tags has {len(tags)} labels for a text of {len(src_text)} characters: "
            "it needs exactly one label (or None) per character of doc.text"
        )
    if src_text == dst_text:
        return list(tags)
    src = [i for i, c in enumerate(src_text) if not c.isspace()]
    dst = [i for i, c in enumerate(dst_text) if not c.isspace()]
    if len(src) != len(dst) or any(src_text[i] != dst_text[j] for i, j in zip(src, dst)):
        raise ValueError(
            "char_tags cannot be aligned: the predicted and reference texts differ in more "
            f"than whitespace ({src_text[:40]!r}... vs {dst_text[:40]!r}...)"
        )
    out: List[Optional[str]] = [None] * len(dst_text)
    for i, j in zip(src, dst):
        out[j] = tags[i]
    return out
