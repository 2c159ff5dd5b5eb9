"""`convert-codeswitch`: the Spanish-Wixarika code-switching corpus to .spacy with
doc._.char_tags (the work is `spacy_entangle.converters.codeswitch`)."""

from pathlib import Path

import typer

from ..converters.codeswitch import convert_codeswitch
from ._app import app, cli_errors


@app.command("convert-codeswitch")
def convert_codeswitch_cli(
    input_path: Path = typer.Argument(
        ...,
        help="mixed_annotated.txt (POST_ID<TAB>TOKEN<TAB>LABEL lines; '- PIECE LABEL' after MIXED words)",
        dir_okay=False,
    ),
    output_dir: Path = typer.Argument(
        ..., help="Output folder: train.spacy, dev.spacy, test.spacy, splits.json", file_okay=False
    ),
    dev_frac: float = typer.Option(0.2, "--dev-frac", help="Fraction of the posts for dev (per stratum)"),
    test_frac: float = typer.Option(
        0.2, "--test-frac", help="Fraction of the posts for test (per stratum); 0: no test split"
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the split (part of the hashed key)"),
    lang: str = typer.Option("es", "--lang", "-l", help="Language code of the blank vocab the Docs are made with"),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Error (instead of unlabelled characters) on MIXED words without pieces and pieces without labels",
    ),
    word_tags: bool = typer.Option(
        True, "--word-tags/--no-word-tags", help="Also set token.tag_ to the word's label (MIXED for mixed words)"
    ),
) -> None:
    """Convert the Spanish-Wixarika code-switching annotation to char_tagger corpora."""
    with cli_errors("convert-codeswitch", f"{input_path} -> {output_dir}"):
        stats = convert_codeswitch(
            input_path,
            output_dir,
            dev_frac=dev_frac,
            test_frac=test_frac,
            seed=seed,
            lang=lang,
            strict=strict,
            word_tags=word_tags,
        )
    for warning in stats.warnings:
        typer.echo(f"⚠ {warning}", err=True)
    typer.echo(f"✔ {input_path} -> {output_dir}: {stats.summary()}")
