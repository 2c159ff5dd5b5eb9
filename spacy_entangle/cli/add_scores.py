"""`python -m spacy_entangle add-scores IN OUT --beam-width 4`: a saved pipeline whose
transition-based `ner` is rebuilt as `scored_ner` (the same weights, decoded by beam search),
so that each entity has a confidence in doc.spans["ents"].attrs["scores"] (the work is
`spacy_entangle.pipeline.scored_ner.load_scored`)."""

from pathlib import Path
from typing import Optional

import typer

from ..pipeline.scored_ner import DEFAULT_BEAM_WIDTH, DEFAULT_SPANS_KEY, load_scored
from ._app import app, cli_errors


@app.command("add-scores")
def add_scores_cli(
    input_path: Path = typer.Argument(
        ..., help="A saved pipeline (folder) with a transition-based ner", file_okay=False
    ),
    output_path: Path = typer.Argument(..., help="Where the pipeline with the scored ner is saved", file_okay=False),
    beam_width: int = typer.Option(
        DEFAULT_BEAM_WIDTH, "--beam-width", "-b", help="Analyses kept by the beam (>= 2); wider: slower"
    ),
    beam_density: float = typer.Option(
        0.0, "--beam-density", help="Drop analyses below this share of the best one's probability (0: keep all)"
    ),
    spans_key: str = typer.Option(
        DEFAULT_SPANS_KEY, "--spans-key", help="doc.spans key of the entities and their scores"
    ),
    component: str = typer.Option("ner", "--component", "-c", help="The entity recognizer to score"),
    show: Optional[str] = typer.Option(
        None, "--show", help="A text the saved pipeline annotates: its entities and their scores are printed"
    ),
) -> None:
    """Give a saved pipeline's ner a confidence per entity (beam search, no retraining)."""
    with cli_errors("add-scores", f"{input_path} -> {output_path}"):
        if input_path.resolve() == output_path.resolve():
            raise ValueError("OUT must be another folder than IN (the pipeline is read from IN)")
        nlp = load_scored(input_path, component, beam_width=beam_width, beam_density=beam_density, spans_key=spans_key)
        nlp.to_disk(output_path)
    typer.echo(
        f"✔ {input_path} -> {output_path}: '{component}' decoded by a beam of {beam_width}, "
        f'entity scores in doc.spans["{spans_key}"].attrs["scores"]'
    )
    if show is not None:
        import spacy

        with cli_errors("add-scores", str(output_path)):
            doc = spacy.load(output_path)(show)
        group = doc.spans[spans_key]
        for span, score in zip(group, group.attrs["scores"]):
            typer.echo(f"{span.text}\t{span.label_}\t{float(score):.3f}")
        if not len(group):
            typer.echo("(no entity in that text)")
