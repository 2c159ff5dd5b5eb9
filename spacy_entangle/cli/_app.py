"""The typer app behind `python -m spacy_entangle` (commands register themselves on import)."""

from contextlib import contextmanager
from typing import Iterator

import typer

app = typer.Typer(
    name="spacy-entangle",
    help="spacy-entangle: character + subword entanglement models for spaCy.",
    no_args_is_help=True,
    add_completion=False,
)


@contextmanager
def cli_errors(command: str, where: str) -> Iterator[None]:
    """Bad input (ValueError: the converters' FILE:LINE messages, bad options) and file
    errors (OSError) end a command with one `✘` line and exit code 1, never a traceback."""
    try:
        yield
    except ValueError as e:
        typer.echo(f"✘ {command} failed: {e}", err=True)
        raise typer.Exit(code=1) from None
    except OSError as e:
        typer.echo(f"✘ {command} failed: {where}: {e}", err=True)
        raise typer.Exit(code=1) from None
