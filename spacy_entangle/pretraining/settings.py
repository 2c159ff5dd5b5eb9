"""What decides a pretraining run: the settings (stored in the checkpoint and the model
card, checked before anything is read) and the --config presets of a fresh CANINE."""

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .. import canine
from ..modeling.char_designs import get_design
from ..noise.attacks import ATTACKS, check_attacks

# --config presets: (layers, width, heads, hash_buckets); canine-s is google/canine-s's shape
PRESETS: Dict[str, Dict[str, int]] = {
    "canine-tiny": dict(layers=1, width=64, heads=2, hash_buckets=2048),
    "canine-small": dict(layers=2, width=256, heads=4, hash_buckets=canine.HASH_BUCKETS),
    "canine-s": dict(layers=12, width=768, heads=12, hash_buckets=canine.HASH_BUCKETS),
}


def option(default: Any = None, help: str = "", *flags: str, factory: Any = None, shown: Optional[str] = None) -> Any:
    """A setting that ``pretrain-chars`` offers as an option: ``help`` and the option's names
    (default: the field's name, dashed) live beside the default, so the command derives its
    options from this class instead of restating them. ``shown``: the default as the help
    says it, when the value alone does not (None or a list)."""
    meta = {"help": help, "flags": flags, "shown": shown}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class PretrainSettings:
    """Everything that decides the result (stored in the checkpoint and the model card).

    The fields made with :func:`option` are ``pretrain-chars``' options (the same names, dashed,
    and in a config file's ``[pretrain]`` section); the others are config-file settings only."""

    max_steps: Optional[int] = option(None, "Stop after this many steps (the learning rate decays linearly to 0 there)")
    max_minutes: Optional[float] = option(None, "Stop after this much wall-clock time (resumes count the earlier time)")
    # set it to plan a long schedule that may be stopped and resumed with a growing --max-steps
    decay_steps: Optional[int] = option(
        None, "Horizon of the linear decay (0: constant after warm-up)", shown="--max-steps"
    )
    seed: int = option(0, "Random seed: same seed, text and threads, same weights", "--seed", "-s")
    batch_size: int = option(32, "Documents per step, over all processes under torchrun")
    lr: float = option(5e-4, "Peak learning rate (AdamW)")
    warmup_steps: int = option(200, "Linear warm-up steps (at most a tenth of --max-steps)")
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mask_rate: float = option(0.15, "Share of characters hidden in spans (masked objective; 0 = off)")
    noise_rate: float = option(0.0, "Share of words attacked for the CharBERT-style noisy objective (0 = off)")
    noisy_weight: float = option(
        1.0, "Loss weight of noisy-word reconstruction (0: the attacks only feed the student noisy text)"
    )
    attacks: List[str] = option(
        help="Attacks of the noisy objective, comma-separated", factory=lambda: list(ATTACKS), shown=",".join(ATTACKS)
    )
    # teacher distillation (distill.py)
    teacher: Optional[str] = option(
        None,
        "Distil this Hugging Face encoder (directory or hub name, fast tokenizer): the student's word states "
        "learn to predict the teacher's on the clean text",
    )
    teacher_layers: List[int] = option(
        help="Teacher hidden states to distil, comma-separated (-1: last layer, 0: embeddings)",
        factory=lambda: [-1],
        shown="-1",
    )
    distill_weight: float = option(1.0, "Loss weight of the distillation (0: off)")
    vocab_size: int = option(
        1024, "Output classes of the prediction head (most frequent characters + UNK + end-of-word)"
    )
    max_chars: int = option(512, "Longer lines are cut at whitespace into several documents")
    # growing (grow.py): the subword encoder the char encoder grows from (its teacher too)
    init_from: Optional[str] = option(
        None,
        "Grow the char encoder from this subword encoder (Hugging Face directory or hub name, fast tokenizer): "
        "copy its first --k layers, train a character front end against it (stage A: word types, stage B: "
        "distillation); --config, --mask-rate and --teacher do not apply",
    )
    # a registered design (modeling/char_designs.py)
    grow_design: str = option(
        "word",
        "--init-from: a registered design: word (a word-pooled character front end under the copied layers, "
        "two stages) or canine (a CANINE whose deep stack is the copied layers; stage B only)",
        "--design",
    )
    grow_k: Optional[int] = option(None, "--init-from: subword layers copied", "--k", shown="all")
    char_width: int = option(256, "--init-from: width of the character front end")
    stage_a_steps: Optional[int] = option(
        None,
        "--init-from: steps of the type-level stage A; the rest is stage B",
        shown="a third of --decay-steps or --max-steps",
    )
    type_batch: int = option(256, "--init-from: word types per stage-A step, over all processes under torchrun")
    unfreeze_top: int = option(
        0, "--init-from: copied layers (from the top) that train late in stage B (0: all stay frozen)"
    )
    unfreeze_from: float = option(
        0.8, "--init-from: share of --decay-steps (else --max-steps) after which --unfreeze-top layers train"
    )
    copied_lr_scale: float = option(0.1, "--init-from: learning-rate factor of the unfrozen copied layers")
    dev_fraction: float = 0.01
    log_every: int = option(50, "Log line every N steps")
    checkpoint_every: int = option(500, "Checkpoint (and held-out evaluation) every N steps")

    def check(self) -> None:
        if not self.max_steps and not self.max_minutes:
            raise ValueError("give a budget: --max-steps and/or --max-minutes")
        for name in ("batch_size", "vocab_size", "log_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.mask_rate < 1:
            raise ValueError(f"mask_rate must be in [0, 1), got {self.mask_rate}")
        for name in ("noisy_weight", "distill_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")
        if self.mask_rate == 0 and (self.noise_rate == 0 or self.noisy_weight == 0) and not self.distilling:
            raise ValueError(
                "nothing to learn: mask_rate and noise_rate (or noisy_weight) are 0 and there is no teacher"
            )
        check_attacks(self.noise_rate, self.attacks)
        if self.growing:
            self.check_growing()

    def check_growing(self) -> None:
        if not self.max_steps:
            raise ValueError("--init-from needs --max-steps (the two stages are planned in steps)")
        if self.teacher and self.teacher != self.init_from:
            raise ValueError("--init-from is the teacher of a grown encoder: leave --teacher out")
        if not get_design(self.grow_design).stage_a:
            if self.stage_a_steps:
                raise ValueError(
                    f"--design {self.grow_design} has no stage A (no word-level front end): leave --stage-a-steps out"
                )
            self.stage_a_steps = 0
        if self.stage_a_steps is None:  # resolved here, so a resume compares the real split
            self.stage_a_steps = (self.decay_steps or self.max_steps) // 3
        if self.stage_a_steps < 0:
            raise ValueError(f"--stage-a-steps must be 0 or more, got {self.stage_a_steps}")
        if self.type_batch < 1 or self.char_width < 1 or self.unfreeze_top < 0:
            raise ValueError("--type-batch and --char-width must be positive, --unfreeze-top 0 or more")
        if not 0 <= self.unfreeze_from <= 1 or self.copied_lr_scale < 0:
            raise ValueError("--unfreeze-from must be in [0, 1] and --copied-lr-scale 0 or more")
        if self.unfreeze_top and self.max_steps and self.unfreeze_step >= self.max_steps:
            # not an error: a run planned under --decay-steps may be resumed with more --max-steps
            warnings.warn(
                f"--unfreeze-top {self.unfreeze_top}: the top copied layers unfreeze at step {self.unfreeze_step} "
                f"(--unfreeze-from {self.unfreeze_from} of {self.decay_steps or self.max_steps} steps), not before "
                f"--max-steps {self.max_steps}, so they stay frozen in this run; lower --unfreeze-from to train them",
                stacklevel=2,
            )

    @property
    def unfreeze_step(self) -> int:
        """The step from which the top copied layers train: ``unfreeze_from`` of the decay
        horizon (--decay-steps, else --max-steps), as stage A's split, so a resume with a larger
        --max-steps and the same --decay-steps unfreezes where an uninterrupted run does."""
        return int(self.unfreeze_from * (self.decay_steps or self.max_steps or 0))

    @property
    def growing(self) -> bool:
        return bool(self.init_from)

    @property
    def type_steps(self) -> int:
        """Steps of the type-level stage A (growing only; a third of the plan by default)."""
        if self.stage_a_steps is not None:
            return self.stage_a_steps
        return (self.decay_steps or self.max_steps or 0) // 3

    @property
    def distilling(self) -> bool:
        return bool(self.teacher) and self.distill_weight > 0

    def objectives(self) -> List[str]:
        """What the run learns, in words (model card, config.json, package meta)."""
        names = []
        if self.growing:
            shape = get_design(self.grow_design).objective
            unfreeze = f"; top {self.unfreeze_top} train from step {self.unfreeze_step}" if self.unfreeze_top else ""
            stage_a = (
                f"{self.type_steps} steps of spelling -> input embedding over word types (sqrt-frequency, "
                f"attack rate {self.noise_rate}), then "
                if self.type_steps
                else ""
            )
            return [
                f"{shape}grown from {self.init_from} (k = {self.grow_k or 'all'} layers copied, frozen{unfreeze}): "
                f"{stage_a}contextual distillation (student reads noise rate {self.noise_rate})"
            ]
        if self.mask_rate:
            names.append("masked character spans")
        if self.noise_rate and self.noisy_weight:
            names.append(f"noisy-word reconstruction (rate {self.noise_rate})")
        if self.distilling:
            names.append(
                f"distillation of {self.teacher} (hidden states {self.teacher_layers}, student reads noise rate {self.noise_rate})"
            )
        return names
