"""The result of a run: the encoder as a plain Hugging Face directory (config.json +
model.safetensors) that ``char_backbone`` accepts as it is, and its model card. config.json
records the steps actually run (``spacy_entangle_pretraining``), so a run cut short by the
time cap is visible downstream."""

from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Sequence

from ..backbone_dirs.licenses import OWN_LICENSE, Part, as_records, copied_from
from ..backbone_dirs.model_card import write_model_card
from ..modeling.char_designs import get_design
from .checkpoint import CHECKPOINT, LOG_NAME
from .model import Pretrainer
from .settings import PRESETS, PretrainSettings

PRETRAINED_NOTE = "pretrained by `python -m spacy_entangle pretrain-chars`"


def licenses_of(settings: PretrainSettings, config: str) -> List[Part]:
    """What the encoder contains: the weights it started from (a grown encoder's copied
    layers; a CANINE given as --config), under their licence, and what this run trained,
    under spacy-entangle's. A preset starts from random weights: spacy-entangle's alone."""
    trained = ("the weights initialised and trained by spacy-entangle pretrain-chars", OWN_LICENSE)
    if settings.growing:
        copied = copied_from(f"the first {settings.grow_k or 'all'} layer(s) copied from", config)
        return [*copied, ("the character front end and join layer, trained by spacy-entangle", OWN_LICENSE)]
    if config in PRESETS:
        return [trained]
    return [*copied_from("the starting weights, from", config), trained]


def write_model(
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
    licenses = licenses_of(settings, config)
    encoder.config.spacy_entangle_licenses = as_records(licenses)
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
    design = get_design(settings.grow_design) if settings.growing else None
    write_model_card(
        out,
        design.card_title if design else "CANINE-style character encoder pretrained by spacy-entangle",
        f"{warning}Self-supervised on {', '.join(str(t) for t in texts)} ({stats['documents']} documents, "
        f"{n_dev} held out for the dev figures), {steps} steps. Objective: {objective}. Started from: {config}.\n\n"
        f"Use it as `char_backbone` (paths.char_backbone = this directory). The prediction heads are "
        f"not kept; `{CHECKPOINT}/` holds what `--resume` needs.\n\n"
        f"## Last log entry\n{figures}\n\n## Settings\n{used}\n\n## Text\n{data}\n\n"
        f"The loss curve is {LOG_NAME} (one JSON object per logged step).",
        licenses=licenses,
        tags=(
            list(design.card_tags)
            if design
            else ["canine", "character-level", "masked-lm"] + (["distillation"] if settings.distilling else [])
        ),
    )
