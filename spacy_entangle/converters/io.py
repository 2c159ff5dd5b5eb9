"""What every converter shares: reading UTF-8 text with FILE:LINE errors, one format-error
base, the vocab to make Docs with, and atomic writers (no half-written output on failure)."""

import os
import uuid
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Type, Union

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab


class FormatError(ValueError):
    """Malformed input of any converter (each format has its subclass); ``str()`` reads ``FILE:LINE: message`` (LINE is 1-based)."""

    def __init__(self, path: Union[str, Path], line: Optional[int], message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


def read_lines(path: Path, error: Type[FormatError] = FormatError) -> Iterator[Tuple[int, str]]:
    """(1-based line number, line without its line end) of a UTF-8 text file, a leading BOM
    dropped; a missing file or bad bytes raise ``error`` naming the file (and line)."""
    if not path.exists():
        raise error(path, None, "file not found")
    if not path.is_file():
        raise error(path, None, "not a file")
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise error(path, lineno, f"not valid UTF-8 ({e.reason})") from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield lineno, line.rstrip("\r\n")


def get_vocab(nlp_vocab_or_lang: Union[str, Vocab, object]) -> Vocab:
    """The vocab to make Docs with: a language code (a blank vocab), a Vocab or a Language."""
    if isinstance(nlp_vocab_or_lang, Vocab):
        return nlp_vocab_or_lang
    if isinstance(nlp_vocab_or_lang, str):
        from spacy.util import get_lang_class
        from spacy.vocab import create_vocab

        # the vocab spacy.blank(lang) would hold, without building a Language: its constructor
        # imports every installed package's pipeline factories (spacy-transformers, and with it
        # transformers: seconds at every converter's start), and a converter runs no pipeline
        try:
            return create_vocab(nlp_vocab_or_lang, get_lang_class(nlp_vocab_or_lang).Defaults)
        except ImportError:
            raise ValueError(
                f"unknown language code {nlp_vocab_or_lang!r} (spaCy has no such language; "
                "use 'xx' for a language-neutral vocab)"
            ) from None
    vocab = getattr(nlp_vocab_or_lang, "vocab", None)  # a Language object
    if isinstance(vocab, Vocab):
        return vocab
    raise TypeError(f"expected a language code, a Vocab or a Language, got {nlp_vocab_or_lang!r}")


def write_bytes_atomic(data: bytes, output: Union[str, Path]) -> None:
    """Write a file via a temp file in the output's folder, then os.replace (no
    half-written output on failure)."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    # a fresh name in the same folder (so os.replace is atomic), created with the usual umask
    tmp = output.parent / f".{output.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, output)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_docbin_atomic(docs: List[Doc], output: Union[str, Path], *, store_user_data: bool = False) -> None:
    """Write docs as a DocBin, atomically. store_user_data: keep doc.user_data (doc._.*)."""
    write_bytes_atomic(DocBin(docs=docs, store_user_data=store_user_data).to_bytes(), output)
