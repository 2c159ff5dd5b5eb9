"""`python -m spacy_entangle perturb IN.spacy OUT.spacy --rate R --seed S`: a noisy copy of
a corpus (CharBERT's character attacks; the work is `spacy_entangle.noise.perturb_corpus`),
annotations kept."""

from pathlib import Path

import typer

from ..noise import ATTACKS, perturb_corpus
from ._app import app, cli_errors


@app.command("perturb")
def perturb_cli(
    input_path: Path = typer.Argument(..., help="Input .spacy corpus (DocBin)", dir_okay=False),
    output_path: Path = typer.Argument(
        ..., help="Output .spacy corpus, the same docs with noisy words", dir_okay=False
    ),
    rate: float = typer.Option(..., "--rate", "-r", help="Probability that a word of 4+ characters is attacked"),
    seed: int = typer.Option(0, "--seed", "-s", help="Random seed (same seed, same output)"),
    attacks: str = typer.Option(
        ",".join(ATTACKS), "--attacks", "-a", help="Comma-separated subset of drop,add,swap,keyboard"
    ),
) -> None:
    """Apply character noise to every doc of a .spacy corpus, keeping entities, tags and cats."""
    with cli_errors("perturb", f"{input_path} -> {output_path}"):
        chosen = [a.strip() for a in attacks.split(",") if a.strip()]
        stats = perturb_corpus(input_path, output_path, rate, seed=seed, attacks=chosen)
    typer.echo(f"✔ {input_path} -> {output_path}: {stats.summary()} rate={rate} seed={seed}")
