"""`convert-textcat`: line-aligned text + label files (TweetEval) to .spacy with doc.cats
(the work is `spacy_entangle.converters.textcat`)."""

from pathlib import Path

import typer

from ..converters.textcat import convert_textcat
from ._app import app, cli_errors


@app.command("convert-textcat")
def convert_textcat_cli(
    text_path: Path = typer.Argument(..., help="One text per line (e.g. TweetEval train_text.txt)", dir_okay=False),
    labels_path: Path = typer.Argument(
        ..., help="One label id per line, aligned with the texts (e.g. train_labels.txt)", dir_okay=False
    ),
    mapping_path: Path = typer.Argument(..., help="ID<TAB>NAME per line (e.g. mapping.txt)", dir_okay=False),
    output_path: Path = typer.Argument(
        ..., help="Output .spacy file (DocBin), one Doc per line, exclusive doc.cats", dir_okay=False
    ),
    lang: str = typer.Option(
        "en", "--lang", "-l", help="Language code of the tokenizer and vocab the Docs are made with"
    ),
) -> None:
    """Convert line-aligned texts + label ids (TweetEval) to a .spacy text classification corpus."""
    with cli_errors("convert-textcat", f"{text_path} -> {output_path}"):
        stats = convert_textcat(text_path, labels_path, mapping_path, output_path, lang=lang)
    typer.echo(f"✔ {text_path} -> {output_path}: {stats.summary()}")
