"""Convert line-aligned text classification files (TweetEval) to ``.spacy``.

TweetEval keeps each split as two files aligned by line number, ``{split}_text.txt`` (one
tweet per line) and ``{split}_labels.txt`` (one integer label id per line), plus
``mapping.txt`` (``id<TAB>name``). Each text line becomes one Doc, its text the line
verbatim (trailing spaces included, only the line end dropped), tokenized by spaCy's
tokenizer for ``--lang``; ``doc.cats`` holds every label of the mapping, 1.0 for the
line's label and 0.0 for the others (exclusive classes: spaCy's ``textcat``).

Errors name the file and line: different line counts, an empty text or label line, a
label id the mapping does not hold, a malformed or duplicated mapping entry.

    python -m spacy_entangle convert-textcat train_text.txt train_labels.txt mapping.txt corpus/train.spacy
"""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Union

from spacy.tokens import Doc

from .io import FormatError, get_vocab, read_lines, write_docbin_atomic


class TextcatFormatError(FormatError):
    """Malformed input; ``str()`` reads ``FILE:LINE: message`` (LINE is 1-based)."""


@dataclass
class TextcatStats:
    docs: int = 0
    tokens: int = 0
    labels: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        per_label = ", ".join(f"{label} {n}" for label, n in self.labels.items())
        return f"{self.docs} docs, {self.tokens} tokens, labels: {per_label}"


def read_mapping(path: Union[str, Path]) -> Dict[str, str]:
    """``id<TAB>name`` lines -> {id: name}, in file order (blank lines skipped)."""
    path = Path(path)
    mapping: Dict[str, str] = {}
    for lineno, line in read_lines(path, TextcatFormatError):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 2 or not cols[0].strip() or not cols[1].strip():
            raise TextcatFormatError(path, lineno, f"expected ID<TAB>NAME, got {line!r}")
        id_, name = cols[0].strip(), cols[1].strip()
        if id_ in mapping:
            raise TextcatFormatError(path, lineno, f"label id {id_!r} mapped twice")
        if name in mapping.values():
            raise TextcatFormatError(path, lineno, f"label name {name!r} used twice")
        mapping[id_] = name
    if len(mapping) < 2:
        raise TextcatFormatError(path, None, f"a mapping needs at least 2 labels, found {len(mapping)}")
    return mapping


def textcat_to_docs(
    text_path: Union[str, Path],
    labels_path: Union[str, Path],
    mapping_path: Union[str, Path],
    nlp_vocab_or_lang: Union[str, object] = "en",
    *,
    stats: Optional[TextcatStats] = None,
) -> List[Doc]:
    """One Doc per text line with exclusive ``doc.cats`` over all labels of the mapping.

    nlp_vocab_or_lang: a language code (its default tokenizer), a Vocab or a Language (its
    tokenizer). Raises TextcatFormatError (file + 1-based line) on malformed input."""
    import spacy

    text_path, labels_path = Path(text_path), Path(labels_path)
    mapping = read_mapping(mapping_path)
    texts = list(read_lines(text_path, TextcatFormatError))
    labels = list(read_lines(labels_path, TextcatFormatError))
    if len(texts) != len(labels):
        raise TextcatFormatError(
            labels_path,
            None,
            f"{len(labels)} label lines but {text_path} has {len(texts)} text lines (they must align by line)",
        )
    if not texts:
        raise TextcatFormatError(text_path, None, "no lines found (empty output)")
    make_doc = getattr(nlp_vocab_or_lang, "make_doc", None)  # a Language: its own tokenizer
    if not callable(make_doc):  # a language code or a Vocab: that language's default tokenizer on the vocab
        vocab = get_vocab(nlp_vocab_or_lang)
        make_doc = spacy.blank(vocab.lang or "xx", vocab=vocab).make_doc
    stats = stats if stats is not None else TextcatStats()
    stats.labels.update({name: 0 for name in mapping.values()})
    docs = []
    for (lineno, text), (_, label) in zip(texts, labels):
        if not text.strip():
            raise TextcatFormatError(text_path, lineno, "empty text line")
        label_id = label.strip()
        if not label_id:
            raise TextcatFormatError(labels_path, lineno, "empty label line")
        if label_id not in mapping:
            known = ", ".join(mapping)
            raise TextcatFormatError(labels_path, lineno, f"unknown label id {label_id!r} (the mapping holds {known})")
        doc = make_doc(text)
        gold = mapping[label_id]
        doc.cats = {name: float(name == gold) for name in mapping.values()}
        stats.docs += 1
        stats.tokens += len(doc)
        stats.labels[gold] += 1
        docs.append(doc)
    return docs


def convert_textcat(
    text_path: Union[str, Path],
    labels_path: Union[str, Path],
    mapping_path: Union[str, Path],
    output_path: Union[str, Path],
    *,
    lang: str = "en",
) -> TextcatStats:
    """Convert one split to a .spacy DocBin (written atomically); returns the stats."""
    stats = TextcatStats()
    docs = textcat_to_docs(text_path, labels_path, mapping_path, lang, stats=stats)
    write_docbin_atomic(docs, output_path)
    return stats
