"""A run's folder and checkpoint: ``OUT/checkpoint`` holds what an exact resume needs (the
encoder as a Hugging Face directory, the heads, optimizer, scheduler and every random state),
all of it loadable with ``torch.load(weights_only=True)`` (tensors and plain Python values: a
checkpoint from elsewhere cannot run code). A new checkpoint is written next to the old one
and swapped in; a resume checks its settings and text against the checkpoint's."""

import hashlib
import json
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
import torch

from . import distributed
from .data import CharVocab, PretrainDataError
from .distributed import World
from .model import CharPretrainer, Pretrainer
from .settings import PretrainSettings

if TYPE_CHECKING:  # transformers loads when a model is built
    from transformers import PreTrainedModel

LOG_NAME = "pretrain_log.jsonl"
CHECKPOINT = "checkpoint"


def fingerprint(docs: Sequence[str]) -> str:
    """The text a run reads, in one hash: a resume must read the same."""
    digest = hashlib.sha256()
    for doc in docs:
        digest.update(doc.encode("utf8") + b"\n")
    return digest.hexdigest()


def save_checkpoint(
    path: Path,
    model: Pretrainer,
    optimizer: Any,
    scheduler: Any,
    state: Dict[str, Any],
    rank_rngs: Optional[List[Any]] = None,
) -> None:
    """Written next to the old one, then swapped in: a crash never leaves half a checkpoint.
    ``rank_rngs``: each process's dropout generators in a data-parallel run, by rank
    (distributed.py); everything else is the same whatever the number of processes."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.encoder.save_pretrained(tmp / "encoder", safe_serialization=True)
    training_state = {
        "heads": head_state(model),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "py_rng": state.pop("py_rng"),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }
    if rank_rngs is not None:
        training_state["rank_rngs"] = rank_rngs
    torch.save(training_state, tmp / "training_state.pt")
    (tmp / "state.json").write_text(json.dumps(state, indent=2), encoding="utf8")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def head_state(model: Pretrainer) -> Dict[str, torch.Tensor]:
    """Everything trained but the encoder (saved apart, as a Hugging Face directory)."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}


def load_training_state(path: Path) -> Dict[str, Any]:
    """weights_only: tensors and plain values only, never code (a checkpoint may come from
    elsewhere); anything else is refused with the file named."""
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # UnpicklingError and friends, re-raised with the file named
        raise ValueError(f"{path} cannot be loaded safely (torch.load weights_only=True): {err}") from err


def truncate_log(log_path: Path, upto_step: int) -> None:
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
    "grow_design",
    "grow_k",
    "char_width",
    "stage_a_steps",
    "type_batch",
    "unfreeze_top",  # the optimizer's parameter groups
)
FLAGS = {"grow_design": "--design", "grow_k": "--k"}  # settings whose flag is not --name-with-dashes


Start = Tuple["PreTrainedModel", CharVocab, Dict[str, Any], Optional[Dict[str, Any]]]


def start_state(
    out: Path,
    resume: bool,
    settings: PretrainSettings,
    config: str,
    new: Callable[[], "PreTrainedModel"],
    train_docs: List[str],
    fingerprint: str,
    world: Optional[World] = None,
) -> Start:
    """The encoder, output vocabulary, loop state and saved training state: from the
    checkpoint on resume (checked against these settings), else fresh.

    In a data-parallel run (``world``) rank 0 alone reads and writes OUT, so the other
    machines need not see it, and sends the others the loop and training state; they build
    the encoder from its config (the loop copies rank 0's weights into it). An error on
    rank 0 is raised on every process."""
    args = (out, resume, settings, config, new, train_docs, fingerprint)
    if world is None or not world.parallel:
        return _start_state(*args)
    start: Optional[Start] = None
    error: Optional[Exception] = None
    if world.main:
        try:
            start = _start_state(*args)
        except Exception as err:  # noqa: BLE001 - raised below, on every process
            error = err
    sent = None if start is None else (start[0].config, start[1].codepoints, start[2], start[3])
    error, sent = distributed.from_main((error, sent))
    if error is not None:
        raise error
    if start is not None:
        return start
    from transformers import AutoModel

    encoder_config, codepoints, state, saved = sent
    return AutoModel.from_config(encoder_config), CharVocab(codepoints), state, saved


def _start_state(
    out: Path,
    resume: bool,
    settings: PretrainSettings,
    config: str,
    new: Callable[[], "PreTrainedModel"],
    train_docs: List[str],
    fingerprint: str,
) -> Start:
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
                flag = FLAGS.get(name, "--" + name.replace("_", "-"))
                raise ValueError(
                    f"{flag} differs from the checkpoint's ({getattr(old, name)}): resume needs the same value"
                )
        from transformers import AutoModel

        saved = load_training_state(ckpt / "training_state.pt")
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


def restore(
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
        missing = set(head_state(model)) - set(saved["heads"])
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
