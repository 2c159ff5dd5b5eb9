"""Batch annotation of a large corpus with any trained spaCy pipeline: `annotate`.

    from spacy_entangle.annotate import annotate
    summary = annotate("en_entangle_wnut", ["posts/*.jsonl"], "annotated/", engine="ray")

Inputs are cut into fixed shards (readers), each shard is annotated by an engine (local
`nlp.pipe` or Ray Data actors) and written atomically, and the manifest records finished shards
(shards), so a re-run with the same arguments resumes where the last one stopped.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from .readers import expand_inputs, plan_shards
from .shards import ERRORS, MANIFEST, Manifest, remove_stale_temp_files

if TYPE_CHECKING:  # spaCy is imported where a pipeline is loaded
    from spacy.language import Language

ENGINES = ("local", "ray")
FORMATS = ("jsonl", "spacy")


@dataclass
class Summary:
    """What a run leaves in the output folder (finished shards of earlier runs included)."""

    docs_in: int
    docs_out: int
    errors: int
    shards_written: int
    shards_skipped: int
    output_dir: Path

    def __str__(self) -> str:
        return (
            f"{self.docs_in} docs in = {self.docs_out} docs out + {self.errors} errors; "
            f"{self.shards_written} shards written, {self.shards_skipped} already done, in {self.output_dir} "
            f"({MANIFEST}, {ERRORS})"
        )


def annotate(
    pipeline: Union[str, Path],
    inputs: Sequence[Union[str, Path]],
    output_dir: Union[str, Path],
    *,
    engine: str = "local",
    fmt: str = "jsonl",
    text_key: str = "text",
    shard_size: int = 10000,
    batch_size: Optional[int] = None,
    n_process: int = 1,
    gpu_id: int = -1,
    address: Optional[str] = None,
    num_workers: Optional[int] = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0.0,
    progress: bool = True,
) -> Summary:
    """Annotate `inputs` with `pipeline` (a package name or a path) into shards in `output_dir`."""
    _check_options(engine, fmt, shard_size, batch_size, n_process, num_workers, cpus_per_worker, gpus_per_worker)
    pipeline = _resolve_pipeline(pipeline)
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(f"OUTPUT_DIR {output_dir} is a file, not a folder")
    files = expand_inputs(inputs, exclude=output_dir)
    specs = plan_shards(files, shard_size)
    output_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest.open(output_dir, _run_key(pipeline, files, fmt, text_key, shard_size))
    remove_stale_temp_files(output_dir, specs)
    pending = [spec for spec in specs if not manifest.is_done(spec)]
    options: Dict[str, Any] = dict(
        fmt=fmt, text_key=text_key, on_result=manifest.record, batch_size=batch_size, progress=progress
    )
    if engine == "ray":
        from .engines import run_ray

        run_ray(
            pipeline,
            pending,
            output_dir,
            address=address,
            num_workers=num_workers,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            **options,
        )
    elif pending:
        from .engines import run_local

        run_local(_load(pipeline, gpu_id), pending, output_dir, n_process=n_process, **options)
    docs_in, docs_out, errors = manifest.finish(specs)
    return Summary(docs_in, docs_out, errors, len(pending), len(specs) - len(pending), output_dir)


def _check_options(
    engine: str,
    fmt: str,
    shard_size: int,
    batch_size: Optional[int],
    n_process: int,
    num_workers: Optional[int],
    cpus_per_worker: float,
    gpus_per_worker: float,
) -> None:
    checks = [
        (engine in ENGINES, f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}"),
        (fmt in FORMATS, f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}"),
        (shard_size >= 1, f"--shard-size must be >= 1, got {shard_size}"),
        (batch_size is None or batch_size >= 1, f"--batch-size must be >= 1, got {batch_size}"),
        (n_process >= 1, f"--n-process must be >= 1, got {n_process}"),
        (num_workers is None or num_workers >= 1, f"--num-workers must be >= 1, got {num_workers}"),
        (cpus_per_worker > 0, f"--cpus-per-worker must be > 0, got {cpus_per_worker}"),
        (gpus_per_worker >= 0, f"--gpus-per-worker must be >= 0, got {gpus_per_worker}"),
    ]
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


def _resolve_pipeline(pipeline: Union[str, Path]) -> str:
    """An existing path as an absolute one (Ray workers run elsewhere), or an installed package."""
    from spacy.util import is_package

    if Path(pipeline).exists():
        return str(Path(pipeline).resolve())
    if is_package(str(pipeline)):
        return str(pipeline)
    raise ValueError(f"PIPELINE {pipeline}: neither a folder nor an installed pipeline package")


def _run_key(pipeline: str, files: List[Path], fmt: str, text_key: str, shard_size: int) -> dict:
    """What must not change for a run to resume: pipeline, format, text key, shard size, and the
    input files (absolute paths and sizes: the shards follow from them)."""
    inputs = [[str(path.resolve()), path.stat().st_size] for path in files]
    return {"pipeline": pipeline, "format": fmt, "text_key": text_key, "shard_size": shard_size, "inputs": inputs}


def _load(pipeline: str, gpu_id: int) -> "Language":
    import spacy

    from .engines import for_bulk

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    return for_bulk(spacy.load(pipeline))


__all__ = ["annotate", "Summary"]
