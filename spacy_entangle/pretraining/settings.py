"""What decides a pretraining run: the settings (stored in the checkpoint and the model
card, checked before anything is read) and the --config presets of a fresh CANINE."""

import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .. import canine
from ..modeling.char_designs import get_design
from ..noise.attacks import ATTACKS, check_attacks

# --config presets: (layers, width, heads, hash_buckets); canine-s is google/canine-s's shape
PRESETS: Dict[str, Dict[str, int]] = {
    "canine-tiny": dict(layers=1, width=64, heads=2, hash_buckets=2048),
    "canine-small": dict(layers=2, width=256, heads=4, hash_buckets=canine.HASH_BUCKETS),
    "canine-s": dict(layers=12, width=768, heads=12, hash_buckets=canine.HASH_BUCKETS),
}


@dataclass
class PretrainSettings:
    """Everything that decides the result (stored in the checkpoint and the model card)."""

    max_steps: Optional[int] = None
    max_minutes: Optional[float] = None
    # horizon of the linear decay (None: max_steps; 0: constant after warm-up). Set it to
    # plan a long schedule that may be stopped and resumed with a growing --max-steps.
    decay_steps: Optional[int] = None
    seed: int = 0
    batch_size: int = 32
    lr: float = 5e-4
    warmup_steps: int = 200
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mask_rate: float = 0.15
    noise_rate: float = 0.0
    noisy_weight: float = 1.0
    attacks: List[str] = field(default_factory=lambda: list(ATTACKS))
    # teacher distillation (distill.py): a Hugging Face encoder directory or hub name, the
    # hidden states it is distilled from (-1: last layer) and the loss weight (0: off)
    teacher: Optional[str] = None
    teacher_layers: List[int] = field(default_factory=lambda: [-1])
    distill_weight: float = 1.0
    vocab_size: int = 1024
    max_chars: int = 512
    # growing (grow.py): the subword encoder the char encoder grows from (its teacher too),
    # the layers copied (None: all), the front end's width, the type-level stage's steps
    # (None: a third of max_steps) and words per step, and the late unfreezing of the top
    # copied layers (0: never) at a fraction of the learning rate
    init_from: Optional[str] = None
    # a registered design (modeling/char_designs.py): "word" (design (b), modeling/grown.py:
    # a word-pooled front end under the copied layers) or "canine" (design (a),
    # modeling/grown_canine.py: a CANINE whose deep stack is copied; stage B only)
    grow_design: str = "word"
    grow_k: Optional[int] = None
    char_width: int = 256
    stage_a_steps: Optional[int] = None
    type_batch: int = 256
    unfreeze_top: int = 0
    unfreeze_from: float = 0.8
    copied_lr_scale: float = 0.1
    dev_fraction: float = 0.01
    log_every: int = 50
    checkpoint_every: int = 500

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
