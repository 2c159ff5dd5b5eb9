"""`python -m spacy_entangle pretrain-chars TEXT... OUT`: pretrain a CANINE-style character
encoder on raw text (one document per line), for when no pretrained character model fits, or
grow one from a subword encoder (`--init-from`). `pretrain-chars CONFIG.cfg OUT
--pretrain.max_steps 100` reads the run from a config file with dotted overrides instead
(pretraining/config.py), as `spacy pretrain` does.

The flags are overrides too: each defaults to None (not given), so the defaults live in one
place, ``PretrainSettings`` (the help shows them from there).

`torchrun --nproc_per_node N -m spacy_entangle pretrain-chars ...` runs the same command
data-parallel (pretraining/distributed.py); rank 0 alone writes OUT and reports."""

import inspect
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, List, Optional, Tuple, Union, get_args, get_origin, get_type_hints

import typer

from ..pretraining import PRESETS, PretrainSettings, pretrain_chars
from ..pretraining.config import PretrainRunConfig, parse_overrides, read_run_config
from ..pretraining.distill import parse_layers
from ..pretraining.distributed import world_from_env
from ._app import app, cli_errors


def _setting_options() -> List[inspect.Parameter]:
    """One keyword parameter (a typer option, None = not given) per field of
    ``PretrainSettings`` made with ``option``: its names, help and default come from there."""
    params = []
    for f in fields(PretrainSettings):
        meta = f.metadata
        if "help" not in meta:
            continue
        default = f.default if f.default is not MISSING else None
        shown = meta["shown"] if meta["shown"] is not None else default
        help_text = meta["help"] + ("" if shown is None else f" (default: {shown})")
        flags = meta["flags"] or (f"--{f.name.replace('_', '-')}",)
        # list settings are typed as comma-separated text on the command line
        kind = str if get_origin(_hints[f.name]) is list else _optional_inner(_hints[f.name])
        option = typer.Option(None, *flags, help=help_text, show_default=False)
        params.append(
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=Optional[kind])
        )
    return params


def _optional_inner(hint: Any) -> Any:
    """``int`` for ``Optional[int]`` (and ``int``)."""
    args = [a for a in get_args(hint) if a is not type(None)]
    return args[0] if get_origin(hint) is Union and len(args) == 1 else hint


_hints = get_type_hints(PretrainSettings)


def pretrain_chars_cli(
    paths: List[str] = typer.Argument(
        ...,
        help="Plain-text files (one document per line), then the output directory; or a config file (.cfg), "
        "the output directory and dotted overrides (--pretrain.max_steps 100)",
        metavar="TEXT... OUT | CONFIG.cfg OUT [--section.key VALUE]...",
    ),
    config: Optional[str] = typer.Option(
        None,
        "--config",
        "-c",
        help=f"A preset ({', '.join(PRESETS)}) or a CANINE directory / hub name to continue from (default: canine-small)",
    ),
    layers: Optional[int] = typer.Option(None, help="Preset override: encoder layers"),
    width: Optional[int] = typer.Option(None, help="Preset override: hidden width (a multiple of 8)"),
    heads: Optional[int] = typer.Option(None, help="Preset override: attention heads"),
    resume: bool = typer.Option(
        False, "--resume", help="Continue OUT/checkpoint (same text and settings; the budget may grow)"
    ),
    gpu_id: int = typer.Option(
        -1, "--gpu-id", "-g", help="GPU id, -1 for CPU (under torchrun: 0 or more uses GPU LOCAL_RANK per process)"
    ),
    **flags: Any,
) -> None:
    """Masked character-span prediction (+ optional noisy-word reconstruction, + optional
    distillation of a subword teacher's word states) over the encoder's per-character
    outputs; or, with --init-from, a char encoder grown from a subword encoder's layers.
    Writes a Hugging Face directory for char_backbone."""
    if flags.get("attacks") is not None:  # comma-separated on the command line
        flags["attacks"] = [part.strip() for part in flags["attacks"].split(",") if part.strip()]
    with cli_errors("pretrain-chars", "TEXT... OUT"):
        if flags.get("teacher_layers") is not None:
            flags["teacher_layers"] = parse_layers(flags["teacher_layers"])
        run, out = _run_config(paths)
        for name, value in flags.items():
            if value is not None:
                setattr(run.settings, name, value)
        if config is not None:
            run.encoder = config
        shape = dict(layers=layers, width=width, heads=heads)
        run.shape.update({key: value for key, value in shape.items() if value is not None})
        device = "cpu"
        if gpu_id >= 0:
            import torch

            if not torch.cuda.is_available():
                raise ValueError(f"--gpu-id {gpu_id} but CUDA is not available")
            device = f"cuda:{gpu_id}"
    texts, settings = run.texts, run.settings
    with cli_errors("pretrain-chars", f"{', '.join(map(str, texts))} -> {out}"):  # PretrainDataError is a ValueError
        entry = pretrain_chars(texts, out, settings, config=run.encoder, shape=run.shape, resume=resume, device=device)
    if not world_from_env().main:  # rank 0 reports for a data-parallel run
        return
    figures = ", ".join(f"{k} {v}" for k, v in entry.items() if k not in ("lr", "stopped_by", "planned_steps"))
    typer.echo(f"✔ Wrote {out} (use it as char_backbone): {figures}")
    if entry["stopped_by"] == "max_minutes" and settings.max_steps:
        typer.echo(
            f"⚠ pretrain-chars: STOPPED BY THE TIME CAP (--max-minutes {settings.max_minutes}) after {entry['step']} of "
            f"{settings.max_steps} steps: this encoder had less training than planned (recorded in {out}/config.json). "
            f"Finish it with --resume and a larger --max-minutes.",
            err=True,
        )


# the settings' options join the declared ones (typer reads the signature)
_declared = inspect.signature(pretrain_chars_cli).parameters.values()
pretrain_chars_cli.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [p for p in _declared if p.kind is not inspect.Parameter.VAR_KEYWORD] + _setting_options()
)
app.command(
    "pretrain-chars",
    # dotted overrides (--pretrain.max_steps 100) are not declared options: they arrive in paths
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)(pretrain_chars_cli)


def _run_config(paths: List[str]) -> Tuple[PretrainRunConfig, Path]:
    """The run of TEXT... OUT (PretrainSettings' defaults), or of CONFIG.cfg OUT and its
    overrides; and OUT."""
    cut = next((i for i, p in enumerate(paths) if p.startswith("--")), len(paths))
    positional, overrides = paths[:cut], paths[cut:]
    if positional and positional[0].endswith(".cfg"):
        if len(positional) != 2:
            raise ValueError(
                "give the config file and the OUT directory (the texts are its [paths] texts), then any "
                f"--section.key overrides; got {positional}"
            )
        return read_run_config(Path(positional[0]), parse_overrides(overrides)), Path(positional[1])
    if overrides:
        raise ValueError(
            f"unknown option {overrides[0]} (dotted overrides such as --pretrain.max_steps 100 apply to a "
            "config file: pretrain-chars CONFIG.cfg OUT ...)"
        )
    if len(positional) < 2:
        raise ValueError("give at least one TEXT file and the OUT directory")
    return PretrainRunConfig(texts=[Path(p) for p in positional[:-1]], settings=PretrainSettings()), Path(
        positional[-1]
    )
