"""What a subword tokenizer keeps of a corpus's words: the reason a character side can matter.

    python scripts/tokenizer_coverage.py CORPUS [CORPUS ...] --tokenizer backbones/minilm

Each CORPUS is a .spacy file, or a folder whose */dev.spacy files are read (MasakhaNER's
corpus/LANG/dev.spacy: one row per language, named by its folder). Per corpus it prints the
words, the share of words with an unknown piece ([UNK]: the subword side does not see the
word), the share the tokenizer's normalizer changes beyond lowercasing (an uncased BERT strips
accents and tone marks: `Ọjọ́` -> `ojo`), and the pieces per word. Needs a fast tokenizer (its
normalizer is read); nothing is trained or run through a model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import spacy
import typer
from spacy.tokens import DocBin
from tables import markdown_table, write_report  # project/scripts
from transformers import AutoTokenizer

HEADER = ["corpus", "words", "words with [UNK]", "words the normalizer changes", "pieces per word"]


def corpus_files(paths: Iterable[Path]) -> List[Tuple[str, Path]]:
    """(name, .spacy file) per CORPUS: a file is named by its stem, a folder's */dev.spacy by
    their folder."""
    out = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*/dev.spacy"))
            if not found:
                sys.exit(f"✘ tokenizer_coverage.py: no */dev.spacy under {path}")
            out += [(f.parent.name, f) for f in found]
        elif path.is_file():
            out.append((path.stem, path))
        else:
            sys.exit(f"✘ tokenizer_coverage.py: no such corpus: {path}")
    return out


def coverage(words: List[str], tokenizer) -> Dict[str, float]:
    """The figures of one corpus's words (empty corpus: zero words, no shares)."""
    if not words:
        return {"words": 0}
    normalizer = tokenizer.backend_tokenizer.normalizer
    encoded = tokenizer(words, add_special_tokens=False)["input_ids"]  # one batched call
    pieces = sum(len(ids) for ids in encoded)
    unk = sum(tokenizer.unk_token_id in ids for ids in encoded)
    changed = 0
    if normalizer is not None:
        changed = sum(normalizer.normalize_str(word) not in (word, word.lower()) for word in words)
    n = len(words)
    return {"words": n, "unk": unk / n, "normalized": changed / n, "pieces": pieces / n}


def main(
    corpora: List[Path] = typer.Argument(..., help=".spacy files, or folders of LANG/dev.spacy"),
    tokenizer_path: str = typer.Option(..., "--tokenizer", help="a tokenizer's folder or Hugging Face name"),
    output: Optional[Path] = typer.Option(None, "--output", help="also write the table to this Markdown file"),
) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    if not tokenizer.is_fast:
        sys.exit(f"✘ tokenizer_coverage.py: {tokenizer_path} has no fast tokenizer (its normalizer is read)")
    nlp = spacy.blank("xx")
    rows = []
    for name, path in corpus_files(corpora):
        words = [t.text for doc in DocBin().from_disk(path).get_docs(nlp.vocab) for t in doc]
        c = coverage(words, tokenizer)
        if not c["words"]:
            rows.append([name, "0", "–", "–", "–"])
            continue
        rows.append(
            [name, f"{c['words']:,}", f"{100 * c['unk']:.1f}%", f"{100 * c['normalized']:.1f}%", f"{c['pieces']:.2f}"]
        )
    lines = markdown_table(HEADER, rows)
    if output:
        write_report(output, lines)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    typer.run(main)
