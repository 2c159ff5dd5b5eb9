"""`python -m spacy_entangle pretrain-chars TEXT... OUT`: pretrain a CANINE-style character
encoder on raw text (one document per line), for when no pretrained character model fits, or
grow one from a subword encoder (`--init-from`)."""

from pathlib import Path
from typing import List, Optional

import typer

from ..noise.attacks import ATTACKS
from ..pretraining import PRESETS, PretrainSettings, pretrain_chars
from ..pretraining.distill import parse_layers
from ._app import app, cli_errors


@app.command("pretrain-chars")
def pretrain_chars_cli(
    paths: List[Path] = typer.Argument(
        ..., help="Plain-text files (one document per line), then the output directory", metavar="TEXT... OUT"
    ),
    config: str = typer.Option(
        "canine-small",
        "--config",
        "-c",
        help=f"A preset ({', '.join(PRESETS)}) or a CANINE directory / hub name to continue from",
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
    seed: int = typer.Option(0, "--seed", "-s", help="Random seed: same seed, text and threads, same weights"),
    batch_size: int = typer.Option(32, help="Documents per step"),
    lr: float = typer.Option(5e-4, help="Peak learning rate (AdamW)"),
    warmup_steps: int = typer.Option(200, help="Linear warm-up steps (at most a tenth of --max-steps)"),
    mask_rate: float = typer.Option(0.15, help="Share of characters hidden in spans (masked objective; 0 = off)"),
    noise_rate: float = typer.Option(
        0.0, help="Share of words attacked for the CharBERT-style noisy objective (0 = off)"
    ),
    attacks: str = typer.Option(",".join(ATTACKS), help="Attacks of the noisy objective"),
    noisy_weight: float = typer.Option(
        1.0, help="Loss weight of noisy-word reconstruction (0: the attacks only feed the student noisy text)"
    ),
    teacher: Optional[str] = typer.Option(
        None,
        "--teacher",
        help="Distil this Hugging Face encoder (directory or hub name, fast tokenizer): the student's word states learn to predict the teacher's on the clean text",
    ),
    teacher_layers: str = typer.Option(
        "-1",
        "--teacher-layers",
        help="Teacher hidden states to distil, comma-separated (-1: last layer, 0: embeddings)",
    ),
    distill_weight: float = typer.Option(1.0, help="Loss weight of the distillation (0: off)"),
    init_from: Optional[str] = typer.Option(
        None,
        "--init-from",
        help="Grow the char encoder from this subword encoder (Hugging Face directory or hub name, fast tokenizer): copy its first --k layers, train a character front end against it (stage A: word types, stage B: distillation); --config, --mask-rate and --teacher do not apply",
    ),
    design: str = typer.Option(
        "word",
        "--design",
        help="--init-from: word (a word-pooled character front end under the copied layers, two stages) or canine (a CANINE whose deep stack is the copied layers; stage B only)",
    ),
    k: Optional[int] = typer.Option(None, "--k", help="--init-from: subword layers copied (default: all)"),
    char_width: int = typer.Option(256, "--char-width", help="--init-from: width of the character front end"),
    stage_a_steps: Optional[int] = typer.Option(
        None,
        "--stage-a-steps",
        help="--init-from: steps of the type-level stage A (default: a third of --decay-steps or --max-steps); the rest is stage B",
    ),
    type_batch: int = typer.Option(256, "--type-batch", help="--init-from: word types per stage-A step"),
    unfreeze_top: int = typer.Option(
        0,
        "--unfreeze-top",
        help="--init-from: copied layers (from the top) that train late in stage B (0: all stay frozen)",
    ),
    unfreeze_from: float = typer.Option(
        0.8, "--unfreeze-from", help="--init-from: share of --max-steps after which --unfreeze-top layers train"
    ),
    copied_lr_scale: float = typer.Option(
        0.1, "--copied-lr-scale", help="--init-from: learning-rate factor of the unfrozen copied layers"
    ),
    vocab_size: int = typer.Option(
        1024, help="Output classes of the prediction head (most frequent characters + UNK + end-of-word)"
    ),
    max_chars: int = typer.Option(512, help="Longer lines are cut at whitespace into several documents"),
    checkpoint_every: int = typer.Option(500, help="Checkpoint (and held-out evaluation) every N steps"),
    log_every: int = typer.Option(50, help="Log line every N steps"),
    resume: bool = typer.Option(
        False, "--resume", help="Continue OUT/checkpoint (same text and settings; the budget may grow)"
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU id, -1 for CPU"),
) -> None:
    """Masked character-span prediction (+ optional noisy-word reconstruction, + optional
    distillation of a subword teacher's word states) over the encoder's per-character
    outputs; or, with --init-from, a char encoder grown from a subword encoder's layers.
    Writes a Hugging Face directory for char_backbone."""
    with cli_errors("pretrain-chars", "TEXT... OUT"):
        if len(paths) < 2:
            raise ValueError("give at least one TEXT file and the OUT directory")
        device = "cpu"
        if gpu_id >= 0:
            import torch

            if not torch.cuda.is_available():
                raise ValueError(f"--gpu-id {gpu_id} but CUDA is not available")
            device = f"cuda:{gpu_id}"
        distilled_layers = parse_layers(teacher_layers)
    *texts, out = paths
    settings = PretrainSettings(
        max_steps=max_steps,
        max_minutes=max_minutes,
        decay_steps=decay_steps,
        seed=seed,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=warmup_steps,
        mask_rate=mask_rate,
        noise_rate=noise_rate,
        attacks=[a.strip() for a in attacks.split(",") if a.strip()],
        vocab_size=vocab_size,
        max_chars=max_chars,
        checkpoint_every=checkpoint_every,
        log_every=log_every,
        noisy_weight=noisy_weight,
        teacher=teacher,
        teacher_layers=distilled_layers,
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
    with cli_errors("pretrain-chars", f"{', '.join(map(str, texts))} -> {out}"):  # PretrainDataError is a ValueError
        entry = pretrain_chars(
            texts,
            out,
            settings,
            config=config,
            shape=dict(layers=layers, width=width, heads=heads),
            resume=resume,
            device=device,
        )
    figures = ", ".join(f"{k} {v}" for k, v in entry.items() if k not in ("lr", "stopped_by", "planned_steps"))
    typer.echo(f"✔ Wrote {out} (use it as char_backbone): {figures}")
    if entry["stopped_by"] == "max_minutes" and max_steps:
        typer.echo(
            f"⚠ pretrain-chars: STOPPED BY THE TIME CAP (--max-minutes {max_minutes}) after {entry['step']} of "
            f"{max_steps} steps: this encoder had less training than planned (recorded in {out}/config.json). "
            f"Finish it with --resume and a larger --max-minutes.",
            err=True,
        )
