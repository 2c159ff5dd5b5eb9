"""The typer app behind `python -m spacy_entangle` (commands register themselves on import)."""
import typer

app = typer.Typer(
    name="spacy-entangle",
    help="spacy-entangle: character + subword entanglement models for spaCy.",
    no_args_is_help=True,
    add_completion=False,
)
