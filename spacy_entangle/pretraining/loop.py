"""The pretraining loop: AdamW + transformers' warmup schedules, a time and/or step budget,
checkpoints that resume exactly (checkpoint.py), a JSONL log (the loss curve) and a held-out
evaluation. ``PretrainRun`` is a run of the masked objectives; grow_run.py's ``GrownRun``
replaces its model and steps; pretrain.py picks one and writes the result (card.py).

Under ``torchrun`` a run is data-parallel (distributed.py): the steps, the batch plan and the
generators are global, each process trains on its share of each batch, and rank 0 alone
reads and writes OUT, logs and evaluates.
"""

import json
import random
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch

from ..progress import log_line, progress_bar
from . import distributed
from .checkpoint import CHECKPOINT, LOG_NAME, fingerprint, restore, save_checkpoint, start_state, truncate_log
from .data import IGNORE, Batch, CharVocab, epoch_batches, make_batch, read_texts, split_dev
from .distill import Teacher
from .distributed import World
from .encoders import new_encoder
from .model import CharPretrainer, Pretrainer
from .settings import PretrainSettings

if TYPE_CHECKING:  # transformers (which grow.py imports) loads when a model is built
    from transformers import PreTrainedModel

# the figures of a log entry on the progress bar (and in the line per checkpoint of a log)
SHOWN = ("mlm_loss", "noisy_loss", "distill_loss", "type_loss", "last_loss", "chars_per_s")


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

    def merged(self) -> "Meter":
        """The sums of every process of a data-parallel run (a collective)."""
        meter = Meter()
        for sums in distributed.gather(self.sums):
            for key, value in sums.items():
                meter.sums[key] = meter.sums.get(key, 0.0) + value
        return meter

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


class PretrainRun:
    """One pretraining run: the model, optimizer and every random state a resume must
    restore, the position in the batch plan, and the budget's clock. ``world``: this
    process's place in a data-parallel run (distributed.py; one process by default)."""

    def __init__(
        self,
        texts: Sequence[Path],
        out: Path,
        settings: PretrainSettings,
        config: str,
        shape: Optional[Dict[str, Optional[int]]],
        resume: bool,
        device: str,
        world: Optional[World] = None,
    ) -> None:
        world = world or World()
        self.out, self.settings, self.device, self.world = out, settings, torch.device(device), world
        self.config, self.shape = config, shape
        docs, self.stats = read_texts(texts, self._doc_chars())
        text_hash = fingerprint(docs)
        if world.parallel and len(set(distributed.gather(text_hash))) > 1:
            raise ValueError("the processes read different text: every machine needs the same TEXT files")
        self.train_docs, self.dev_docs = split_dev(docs, settings.dev_fraction, settings.seed)
        self.teacher = self._make_teacher()
        encoder, self.vocab, self.state, saved = start_state(
            out, resume, settings, config, self._new_encoder, self.train_docs, text_hash, world
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(settings.seed)
            self.model = self._make_model(encoder)
        self.model.to(self.device).train()
        if world.parallel:
            distributed.share_weights(self.model)
        self.parallel = distributed.DataParallel(world, self.device)
        self.optimizer = torch.optim.AdamW(self._param_groups(), lr=settings.lr, weight_decay=settings.weight_decay)
        self.scheduler = _schedule(self.optimizer, settings)
        self.np_rng = numpy.random.default_rng()
        self.np_rng.bit_generator.state = self.state["np_rng"]
        self.py_rng = random.Random(settings.seed)
        if saved is not None:
            restore(saved, self.model, self.optimizer, self.scheduler, self.py_rng, self.device)
            self.parallel.restore_rng(saved.get("rank_rngs"), settings.seed, int(self.state["step"]))
            if world.main:
                truncate_log(out / LOG_NAME, self.state["step"])
        else:  # dropout masks: same seed, same run (rank 0's are a single process's)
            torch.manual_seed(distributed.rank_seed(settings.seed, world.rank))
        self.step = int(self.state["step"])
        self.elapsed_before = float(self.state["elapsed"])
        self.started = time.perf_counter()

    def _doc_chars(self) -> int:
        """The longest document (longer lines are cut into several)."""
        return self.settings.max_chars

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
        """Steps and minutes left. A time budget is read off rank 0's clock (a collective):
        the processes must agree on the step they stop at."""
        settings = self.settings
        if settings.max_steps and self.step >= settings.max_steps:
            return False
        if not settings.max_minutes:
            return True
        elapsed = distributed.from_main(self.elapsed()) if self.world.parallel else self.elapsed()
        return not elapsed / 60 >= settings.max_minutes

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
        """One optimizer step on these docs (this process's share of them): the model's
        outputs and the characters read."""
        settings = self.settings
        keep, stand_in = self.parallel.rows(len(doc_ids))
        batch = make_batch(
            [self.train_docs[i] for i in doc_ids],
            self.vocab,
            self.np_rng,
            self.py_rng,
            settings.mask_rate,
            settings.noise_rate,
            settings.attacks,
            keep=keep,
        )
        inputs = _to(batch, self.device, self.teacher)
        counts = {name: float((inputs[f"{name}_targets"] != IGNORE).sum()) for name in ("mlm", "noisy")}
        if "word_found" in inputs:
            counts["distill"] = float(inputs["word_found"].sum())
        result = self.parallel.module(self.model)(
            **inputs,
            noisy_weight=settings.noisy_weight,
            distill_weight=settings.distill_weight,
            scales=self.parallel.scales(counts, stand_in),
        )
        return self.optimize(result["loss"], self.model.parameters(), stand_in, result, batch.n_chars)

    def optimize(
        self,
        loss: torch.Tensor,
        params: Any,
        stand_in: bool,
        result: Dict[str, torch.Tensor],
        n_chars: int,
    ) -> Tuple[Dict[str, torch.Tensor], int]:
        """Backward (gradients averaged over the processes), clipping, the optimizer and
        schedule steps; the outputs and characters to log (none for a stand-in)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, self.settings.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        if stand_in:
            return {}, 0
        return {k: v for k, v in result.items() if k != "loss"}, n_chars

    def update_next(self, plan: Iterator[List[int]]) -> Tuple[Dict[str, torch.Tensor], int]:
        """One step on the next batch of the plan."""
        return self.update(next(plan))

    def evaluate(self) -> Dict[str, float]:
        """The held-out figures of the log."""
        assert isinstance(self.model, CharPretrainer)  # a run with another model has its own evaluate
        return evaluate(self.model, self.dev_docs, self.vocab, self.settings, self.device, self.teacher)

    def checkpoint(self) -> None:
        """Rank 0 writes OUT/checkpoint; in a data-parallel run the others send it their
        dropout generators (a collective)."""
        rank_rngs = distributed.gather(distributed.rng_state(self.device)) if self.world.parallel else None
        if not self.world.main:
            return
        self.state.update(
            step=self.step,
            elapsed=self.elapsed(),
            settings=asdict(self.settings),
            np_rng=self.np_rng.bit_generator.state,
            py_rng=self.py_rng.getstate(),
        )
        save_checkpoint(self.out / CHECKPOINT, self.model, self.optimizer, self.scheduler, self.state, rank_rngs)

    def _log_writer(self, stack: ExitStack) -> Callable[[Dict[str, Any]], None]:
        """Appends a log entry to OUT's log on rank 0; does nothing on the other ranks."""
        if not self.world.main:
            return lambda entry: None
        log = stack.enter_context((self.out / LOG_NAME).open("a", encoding="utf8"))

        def write(entry: Dict[str, Any]) -> None:
            log.write(json.dumps(entry) + "\n")
            log.flush()

        return write

    def train(self, progress: bool = True) -> Dict[str, Any]:
        """Steps until the budget is spent, logging and checkpointing on the way; ends with
        a checkpoint. Returns the last log entry with ``stopped_by`` and ``planned_steps``."""
        settings = self.settings
        meter, chars, last_log = Meter(), 0, time.perf_counter()
        entry: Dict[str, Any] = {"step": self.step}
        main = self.world.main
        progress = progress and main
        bar = progress_bar(
            total=settings.max_steps, initial=self.step, enabled=progress, unit="step", desc="pretrain-chars"
        )
        with ExitStack() as stack:
            write = self._log_writer(stack)
            plan = self.batches()
            while self.budget_left():
                outputs, n_chars = self.update_next(plan)
                meter.add(outputs)
                chars += n_chars
                bar.update(1)
                evaluate_now = self.step % settings.checkpoint_every == 0
                last = not self.budget_left()
                if self.step % settings.log_every == 0 or evaluate_now or last:
                    if self.world.parallel:  # every process's figures (a collective)
                        meter.sums["chars"] = float(chars)
                        meter = meter.merged()
                        chars = int(meter.sums.pop("chars"))
                    now = time.perf_counter()
                    entry = {
                        "step": self.step,
                        "elapsed_s": round(self.elapsed(), 1),
                        "lr": self.scheduler.get_last_lr()[0],
                        **meter.summary(),
                        "chars_per_s": round(chars / max(now - last_log, 1e-9)),
                    }
                    if (evaluate_now or last) and main:
                        entry.update(self.evaluate())
                    write(entry)
                    shown = {k: entry[k] for k in SHOWN if k in entry}
                    bar.set_postfix(shown)
                    if evaluate_now or last:  # a log, not a terminal: one line per checkpoint
                        figures = ", ".join(f"{k} {v}" for k, v in shown.items())
                        log_line(bar, progress, f"pretrain-chars step {self.step}/{settings.max_steps}: {figures}")
                    meter, chars, last_log = Meter(), 0, time.perf_counter()
                if evaluate_now:
                    self.checkpoint()
        bar.close()
        if main and len(entry) == 1 and (self.out / LOG_NAME).exists():  # nothing left to do: report the last entry
            lines = (self.out / LOG_NAME).read_text(encoding="utf8").splitlines()
            entry = json.loads(lines[-1]) if lines else entry
        self.checkpoint()
        stopped_by = "max_steps" if settings.max_steps and self.step >= settings.max_steps else "max_minutes"
        return {**entry, "stopped_by": stopped_by, "planned_steps": settings.max_steps}
