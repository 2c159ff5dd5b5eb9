"""Convert CoNLL-U (Universal Dependencies; Tweebank v2) to ``.spacy`` for POS tagging.

spaCy's own ``spacy convert -c conllu`` joins the FORMs with the SpaceAfter flags, so a
tweet's doubled spaces, tabs or non-breaking spaces are lost and ``doc.text`` is not the
tweet. Here every Doc's text is exactly the sentence's ``# text =`` comment, so the
character encoder reads the raw tweet:

- one Doc per sentence (tweet); the FORMs are found in the raw text in order: after a
  token, only whitespace may be skipped, then the next FORM must follow. A FORM that is
  not there is an error naming the file and line. One space after a token is its
  ``whitespace_``; any other whitespace between tokens (or around the text) becomes a
  whitespace token, spaCy's own convention, with no annotation (not trained, not scored);
- annotations: UPOS -> ``token.pos_``; ``token.tag_`` = XPOS where the line has one
  (``--tag xpos``, the default) or UPOS (``--tag upos``: spaCy's ``tagger`` predicts
  ``tag_``, so this is how it learns UPOS); LEMMA -> ``lemma_`` and FEATS -> ``morph``
  where given. ``_`` means unset. Dependencies are not converted;
- a multiword token (``1-2``) is one surface token: when its words' FORMs spell its FORM
  (``gonna`` = ``gon`` + ``na``) the words become tokens of their own with no space between
  them; otherwise the surface FORM is one unannotated token (counted in the summary);
- empty nodes (``1.1``) have no surface form and are skipped;
- fallback: a sentence without ``# text =`` is rebuilt from its FORMs and the
  ``SpaceAfter=No`` flags of the MISC column (counted in the summary).

    python -m spacy_entangle convert-conllu en-ud-tweet-train.conllu corpus/train.spacy --tag upos
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import List, Optional, Tuple, Union

from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .io import FormatError, get_vocab, read_lines, write_docbin_atomic

TEXT_RE = re.compile(r"^#\s*text\s*=(.*)$")
WORD_ID = re.compile(r"^[1-9][0-9]*$")
RANGE_ID = re.compile(r"^([1-9][0-9]*)-([1-9][0-9]*)$")
EMPTY_ID = re.compile(r"^[0-9]+\.[1-9][0-9]*$")
N_COLUMNS = 10


class ConlluFormatError(FormatError):
    """Malformed CoNLL-U; ``str()`` reads ``FILE:LINE: message`` (LINE is 1-based)."""


class TagFrom(str, Enum):
    xpos = "xpos"
    upos = "upos"


@dataclass
class Word:
    """One syntactic word (an integer ID line)."""

    form: str
    lemma: Optional[str]
    upos: Optional[str]
    xpos: Optional[str]
    feats: Optional[str]
    space_after: bool
    line: int


@dataclass
class Surface:
    """What the raw text holds: a word, or a multiword token with its words."""

    form: str
    line: int
    words: List[Word]
    multiword: bool = False
    space_after: bool = True

    @property
    def splits(self) -> bool:
        """A multiword token whose words spell it (``gonna`` = ``gon`` + ``na``) becomes
        its words; otherwise it stays one unannotated token."""
        return "".join(w.form for w in self.words) == self.form


@dataclass
class Sentence:
    text: Optional[str] = None
    text_line: Optional[int] = None
    units: List[Surface] = field(default_factory=list)
    first_line: int = 0


@dataclass
class ConlluStats:
    docs: int = 0
    words: int = 0
    whitespace_tokens: int = 0
    no_text: int = 0
    multiword_split: int = 0
    multiword_merged: int = 0
    empty_nodes: int = 0
    upos: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        extra = []
        if self.whitespace_tokens:
            extra.append(f"{self.whitespace_tokens} whitespace tokens (unannotated)")
        if self.no_text:
            extra.append(f"{self.no_text} sentences without '# text =' (rebuilt from SpaceAfter)")
        if self.multiword_split:
            extra.append(f"{self.multiword_split} multiword tokens split into their words")
        if self.multiword_merged:
            extra.append(f"{self.multiword_merged} multiword tokens kept whole (unannotated)")
        if self.empty_nodes:
            extra.append(f"{self.empty_nodes} empty nodes skipped")
        return f"{self.docs} docs, {self.words} words, {len(self.upos)} UPOS labels" + "".join(f"; {e}" for e in extra)


def _value(field_: str) -> Optional[str]:
    return None if field_ == "_" else field_


def _space_after(misc: str) -> bool:
    return "SpaceAfter=No" not in misc.split("|")


def read_conllu(path: Union[str, Path]) -> Tuple[List[Sentence], int]:
    """Sentences of a CoNLL-U file (surface units with their words) and the number of
    empty nodes skipped. Raises ConlluFormatError (file + 1-based line)."""
    path = Path(path)
    sentences: List[Sentence] = []
    current = Sentence()
    open_range: Optional[Tuple[int, int, Surface]] = None  # (first id, last id, unit)
    expected = 1  # the next integer word id
    empty = 0

    def close(lineno: int) -> None:
        nonlocal current, expected
        if open_range is not None:
            raise ConlluFormatError(path, lineno, f"multiword token {open_range[0]}-{open_range[1]} is missing words")
        if current.units:
            sentences.append(current)
        elif current.text is not None:
            raise ConlluFormatError(path, current.text_line, "sentence with '# text =' but no token lines")
        current, expected = Sentence(), 1

    lineno = 0
    for lineno, line in read_lines(path, ConlluFormatError):
        if not line.strip():
            close(lineno)
            continue
        if line.startswith("#"):
            if current.units:
                raise ConlluFormatError(path, lineno, "comment line inside a sentence (a blank line must end it first)")
            match = TEXT_RE.match(line)
            if match:
                text = match.group(1)
                current.text = text[1:] if text.startswith(" ") else text
                current.text_line = lineno
            continue
        cols = line.split("\t")
        if len(cols) != N_COLUMNS:
            raise ConlluFormatError(
                path, lineno, f"expected {N_COLUMNS} tab-separated columns, got {len(cols)}: {line!r}"
            )
        id_, form, lemma, upos, xpos, feats, _head, _deprel, _deps, misc = cols
        if not current.units and current.first_line == 0:
            current.first_line = lineno
        if EMPTY_ID.match(id_):
            empty += 1
            continue
        if form == "":
            raise ConlluFormatError(path, lineno, "empty FORM")
        match = RANGE_ID.match(id_)
        if match:
            first, last = int(match.group(1)), int(match.group(2))
            if first != expected or last <= first:
                raise ConlluFormatError(
                    path, lineno, f"multiword token range {id_} (expected it to start at word {expected})"
                )
            unit = Surface(form, lineno, [], multiword=True, space_after=_space_after(misc))
            current.units.append(unit)
            open_range = (first, last, unit)
            continue
        if not WORD_ID.match(id_):
            raise ConlluFormatError(path, lineno, f"invalid ID {id_!r} (expected N, N-M or N.M)")
        if int(id_) != expected:
            raise ConlluFormatError(path, lineno, f"word ID {id_} out of order (expected {expected})")
        expected += 1
        upos_value = _value(upos)
        if upos_value is not None and upos_value not in UPOS_IDS:
            raise ConlluFormatError(path, lineno, f"unknown UPOS {upos!r}")
        lemma_value = lemma if lemma != "_" or form == "_" else None
        word = Word(form, lemma_value, upos_value, _value(xpos), _value(feats), _space_after(misc), lineno)
        if open_range is not None:
            open_range[2].words.append(word)
            if int(id_) == open_range[1]:
                open_range = None
        else:
            current.units.append(Surface(form, lineno, [word], space_after=word.space_after))
    close(lineno + 1)
    return sentences, empty


def _rebuild_text(sent: Sentence) -> str:
    """The fallback for a sentence without '# text =': FORMs joined by SpaceAfter."""
    parts = []
    for i, unit in enumerate(sent.units):
        parts.append(unit.form)
        if unit.space_after and i < len(sent.units) - 1:
            parts.append(" ")
    return "".join(parts)


def _align(path: Path, sent: Sentence, text: str) -> Tuple[List[str], List[bool], List[Optional[Tuple[Surface, int]]]]:
    """Words and spaces of a Doc whose text is exactly ``text``, and for each Doc token
    the (surface unit, word index) it comes from (-1: a whole multiword token; None: a
    whitespace token)."""
    words: List[str] = []
    spaces: List[bool] = []
    origin: List[Optional[Tuple[Surface, int]]] = []

    def gap(chunk: str) -> None:
        # one ' ' is the previous token's whitespace_; anything else is a whitespace token
        if not chunk:
            return
        if words and chunk[0] == " " and not spaces[-1]:
            spaces[-1] = True
            chunk = chunk[1:]
        if chunk:
            words.append(chunk)
            spaces.append(False)
            origin.append(None)

    pos = 0
    for unit in sent.units:
        start = pos
        while start < len(text) and text[start].isspace():
            start += 1
        if not text.startswith(unit.form, start):
            where = text[start : start + 20]
            raise ConlluFormatError(
                path,
                unit.line,
                f"FORM {unit.form!r} not found in the '# text =' of line {sent.text_line} at character {start} "
                f"(the text there reads {where!r}; only whitespace may lie between tokens)",
            )
        gap(text[pos:start])
        if unit.multiword and not unit.splits:
            words.append(unit.form)
            spaces.append(False)
            origin.append((unit, -1))
        else:
            for i, word in enumerate(unit.words):
                words.append(word.form)
                spaces.append(False)
                origin.append((unit, i))
        pos = start + len(unit.form)
    gap(text[pos:])
    return words, spaces, origin


def conllu_to_docs(
    path: Union[str, Path],
    nlp_vocab_or_lang: Union[str, Vocab, object] = "en",
    *,
    tag_from: Union[str, TagFrom] = TagFrom.xpos,
    stats: Optional[ConlluStats] = None,
) -> List[Doc]:
    """One Doc per CoNLL-U sentence, ``doc.text`` exactly its ``# text =``, UPOS in
    ``pos_``, XPOS (or UPOS, with tag_from="upos") in ``tag_``. Raises ConlluFormatError
    (file + 1-based line) on malformed input, a FORM missing from the text, or no sentence."""
    path = Path(path)
    tag_from = TagFrom(tag_from)
    vocab = get_vocab(nlp_vocab_or_lang)
    sentences, empty = read_conllu(path)
    if not sentences:
        raise ConlluFormatError(path, None, "no sentences found (empty output)")
    stats = stats if stats is not None else ConlluStats()
    stats.empty_nodes += empty
    docs = []
    for sent in sentences:
        text = sent.text
        if text is None:
            text = _rebuild_text(sent)
            stats.no_text += 1
        words, spaces, origin = _align(path, sent, text)
        doc = Doc(vocab, words=words, spaces=spaces)
        for token, source in zip(doc, origin):
            if source is None:
                stats.whitespace_tokens += 1
                continue
            unit, i = source
            if i < 0:
                continue
            word = unit.words[i]
            if word.upos is not None:
                token.pos_ = word.upos
                stats.upos[word.upos] += 1
            tag = word.upos if tag_from is TagFrom.upos else word.xpos
            if tag is not None:
                token.tag_ = tag
            if word.lemma is not None:
                token.lemma_ = word.lemma
            if word.feats is not None:
                token.set_morph(word.feats)  # type: ignore[attr-defined]  # public API, missing from spaCy's token.pyi
        for unit in sent.units:
            if unit.multiword:
                if unit.splits:
                    stats.multiword_split += 1
                else:
                    stats.multiword_merged += 1
        if doc.text != text:  # the alignment above guarantees it; a bug if not
            raise ConlluFormatError(path, sent.first_line, f"internal error: Doc text {doc.text!r} != {text!r}")
        stats.docs += 1
        stats.words += sum(len(u.words) for u in sent.units)
        docs.append(doc)
    return docs


def convert_conllu(
    input_path: Union[str, Path],
    output_path: Union[str, Path],
    *,
    lang: str = "en",
    tag_from: Union[str, TagFrom] = TagFrom.xpos,
) -> ConlluStats:
    """Convert a CoNLL-U file to a .spacy DocBin (written atomically); returns the stats."""
    stats = ConlluStats()
    docs = conllu_to_docs(input_path, lang, tag_from=tag_from, stats=stats)
    write_docbin_atomic(docs, output_path)
    return stats
