"""`convert-conllu`: CoNLL-U (Tweebank v2) to .spacy (the work is
`spacy_entangle.converters.conllu`)."""

from pathlib import Path

import typer

from ..converters.conllu import TagFrom, convert_conllu
from ._app import app, cli_errors


@app.command("convert-conllu")
def convert_conllu_cli(
    input_path: Path = typer.Argument(
        ..., help="CoNLL-U file (e.g. Tweebank v2 en-ud-tweet-train.conllu)", dir_okay=False
    ),
    output_path: Path = typer.Argument(
        ..., help="Output .spacy file (DocBin), one Doc per sentence, text = its '# text ='", dir_okay=False
    ),
    lang: str = typer.Option("en", "--lang", "-l", help="Language code of the blank vocab the Docs are made with"),
    tag: TagFrom = typer.Option(
        TagFrom.xpos,
        "--tag",
        help="What token.tag_ holds: xpos (XPOS where given, else unset) or upos (for spaCy's tagger, which predicts tag_)",
    ),
) -> None:
    """Convert CoNLL-U to a .spacy corpus whose texts are the raw sentences (UPOS in pos_)."""
    with cli_errors("convert-conllu", f"{input_path} -> {output_path}"):
        stats = convert_conllu(input_path, output_path, lang=lang, tag_from=tag)
    typer.echo(f"✔ {input_path} -> {output_path}: {stats.summary()} [tag_={tag.value}]")
