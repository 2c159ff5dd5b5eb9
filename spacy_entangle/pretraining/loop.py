"""The pretraining loop: AdamW + transformers' warmup schedules, a time and/or step budget,
checkpoints that resume exactly, a JSONL log (the loss curve) and a held-out evaluation.

The result is a plain Hugging Face directory (config.json + model.safetensors + model card)
that ``char_backbone`` accepts as it is; ``OUT/checkpoint`` holds what a resume needs, all
of it loadable with ``torch.load(weights_only=True)`` (tensors and plain Python values: a
checkpoint from elsewhere cannot run code). Its config.json records the steps actually run
(``spacy_entangle_pretraining``), so a run cut short by the time cap is visible downstream.
"""

import hashlib
import json
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from tqdm import tqdm

from .. import canine
from ..backbone_dirs.model_card import write_model_card
from ..modeling.backbones import canine_config
from ..noise.attacks import ATTACKS, check_attacks
from .data import Batch, CharVocab, PretrainDataError, epoch_batches, make_batch, read_texts, split_dev
from .distill import Teacher
from .model import CharPretrainer

if TYPE_CHECKING:  # transformers (which grow.py imports) loads when a model is built
    from transformers import PreTrainedModel

    from .grow import GrownPretrainer

# what a run trains: an encoder (kept afterwards) and its heads or stage losses (not kept)
Pretrainer = Union[CharPretrainer, "GrownPretrainer"]

PRETRAINED_NOTE = "pretrained by `python -m spacy_entangle pretrain-chars`"
LOG_NAME = "pretrain_log.jsonl"
CHECKPOINT = "checkpoint"

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
        if self.stage_a_steps is None:  # resolved here, so a resume compares the real split
            self.stage_a_steps = (self.decay_steps or self.max_steps) // 3
        if self.stage_a_steps < 0:
            raise ValueError(f"--stage-a-steps must be 0 or more, got {self.stage_a_steps}")
        if self.type_batch < 1 or self.char_width < 1 or self.unfreeze_top < 0:
            raise ValueError("--type-batch and --char-width must be positive, --unfreeze-top 0 or more")
        if not 0 <= self.unfreeze_from <= 1 or self.copied_lr_scale < 0:
            raise ValueError("--unfreeze-from must be in [0, 1] and --copied-lr-scale 0 or more")

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
            return [
                f"grown from {self.init_from} (k = {self.grow_k or 'all'} layers copied, frozen"
                + (
                    f"; top {self.unfreeze_top} train from {self.unfreeze_from:.0%} of the steps"
                    if self.unfreeze_top
                    else ""
                )
                + f"): {self.type_steps} steps of spelling -> input embedding over word types (sqrt-frequency, "
                f"attack rate {self.noise_rate}), then contextual distillation (student reads noise rate {self.noise_rate})"
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


def new_encoder(config: str, seed: int, **shape: Optional[int]) -> "PreTrainedModel":
    """A preset (random weights under ``seed``) or an existing CANINE directory / hub name
    whose weights are the starting point (continued pretraining on the user's text)."""
    from transformers import AutoConfig, AutoModel, CanineModel

    if config in PRESETS:
        sizes = {**PRESETS[config], **{k: v for k, v in shape.items() if v is not None}}
        cfg = canine_config(**sizes)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return CanineModel(cfg)
    if any(v is not None for v in shape.values()):
        raise ValueError(
            f"--layers/--width/--heads only apply to the presets ({', '.join(PRESETS)}), not to {config!r}"
        )
    try:
        model_type = AutoConfig.from_pretrained(config).model_type
    except Exception as err:  # noqa: BLE001 - re-raised with the choice named
        raise ValueError(
            f"--config {config!r} is neither a preset ({', '.join(PRESETS)}) nor a loadable model: {err}"
        ) from err
    if model_type != "canine":
        raise ValueError(f"--config {config!r} is a {model_type!r} model; pretrain-chars trains CANINE-style encoders")
    return AutoModel.from_pretrained(config)


def _fingerprint(docs: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for doc in docs:
        digest.update(doc.encode("utf8") + b"\n")
    return digest.hexdigest()


def _schedule(optimizer: torch.optim.Optimizer, settings: PretrainSettings) -> Any:
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    horizon = settings.max_steps if settings.decay_steps is None else settings.decay_steps
    if horizon:
        warmup = min(settings.warmup_steps, horizon // 10)
        return get_linear_schedule_with_warmup(optimizer, warmup, horizon)
    return get_constant_schedule_with_warmup(optimizer, settings.warmup_steps)


def _to(batch: Batch, device: torch.device, teacher: Optional[Teacher] = None) -> Dict[str, torch.Tensor]:
    """The model's inputs; with a teacher, its word states for the clean texts too."""
    names = ("input_ids", "attention_mask", "mlm_targets", "noisy_targets", "word_ids")
    inputs = {name: torch.from_numpy(getattr(batch, name)).to(device) for name in names}
    if teacher is not None:
        targets, found = teacher.word_states(batch.clean_texts, batch.clean_spans)
        inputs.update(word_targets=targets.to(device), word_found=found.to(device))
    return inputs


class Meter:
    """Running sums between two log lines."""

    def __init__(self) -> None:
        self.sums: Dict[str, float] = {}

    def add(self, out: Dict[str, torch.Tensor]) -> None:
        for key, value in out.items():
            n = float(out.get(key.replace("_loss", "_n"), 1)) if key.endswith("_loss") else 1.0
            self.sums[key] = self.sums.get(key, 0.0) + float(value) * n
            if key.endswith("_loss"):
                self.sums[key + "_w"] = self.sums.get(key + "_w", 0.0) + n

    def summary(self) -> Dict[str, float]:
        """Per objective: its mean loss, and its accuracy (``_correct``) or mean cosine
        (``_cos``, summed over ``_n`` items) where it reports one."""
        s, res = self.sums, {}
        names = ["mlm", "noisy", "distill"] + sorted(
            k[: -len("_loss_w")]
            for k in s
            if k.endswith("_loss_w") and k[: -len("_loss_w")] not in ("mlm", "noisy", "distill")
        )
        for name in names:
            if s.get(f"{name}_loss_w"):
                res[f"{name}_loss"] = round(s[f"{name}_loss"] / s[f"{name}_loss_w"], 4)
                for metric, key in (("acc", "correct"), ("cos", "cos")):
                    if f"{name}_{key}" in s:
                        res[f"{name}_{metric}"] = round(s[f"{name}_{key}"] / s[f"{name}_n"], 4)
        return res


def evaluate(
    model: CharPretrainer,
    docs: List[str],
    vocab: CharVocab,
    settings: PretrainSettings,
    device: torch.device,
    teacher: Optional[Teacher] = None,
) -> Dict[str, float]:
    """Held-out losses with fixed masks and noise (the same every time: a comparable curve)."""
    if not docs:
        return {}
    np_rng, py_rng = numpy.random.default_rng(12345), random.Random(12345)
    meter = Meter()
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i in range(0, len(docs), settings.batch_size):
            batch = make_batch(
                docs[i : i + settings.batch_size],
                vocab,
                np_rng,
                py_rng,
                settings.mask_rate,
                settings.noise_rate,
                settings.attacks,
            )
            meter.add(
                model(
                    **_to(batch, device, teacher),
                    noisy_weight=settings.noisy_weight,
                    distill_weight=settings.distill_weight,
                )
            )
    model.train(was_training)
    return {f"dev_{k}": v for k, v in meter.summary().items()}


def _save_checkpoint(path: Path, model: Pretrainer, optimizer: Any, scheduler: Any, state: Dict[str, Any]) -> None:
    """Written next to the old one, then swapped in: a crash never leaves half a checkpoint."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.encoder.save_pretrained(tmp / "encoder", safe_serialization=True)
    torch.save(
        {
            "heads": _heads(model),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "py_rng": state.pop("py_rng"),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        },
        tmp / "training_state.pt",
    )
    (tmp / "state.json").write_text(json.dumps(state, indent=2), encoding="utf8")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def _heads(model: Pretrainer) -> Dict[str, torch.Tensor]:
    """Everything trained but the encoder (saved apart, as a Hugging Face directory)."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}


def _load_training_state(path: Path) -> Dict[str, Any]:
    """weights_only: tensors and plain values only, never code (a checkpoint may come from
    elsewhere); anything else is refused with the file named."""
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - UnpicklingError and friends, re-raised with the file named
        raise ValueError(f"{path} cannot be loaded safely (torch.load weights_only=True): {err}") from err


def _truncate_log(log_path: Path, upto_step: int) -> None:
    """On resume, drop log lines written after the checkpoint (they will be redone)."""
    if not log_path.exists():
        return
    keep = [
        line
        for line in log_path.read_text(encoding="utf8").splitlines()
        if line.strip() and json.loads(line).get("step", 0) <= upto_step
    ]
    log_path.write_text("".join(line + "\n" for line in keep), encoding="utf8")


# settings a resume must share with the checkpoint: they shape the batches or the heads
# (the budget, learning rate and loss weights may change)
RESUME_FIXED = (
    "seed",
    "batch_size",
    "mask_rate",
    "noise_rate",
    "attacks",
    "vocab_size",
    "max_chars",
    "dev_fraction",
    "teacher",
    "teacher_layers",
    "init_from",
    "grow_k",
    "char_width",
    "stage_a_steps",
    "type_batch",
)


def _start(
    out: Path,
    resume: bool,
    settings: PretrainSettings,
    config: str,
    new: Callable[[], "PreTrainedModel"],
    train_docs: List[str],
    fingerprint: str,
) -> Tuple["PreTrainedModel", CharVocab, Dict[str, Any], Optional[Dict[str, Any]]]:
    """The encoder, output vocabulary, loop state and saved training state: from the
    checkpoint on resume (checked against these settings), else fresh."""
    ckpt = out / CHECKPOINT
    if ckpt.exists() and not resume:
        raise ValueError(f"{out} already has a checkpoint: pass --resume to continue it, or choose another OUT")
    if resume and ckpt.exists():
        state = json.loads((ckpt / "state.json").read_text(encoding="utf8"))
        if state["data_fingerprint"] != fingerprint:
            raise PretrainDataError(f"the text differs from the one {ckpt} was trained on: resume needs the same files")
        old = PretrainSettings(**state["settings"])
        for name in RESUME_FIXED:
            if getattr(old, name) != getattr(settings, name):
                raise ValueError(
                    f"--{name.replace('_', '-')} differs from the checkpoint's ({getattr(old, name)}): resume needs the same value"
                )
        from transformers import AutoModel

        saved = _load_training_state(ckpt / "training_state.pt")
        return AutoModel.from_pretrained(ckpt / "encoder"), CharVocab(state["vocab"]), state, saved
    vocab = CharVocab.build(train_docs, settings.vocab_size)
    encoder = new()
    state = {
        "step": 0,
        "epoch": 0,
        "batch": 0,
        "elapsed": 0.0,
        "vocab": vocab.codepoints,
        "data_fingerprint": fingerprint,
        "config": config,
        "np_rng": numpy.random.default_rng(settings.seed).bit_generator.state,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / LOG_NAME).unlink(missing_ok=True)
    return encoder, vocab, state, None


def _restore(
    saved: Dict[str, Any],
    model: Pretrainer,
    optimizer: Any,
    scheduler: Any,
    py_rng: random.Random,
    device: torch.device,
) -> None:
    if "head" in saved:  # checkpoints written before the distillation head existed
        if not isinstance(model, CharPretrainer):
            raise ValueError("the checkpoint holds the old character prediction head: it cannot resume this run")
        model.head.load_state_dict(saved["head"])
    else:
        model.load_state_dict(saved["heads"], strict=False)
        missing = set(_heads(model)) - set(saved["heads"])
        if missing:
            raise ValueError(f"the checkpoint lacks {sorted(missing)}: it was written with other settings")
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    py_rng.setstate(_as_tuples(saved["py_rng"]))
    torch.set_rng_state(saved["torch_rng"])
    if saved.get("cuda_rng") is not None and device.type == "cuda":
        torch.cuda.set_rng_state_all(saved["cuda_rng"])


def _as_tuples(value: Any) -> Any:
    """random.Random.setstate wants the tuples of getstate() back (JSON gives lists)."""
    return tuple(_as_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def pretrain_chars(
    texts: Sequence[Path],
    out: Path,
    settings: PretrainSettings,
    config: str = "canine-small",
    shape: Optional[Dict[str, Optional[int]]] = None,
    resume: bool = False,
    device: str = "cpu",
    progress: bool = True,
) -> Dict[str, Any]:
    """Pretrain (or resume) and write the encoder to ``out``; returns the final log entry
    plus ``stopped_by`` ("max_steps" or "max_minutes") and ``planned_steps``."""
    settings.check()
    if settings.init_from:  # settings.growing
        from .grow_run import GrownRun

        run: PretrainRun = GrownRun(texts, Path(out), settings, settings.init_from, None, resume, device)
    else:
        run = PretrainRun(texts, Path(out), settings, config, shape, resume, device)
    entry = run.train(progress)
    # run.config: the subword encoder a grown run starts from
    _write_model(run.out, run.model, settings, run.stats, len(run.dev_docs), texts, entry, run.config)
    return entry


class PretrainRun:
    """One pretraining run: the model, optimizer and every random state a resume must
    restore, the position in the batch plan, and the budget's clock."""

    def __init__(
        self,
        texts: Sequence[Path],
        out: Path,
        settings: PretrainSettings,
        config: str,
        shape: Optional[Dict[str, Optional[int]]],
        resume: bool,
        device: str,
    ) -> None:
        self.out, self.settings, self.device = out, settings, torch.device(device)
        docs, self.stats = read_texts(texts, settings.max_chars)
        self.train_docs, self.dev_docs = split_dev(docs, settings.dev_fraction, settings.seed)
        self.config, self.shape = config, shape
        self.teacher = self._make_teacher()
        encoder, self.vocab, self.state, saved = _start(
            out, resume, settings, config, self._new_encoder, self.train_docs, _fingerprint(docs)
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(settings.seed)
            self.model = self._make_model(encoder)
        self.model.to(self.device).train()
        self.optimizer = torch.optim.AdamW(self._param_groups(), lr=settings.lr, weight_decay=settings.weight_decay)
        self.scheduler = _schedule(self.optimizer, settings)
        self.np_rng = numpy.random.default_rng()
        self.np_rng.bit_generator.state = self.state["np_rng"]
        self.py_rng = random.Random(settings.seed)
        if saved is not None:
            _restore(saved, self.model, self.optimizer, self.scheduler, self.py_rng, self.device)
            _truncate_log(out / LOG_NAME, self.state["step"])
        else:
            torch.manual_seed(settings.seed)  # dropout masks: same seed, same run
        self.step = int(self.state["step"])
        self.elapsed_before = float(self.state["elapsed"])
        self.started = time.perf_counter()

    def _make_teacher(self) -> Optional[Teacher]:
        settings = self.settings
        if not (settings.teacher and settings.distilling):
            return None
        return Teacher(settings.teacher, settings.teacher_layers, str(self.device))

    def _new_encoder(self) -> "PreTrainedModel":
        """The encoder a fresh run starts from."""
        return new_encoder(self.config, self.settings.seed, **(self.shape or {}))

    def _make_model(self, encoder: "PreTrainedModel") -> Pretrainer:
        teacher_shape = (self.teacher.width, len(self.teacher.layers)) if self.teacher else None
        return CharPretrainer(encoder, len(self.vocab), teacher_shape)

    def _param_groups(self) -> List[Dict[str, Any]]:
        return [{"params": list(self.model.parameters())}]

    def elapsed(self) -> float:
        """Seconds of training, this run's and the resumed ones'."""
        return self.elapsed_before + time.perf_counter() - self.started

    def budget_left(self) -> bool:
        settings = self.settings
        if settings.max_steps and self.step >= settings.max_steps:
            return False
        return not (settings.max_minutes and self.elapsed() / 60 >= settings.max_minutes)

    def batches(self) -> Iterator[List[int]]:
        """Doc indices of each batch, epoch after epoch, from where the state says; the
        state follows, so a checkpoint resumes at the next batch."""
        lengths = [len(doc) for doc in self.train_docs]
        epoch, first = int(self.state["epoch"]), int(self.state["batch"])
        while True:
            plan = epoch_batches(len(self.train_docs), lengths, self.settings.batch_size, self.settings.seed, epoch)
            for b in range(first, len(plan)):
                self.state["epoch"], self.state["batch"] = epoch, b + 1
                yield plan[b]
            epoch, first = epoch + 1, 0

    def update(self, doc_ids: List[int]) -> Tuple[Dict[str, torch.Tensor], int]:
        """One optimizer step on these docs: the model's outputs and the characters read."""
        settings = self.settings
        batch = make_batch(
            [self.train_docs[i] for i in doc_ids],
            self.vocab,
            self.np_rng,
            self.py_rng,
            settings.mask_rate,
            settings.noise_rate,
            settings.attacks,
        )
        result = self.model(
            **_to(batch, self.device, self.teacher),
            noisy_weight=settings.noisy_weight,
            distill_weight=settings.distill_weight,
        )
        self.optimizer.zero_grad(set_to_none=True)
        result["loss"].backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), settings.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return {k: v for k, v in result.items() if k != "loss"}, batch.n_chars

    def update_next(self, plan: Iterator[List[int]]) -> Tuple[Dict[str, torch.Tensor], int]:
        """One step on the next batch of the plan."""
        return self.update(next(plan))

    def evaluate(self) -> Dict[str, float]:
        """The held-out figures of the log."""
        assert isinstance(self.model, CharPretrainer)  # a run with another model has its own evaluate
        return evaluate(self.model, self.dev_docs, self.vocab, self.settings, self.device, self.teacher)

    def checkpoint(self) -> None:
        self.state.update(
            step=self.step,
            elapsed=self.elapsed(),
            settings=asdict(self.settings),
            np_rng=self.np_rng.bit_generator.state,
            py_rng=self.py_rng.getstate(),
        )
        _save_checkpoint(self.out / CHECKPOINT, self.model, self.optimizer, self.scheduler, self.state)

    def train(self, progress: bool = True) -> Dict[str, Any]:
        """Steps until the budget is spent, logging and checkpointing on the way; ends with
        a checkpoint. Returns the last log entry with ``stopped_by`` and ``planned_steps``."""
        settings = self.settings
        meter, chars, last_log = Meter(), 0, time.perf_counter()
        entry: Dict[str, Any] = {"step": self.step}
        bar = tqdm(
            total=settings.max_steps, initial=self.step, disable=not progress, unit="step", desc="pretrain-chars"
        )
        with (self.out / LOG_NAME).open("a", encoding="utf8") as log:
            plan = self.batches()
            while self.budget_left():
                outputs, n_chars = self.update_next(plan)
                meter.add(outputs)
                chars += n_chars
                bar.update(1)
                evaluate_now = self.step % settings.checkpoint_every == 0
                last = not self.budget_left()
                if self.step % settings.log_every == 0 or evaluate_now or last:
                    now = time.perf_counter()
                    entry = {
                        "step": self.step,
                        "elapsed_s": round(self.elapsed(), 1),
                        "lr": self.scheduler.get_last_lr()[0],
                        **meter.summary(),
                        "chars_per_s": round(chars / max(now - last_log, 1e-9)),
                    }
                    if evaluate_now or last:
                        entry.update(self.evaluate())
                    log.write(json.dumps(entry) + "\n")
                    log.flush()
                    bar.set_postfix(
                        {k: entry[k] for k in ("mlm_loss", "noisy_loss", "distill_loss", "chars_per_s") if k in entry}
                    )
                    meter, chars, last_log = Meter(), 0, time.perf_counter()
                if evaluate_now:
                    self.checkpoint()
        bar.close()
        if len(entry) == 1 and (self.out / LOG_NAME).exists():  # nothing left to do: report the last entry
            lines = (self.out / LOG_NAME).read_text(encoding="utf8").splitlines()
            entry = json.loads(lines[-1]) if lines else entry
        self.checkpoint()
        stopped_by = "max_steps" if settings.max_steps and self.step >= settings.max_steps else "max_minutes"
        return {**entry, "stopped_by": stopped_by, "planned_steps": settings.max_steps}


def _write_model(
    out: Path,
    model: Pretrainer,
    settings: PretrainSettings,
    stats: Dict[str, int],
    n_dev: int,
    texts: Sequence[Path],
    entry: Dict[str, Any],
    config: str,
) -> None:
    encoder = model.encoder
    objective = " + ".join(settings.objectives())
    steps = int(entry["step"])
    cut_short = entry["stopped_by"] == "max_minutes" and bool(settings.max_steps)
    encoder.config.spacy_entangle_note = f"{PRETRAINED_NOTE}: {steps} steps, {objective}"
    # read by the project's package_meta.py: the steps actually run travel with the weights
    encoder.config.spacy_entangle_pretraining = {
        "steps": steps,
        "planned_steps": settings.max_steps,
        "max_minutes": settings.max_minutes,
        "stopped_by": entry["stopped_by"],
        "objectives": settings.objectives(),
        "teacher": settings.init_from if settings.growing else (settings.teacher if settings.distilling else None),
    }
    encoder.save_pretrained(out, safe_serialization=True)
    figures = "\n".join(f"- {k}: {v}" for k, v in entry.items())
    used = "\n".join(f"- {k}: {v}" for k, v in asdict(settings).items())
    data = "\n".join(f"- {k}: {v}" for k, v in stats.items())
    warning = (
        (
            f"**Stopped by the time cap ({settings.max_minutes} min) after {steps} of {settings.max_steps} planned "
            f"steps.** `--resume` with a larger `--max-minutes` finishes it.\n\n"
        )
        if cut_short
        else ""
    )
    grown = encoder.config.model_type != "canine"
    write_model_card(
        out,
        "Character encoder grown from a subword encoder by spacy-entangle"
        if grown
        else "CANINE-style character encoder pretrained by spacy-entangle",
        f"{warning}Self-supervised on {', '.join(str(t) for t in texts)} ({stats['documents']} documents, "
        f"{n_dev} held out for the dev figures), {steps} steps. Objective: {objective}. Started from: {config}.\n\n"
        f"Use it as `char_backbone` (paths.char_backbone = this directory). The prediction heads are "
        f"not kept; `{CHECKPOINT}/` holds what `--resume` needs.\n\n"
        f"## Last log entry\n{figures}\n\n## Settings\n{used}\n\n## Text\n{data}\n\n"
        f"The loss curve is {LOG_NAME} (one JSON object per logged step).",
        tags=(
            ["entangle-grown", "character-level", "distillation"]
            if grown
            else ["canine", "character-level", "masked-lm"] + (["distillation"] if settings.distilling else [])
        ),
    )
