"""`convert`: CoNLL-style BIO NER files (WNUT-17, MasakhaNER) to .spacy (the work is
`spacy_entangle.converters.conll_ner`)."""

from pathlib import Path
from typing import Optional

import typer

from ..converters.conll_ner import Sep, convert
from ._app import app, cli_errors


@app.command("convert")
def convert_cli(
    input_path: Path = typer.Argument(
        ..., help="Token-per-line BIO file (TOKEN<TAB>TAG or TOKEN TAG, blank line between sentences)", dir_okay=False
    ),
    output_path: Path = typer.Argument(..., help="Output .spacy file (DocBin), one Doc per sentence", dir_okay=False),
    lang: str = typer.Option("xx", "--lang", "-l", help="Language code of the blank vocab the Docs are made with"),
    sep: Sep = typer.Option(
        Sep.auto,
        "--sep",
        "-s",
        help="Column separator: tab, space (any whitespace), or auto (tab if the first token line holds one)",
    ),
    repair_iob: bool = typer.Option(
        False, "--repair-iob", help="Read an I-X that does not continue an X entity as B-X (default: error)"
    ),
    spans_key: Optional[str] = typer.Option(
        None, "--spans-key", help="Also store the entities as doc.spans[KEY] (for a spancat, e.g. sc)"
    ),
) -> None:
    """Convert a CoNLL-style BIO NER file (WNUT-17, MasakhaNER) to a .spacy corpus."""
    with cli_errors("convert", f"{input_path} -> {output_path}"):
        stats = convert(input_path, output_path, lang=lang, sep=sep, repair_iob=repair_iob, spans_key=spans_key)
    typer.echo(f"✔ {input_path} -> {output_path}: {stats.summary()} [sep={stats.sep}]")
