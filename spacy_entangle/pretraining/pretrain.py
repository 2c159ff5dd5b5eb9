"""`pretrain-chars`' entry point: the run its settings call for (loop.py's masked objectives,
or grow_run.py's grown encoder), trained, and its encoder and model card written (card.py).
Under ``torchrun`` the same call runs data-parallel (distributed.py): rank 0 writes OUT, the
others wait for it at the end."""

from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from . import distributed
from .card import write_model
from .loop import PretrainRun
from .settings import PretrainSettings


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
    plus ``stopped_by`` ("max_steps" or "max_minutes") and ``planned_steps``. Started by
    ``torchrun`` with several processes, each runs this on its share of every batch."""
    settings.check()
    batches = dict(batch_size=settings.batch_size)
    if settings.growing and settings.type_steps:
        batches["type_batch"] = settings.type_batch
    distributed.check_divides(distributed.world_from_env(), **batches)  # before any process waits for another
    with distributed.process_group(device) as (world, device):
        if settings.init_from:  # settings.growing
            from .grow_run import GrownRun  # imports transformers: only when growing

            run: PretrainRun = GrownRun(texts, Path(out), settings, settings.init_from, None, resume, device, world)
        else:
            run = PretrainRun(texts, Path(out), settings, config, shape, resume, device, world)
        entry = run.train(progress)
        if world.main:  # run.config: the subword encoder a grown run starts from
            write_model(run.out, run.model, settings, run.stats, len(run.dev_docs), texts, entry, run.config)
        if world.parallel:  # OUT is complete when every process returns
            distributed.barrier()
    return entry
