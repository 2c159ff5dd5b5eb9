"""`pretrain-chars`' entry point: the run its settings call for (loop.py's masked objectives,
or grow_run.py's grown encoder), trained, and its encoder and model card written (card.py)."""

from pathlib import Path
from typing import Any, Dict, Optional, Sequence

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
    plus ``stopped_by`` ("max_steps" or "max_minutes") and ``planned_steps``."""
    settings.check()
    if settings.init_from:  # settings.growing
        from .grow_run import GrownRun  # imports transformers: only when growing

        run: PretrainRun = GrownRun(texts, Path(out), settings, settings.init_from, None, resume, device)
    else:
        run = PretrainRun(texts, Path(out), settings, config, shape, resume, device)
    entry = run.train(progress)
    # run.config: the subword encoder a grown run starts from
    write_model(run.out, run.model, settings, run.stats, len(run.dev_docs), texts, entry, run.config)
    return entry
