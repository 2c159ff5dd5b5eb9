"""Annotate a large corpus with any trained spaCy pipeline, locally or on a Ray cluster.

    python -m spacy_entangle annotate en_entangle_wnut posts/*.jsonl annotated/
    python -m spacy_entangle annotate en_entangle_wnut posts/ annotated/ --engine ray --address auto

The work lives in `spacy_entangle.annotate`; this command only maps options onto it.
"""

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, cli_errors


class Engine(str, Enum):
    local = "local"
    ray = "ray"


class Format(str, Enum):
    jsonl = "jsonl"
    spacy = "spacy"


@app.command("annotate")
def annotate_cli(
    pipeline: str = typer.Argument(..., help="Trained pipeline: an installed package name or a folder"),
    inputs: List[str] = typer.Argument(
        ..., help="Input .txt (a doc per line), .jsonl or .parquet files, globs or folders"
    ),
    output_dir: Path = typer.Argument(
        ..., help="Folder for the shards, manifest.json and errors.jsonl (other files in it are left alone)"
    ),
    engine: Engine = typer.Option(
        Engine.local, "--engine", "-e", help="local: nlp.pipe on this machine; ray: Ray Data actors"
    ),
    fmt: Format = typer.Option(
        Format.jsonl, "--format", "-f", help="jsonl (id, text, entities, tags, cats) or spacy (DocBin, id in user_data)"
    ),
    text_key: str = typer.Option(
        "text",
        "--text-key",
        help="Key (.jsonl) or column (.parquet) of the text; an 'id' key or column is carried into the output",
    ),
    shard_size: int = typer.Option(
        10000, "--shard-size", help="Input lines (or rows) per output shard; keep it when resuming"
    ),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", "-b", help="nlp.pipe batch size (default: the pipeline's)"
    ),
    n_process: int = typer.Option(1, "--n-process", "-n", help="local: processes of nlp.pipe"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="local: GPU to run on (-1: CPU)"),
    address: Optional[str] = typer.Option(
        None,
        "--address",
        help="ray: address of an existing cluster ('auto' for one started with `ray start --head`); default: a local one",
    ),
    num_workers: Optional[int] = typer.Option(
        None, "--num-workers", help="ray: pipeline actors (default: as many as the cluster holds)"
    ),
    cpus_per_worker: float = typer.Option(1.0, "--cpus-per-worker", help="ray: CPUs per actor"),
    gpus_per_worker: float = typer.Option(
        0.0, "--gpus-per-worker", help="ray: GPUs per actor (> 0: spacy.require_gpu in each)"
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar"),
) -> None:
    """Annotate a corpus into resumable shards: a re-run with the same arguments skips finished shards."""
    from ..annotate import annotate

    with cli_errors("annotate", str(output_dir)):
        summary = annotate(
            pipeline,
            inputs,
            output_dir,
            engine=engine.value,
            fmt=fmt.value,
            text_key=text_key,
            shard_size=shard_size,
            batch_size=batch_size,
            n_process=n_process,
            gpu_id=gpu_id,
            address=address,
            num_workers=num_workers,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            progress=progress,
        )
    typer.echo(f"✔ {summary}")
