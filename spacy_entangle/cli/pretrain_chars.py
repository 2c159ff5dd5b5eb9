"""`python -m spacy_entangle pretrain-chars TEXT... OUT`: pretrain a CANINE-style character
encoder on raw text (one document per line), for when no pretrained character model fits, or
grow one from a subword encoder (`--init-from`). `pretrain-chars CONFIG.cfg OUT
--pretrain.max_steps 100` reads the run from a config file with dotted overrides instead
(pretraining/config.py), as `spacy pretrain` does.

The flags are overrides too: each defaults to None (not given), so the defaults live in one
place, ``PretrainSettings`` (the help shows them from there).

`torchrun --nproc_per_node N -m spacy_entangle pretrain-chars ...` runs the same command
data-parallel (pretraining/distributed.py); rank 0 alone writes OUT and reports."""

from dataclasses import fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import typer

from ..noise.attacks import ATTACKS
from ..pretraining import PRESETS, PretrainSettings, pretrain_chars
from ..pretraining.config import PretrainRunConfig, parse_overrides, read_run_config
from ..pretraining.distill import parse_layers
from ..pretraining.distributed import world_from_env
from ._app import app, cli_errors

_DEFAULTS = {f.name: f.default for f in fields(PretrainSettings)}


def _default(name: str) -> str:
    return f" (default: {_DEFAULTS[name]})"


@app.command(
    "pretrain-chars",
    # dotted overrides (--pretrain.max_steps 100) are not declared options: they arrive in paths
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
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
    max_steps: Optional[int] = typer.Option(
        None, "--max-steps", help="Stop after this many steps (the learning rate decays linearly to 0 there)"
    ),
    max_minutes: Optional[float] = typer.Option(
        None, "--max-minutes", help="Stop after this much wall-clock time (resumes count the earlier time)"
    ),
    decay_steps: Optional[int] = typer.Option(
        None, "--decay-steps", help="Horizon of the linear decay (default: --max-steps; 0: constant after warm-up)"
    ),
    seed: Optional[int] = typer.Option(
        None, "--seed", "-s", help="Random seed: same seed, text and threads, same weights" + _default("seed")
    ),
    batch_size: Optional[int] = typer.Option(
        None, help="Documents per step, over all processes under torchrun" + _default("batch_size")
    ),
    lr: Optional[float] = typer.Option(None, help="Peak learning rate (AdamW)" + _default("lr")),
    warmup_steps: Optional[int] = typer.Option(
        None, help="Linear warm-up steps (at most a tenth of --max-steps)" + _default("warmup_steps")
    ),
    mask_rate: Optional[float] = typer.Option(
        None, help="Share of characters hidden in spans (masked objective; 0 = off)" + _default("mask_rate")
    ),
    noise_rate: Optional[float] = typer.Option(
        None, help="Share of words attacked for the CharBERT-style noisy objective (0 = off)" + _default("noise_rate")
    ),
    attacks: Optional[str] = typer.Option(
        None, help=f"Attacks of the noisy objective, comma-separated (default: {','.join(ATTACKS)})"
    ),
    noisy_weight: Optional[float] = typer.Option(
        None,
        help="Loss weight of noisy-word reconstruction (0: the attacks only feed the student noisy text)"
        + _default("noisy_weight"),
    ),
    teacher: Optional[str] = typer.Option(
        None,
        "--teacher",
        help="Distil this Hugging Face encoder (directory or hub name, fast tokenizer): the student's word states learn to predict the teacher's on the clean text",
    ),
    teacher_layers: Optional[str] = typer.Option(
        None,
        "--teacher-layers",
        help="Teacher hidden states to distil, comma-separated (-1: last layer, 0: embeddings) (default: -1)",
    ),
    distill_weight: Optional[float] = typer.Option(
        None, help="Loss weight of the distillation (0: off)" + _default("distill_weight")
    ),
    init_from: Optional[str] = typer.Option(
        None,
        "--init-from",
        help="Grow the char encoder from this subword encoder (Hugging Face directory or hub name, fast tokenizer): copy its first --k layers, train a character front end against it (stage A: word types, stage B: distillation); --config, --mask-rate and --teacher do not apply",
    ),
    design: Optional[str] = typer.Option(
        None,
        "--design",
        help="--init-from: a registered design: word (a word-pooled character front end under the copied layers, two stages) or canine (a CANINE whose deep stack is the copied layers; stage B only)"
        + _default("grow_design"),
    ),
    k: Optional[int] = typer.Option(None, "--k", help="--init-from: subword layers copied (default: all)"),
    char_width: Optional[int] = typer.Option(
        None, "--char-width", help="--init-from: width of the character front end" + _default("char_width")
    ),
    stage_a_steps: Optional[int] = typer.Option(
        None,
        "--stage-a-steps",
        help="--init-from: steps of the type-level stage A (default: a third of --decay-steps or --max-steps); the rest is stage B",
    ),
    type_batch: Optional[int] = typer.Option(
        None,
        "--type-batch",
        help="--init-from: word types per stage-A step, over all processes under torchrun" + _default("type_batch"),
    ),
    unfreeze_top: Optional[int] = typer.Option(
        None,
        "--unfreeze-top",
        help="--init-from: copied layers (from the top) that train late in stage B (0: all stay frozen)"
        + _default("unfreeze_top"),
    ),
    unfreeze_from: Optional[float] = typer.Option(
        None,
        "--unfreeze-from",
        help="--init-from: share of --decay-steps (default: --max-steps) after which --unfreeze-top layers train"
        + _default("unfreeze_from"),
    ),
    copied_lr_scale: Optional[float] = typer.Option(
        None,
        "--copied-lr-scale",
        help="--init-from: learning-rate factor of the unfrozen copied layers" + _default("copied_lr_scale"),
    ),
    vocab_size: Optional[int] = typer.Option(
        None,
        help="Output classes of the prediction head (most frequent characters + UNK + end-of-word)"
        + _default("vocab_size"),
    ),
    max_chars: Optional[int] = typer.Option(
        None, help="Longer lines are cut at whitespace into several documents" + _default("max_chars")
    ),
    checkpoint_every: Optional[int] = typer.Option(
        None, help="Checkpoint (and held-out evaluation) every N steps" + _default("checkpoint_every")
    ),
    log_every: Optional[int] = typer.Option(None, help="Log line every N steps" + _default("log_every")),
    resume: bool = typer.Option(
        False, "--resume", help="Continue OUT/checkpoint (same text and settings; the budget may grow)"
    ),
    gpu_id: int = typer.Option(
        -1, "--gpu-id", "-g", help="GPU id, -1 for CPU (under torchrun: 0 or more uses GPU LOCAL_RANK per process)"
    ),
) -> None:
    """Masked character-span prediction (+ optional noisy-word reconstruction, + optional
    distillation of a subword teacher's word states) over the encoder's per-character
    outputs; or, with --init-from, a char encoder grown from a subword encoder's layers.
    Writes a Hugging Face directory for char_backbone."""
    flags: Dict[str, Any] = dict(
        max_steps=max_steps,
        max_minutes=max_minutes,
        decay_steps=decay_steps,
        seed=seed,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=warmup_steps,
        mask_rate=mask_rate,
        noise_rate=noise_rate,
        attacks=None if attacks is None else [a.strip() for a in attacks.split(",") if a.strip()],
        vocab_size=vocab_size,
        max_chars=max_chars,
        checkpoint_every=checkpoint_every,
        log_every=log_every,
        noisy_weight=noisy_weight,
        teacher=teacher,
        distill_weight=distill_weight,
        init_from=init_from,
        grow_design=design,
        grow_k=k,
        char_width=char_width,
        stage_a_steps=stage_a_steps,
        type_batch=type_batch,
        unfreeze_top=unfreeze_top,
        unfreeze_from=unfreeze_from,
        copied_lr_scale=copied_lr_scale,
    )
    with cli_errors("pretrain-chars", "TEXT... OUT"):
        if teacher_layers is not None:
            flags["teacher_layers"] = parse_layers(teacher_layers)
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
