"""Convert token-per-line BIO files (CoNLL style) to spaCy's binary DocBin format.

Input: one token per line, ``TOKEN<TAB>TAG`` (WNUT-17) or ``TOKEN TAG`` (MasakhaNER), with
whitespace-only lines between sentences. Extra middle columns (CoNLL-2003 style) are ignored:
the first column is the token, the last column is the BIO tag.

Output: one Doc per sentence, its words exactly the given tokens (joined by single spaces),
its entities read from the BIO tags with spaCy's own ``iob_to_biluo`` + ``biluo_tags_to_spans``.

    python -m spacy_entangle convert train.conll corpus/train.spacy --lang en  (cli/convert.py)
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import List, Optional, Tuple, Union

from spacy.tokens import Doc
from spacy.training import biluo_tags_to_spans, iob_to_biluo
from spacy.vocab import Vocab

from .io import FormatError, get_vocab, read_lines, write_docbin_atomic


class ConllFormatError(FormatError):
    """Malformed CoNLL BIO input."""


TAG_RE = re.compile(r"^(?:O|[BI]-\S+)$")


class Sep(str, Enum):
    auto = "auto"
    tab = "tab"
    space = "space"


@dataclass
class Sentence:
    words: List[str] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)
    lines: List[int] = field(default_factory=list)  # 1-based line number of each token


@dataclass
class ConvertStats:
    docs: int = 0
    tokens: int = 0
    entities: Counter = field(default_factory=Counter)
    sep: str = ""
    repaired: int = 0

    def summary(self) -> str:
        n_ents = sum(self.entities.values())
        per_label = ", ".join(f"{label} {n}" for label, n in sorted(self.entities.items()))
        repaired = f"; {self.repaired} orphan I- tag(s) read as B-" if self.repaired else ""
        return f"{self.docs} docs, {self.tokens} tokens, {n_ents} entities ({per_label or 'none'}){repaired}"


def _split_fields(line: str, sep: str) -> List[str]:
    if sep == "tab":
        return line.split("\t")
    return line.split()


def read_conll(
    path: Union[str, Path], sep: Union[str, Sep] = "auto", *, repair_iob: bool = False
) -> Tuple[List[Sentence], str, int]:
    """Read sentences from a token-per-line file.

    sep: "tab" (fields split on tabs, tokens may hold spaces), "space" (split on any
    whitespace), or "auto" (tab if the first non-blank line holds a tab, else space).
    Every I-X must continue a B-X or I-X of the same sentence; with repair_iob an orphan I-X
    is read as B-X instead (conlleval's reading).
    Returns (sentences, the separator used, how many I- tags were repaired). Raises
    ConllFormatError naming the file and the 1-based line of the first problem.
    """
    path = Path(path)
    sep = Sep(sep).value
    sentences: List[Sentence] = []
    current = Sentence()
    repaired = 0
    for lineno, line in read_lines(path, ConllFormatError):
        if not line.strip():
            if current.words:
                sentences.append(current)
                current = Sentence()
            continue
        if sep == "auto":
            sep = "tab" if "\t" in line else "space"
        fields = _split_fields(line, sep)
        if len(fields) < 2 or not fields[-1].strip():
            expected = "TOKEN<TAB>TAG" if sep == "tab" else "TOKEN TAG"
            raise ConllFormatError(path, lineno, f"no tag column (expected {expected}), got {line!r}")
        word, tag = fields[0], fields[-1].strip()
        if word == "":
            raise ConllFormatError(path, lineno, f"empty token in {line!r}")
        if not TAG_RE.match(tag):
            raise ConllFormatError(path, lineno, f"invalid tag {tag!r} (expected O, B-LABEL or I-LABEL)")
        prev = current.tags[-1] if current.tags else "O"
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            if not repair_iob:
                after = repr(prev) if current.tags else "the start of the sentence"
                raise ConllFormatError(
                    path,
                    lineno,
                    f"tag {tag!r} cannot follow {after} (an I- tag must continue B-/I- of "
                    f"the same label; pass --repair-iob to read it as B-{tag[2:]})",
                )
            tag = "B-" + tag[2:]
            repaired += 1
        current.words.append(word)
        current.tags.append(tag)
        current.lines.append(lineno)
    if current.words:
        sentences.append(current)
    return sentences, ("tab" if sep == "auto" else sep), repaired


def conll_to_docs(
    path: Union[str, Path],
    nlp_vocab_or_lang: Union[str, Vocab, object] = "xx",
    *,
    sep: Union[str, Sep] = "auto",
    repair_iob: bool = False,
    stats: Optional[ConvertStats] = None,
    spans_key: Optional[str] = None,
) -> List[Doc]:
    """One Doc per sentence of a BIO token-per-line file, tokens verbatim, entities set
    (and, with spans_key, the same entities as ``doc.spans[spans_key]``).

    nlp_vocab_or_lang: a language code ("en", "xx"), a Vocab or a Language.
    Raises ConllFormatError (file + 1-based line) on malformed input or when the file
    holds no sentence.
    """
    vocab = get_vocab(nlp_vocab_or_lang)
    sentences, used_sep, repaired = read_conll(path, sep=sep, repair_iob=repair_iob)
    if not sentences:
        raise ConllFormatError(path, None, "no sentences found (empty output)")
    stats = stats if stats is not None else ConvertStats()
    stats.sep = used_sep
    stats.repaired += repaired
    docs = []
    for sent in sentences:
        spaces = [True] * (len(sent.words) - 1) + [False]
        doc = Doc(vocab, words=sent.words, spaces=spaces)
        doc.ents = biluo_tags_to_spans(doc, iob_to_biluo(sent.tags))
        if spans_key:  # the same entities as a span group (what a `spancat` trains on)
            doc.spans[spans_key] = list(doc.ents)
        stats.docs += 1
        stats.tokens += len(doc)
        stats.entities.update(ent.label_ for ent in doc.ents)
        docs.append(doc)
    return docs


def convert(
    input_path: Union[str, Path],
    output_path: Union[str, Path],
    *,
    lang: str = "xx",
    sep: Union[str, Sep] = "auto",
    repair_iob: bool = False,
    spans_key: Optional[str] = None,
) -> ConvertStats:
    """Convert input_path to a .spacy DocBin at output_path; returns the stats."""
    stats = ConvertStats()
    docs = conll_to_docs(input_path, lang, sep=sep, repair_iob=repair_iob, stats=stats, spans_key=spans_key)
    write_docbin_atomic(docs, output_path)
    return stats
