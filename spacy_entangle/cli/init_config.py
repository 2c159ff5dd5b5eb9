"""`init-config`: a complete training config for an entangle pipeline, like spaCy's
`init config` (the work is `spacy_entangle.configs.build_config`)."""

from pathlib import Path
from typing import Optional

import typer
from spacy.util import load_config

from ..configs import TASKS, build_config
from ._app import app, cli_errors


@app.command("init-config")
def init_config_cli(
    output: Path = typer.Argument(
        ..., help="The .cfg file to write ('-' for stdout)", metavar="OUT.cfg", allow_dash=True
    ),
    pipeline: str = typer.Option(
        "ner", "--pipeline", "-p", help=f"Comma-separated task components listening to entangle: {', '.join(TASKS)}"
    ),
    preset: str = typer.Option(
        "cpu",
        "--preset",
        help="cpu (en_entangle_wnut's recipe: MiniLM-L6 + the char encoder grown from it, backbones/grown, made by the project's `pretrain-grown`) or paper (roberta-base + google/canine-s, GPU)",
    ),
    char_backbone: Optional[str] = typer.Option(
        None,
        "--char-backbone",
        help="paths.char_backbone (a Hugging Face name or folder); with a custom backbone the co-attention sizes are null: sized from the backbones",
    ),
    subword_backbone: Optional[str] = typer.Option(
        None, "--subword-backbone", help="paths.subword_backbone (a Hugging Face name or folder)"
    ),
    lang: Optional[str] = typer.Option(None, "--lang", help="nlp.lang (default: the --base config's, else en)"),
    base: Optional[Path] = typer.Option(
        None,
        "--base",
        help="A partial config (e.g. only the nlp and components blocks) merged over the preset, its values winning: `spacy init fill-config` with the preset's optimizer, schedule and batches instead of spaCy's defaults",
        exists=True,
        dir_okay=False,
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite OUT.cfg"),
) -> None:
    """Write a complete, validated training config (`spacy train OUT.cfg` trains it)."""
    with cli_errors("init-config", str(output)):
        if str(output) != "-" and output.exists() and not force:
            raise ValueError(f"{output} exists; pass --force to overwrite it")
        partial = load_config(base, interpolate=False) if base is not None else None
        config = build_config(
            pipeline.split(","),
            preset,
            char_backbone=char_backbone,
            subword_backbone=subword_backbone,
            lang=lang,
            base=partial,
        )
        header = (
            f"# spacy-entangle init-config --pipeline {pipeline} --preset {preset}"
            + (f" --base {base}" if base is not None else "")
            + "\n"
            "# train: python -m spacy train THIS.cfg --paths.train TRAIN.spacy --paths.dev DEV.spacy\n"
        )
        text = header + config.to_str()
        if str(output) == "-":
            typer.echo(text)
            return
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf8")
    typer.echo(f"✔ Wrote {output}: entangle + {', '.join(config['nlp']['pipeline'][1:])} ({preset} preset)")
