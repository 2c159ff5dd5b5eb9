"""The shipped training configs (CPU and paper presets, one per task), inside the package so
that a wheel has them: ``init-config`` builds from them, and the repository's top-level
``configs/`` is a link to this folder (the projects read ``../configs/NAME.cfg``)."""
from pathlib import Path
from typing import List, Optional, Sequence

from thinc.api import Config

CONFIGS_DIR = Path(__file__).resolve().parent


def config_path(name: str) -> Path:
    """The path of a shipped config, e.g. ``config_path("ner_cpu.cfg")``."""
    path = CONFIGS_DIR / name
    if path.suffix != ".cfg" or not path.is_file():
        raise ValueError(f"no shipped config {name!r}; the configs are: {', '.join(config_names())}")
    return path


def config_names() -> List[str]:
    return sorted(p.name for p in CONFIGS_DIR.glob("*.cfg"))


TASKS = ("ner", "tagger", "textcat")
PRESETS = ("cpu", "paper")


def build_config(
    pipeline: Sequence[str],
    preset: str = "cpu",
    *,
    char_backbone: Optional[str] = None,
    subword_backbone: Optional[str] = None,
    lang: Optional[str] = None,
    base: Optional[Config] = None,
) -> Config:
    """One complete training config for an `entangle` component feeding the given task
    components (listeners), from the shipped single-task configs of the preset: the first
    task's config is the base (entangle settings, batcher, optimizer, budget), each further
    task adds its component block, and spaCy combines the score weights. `base`, a partial
    config (e.g. only [nlp] and [components]), is merged over the preset, its values winning:
    `spacy init fill-config` for entangle pipelines, with the preset's optimizer, schedule and
    batches where spaCy would fill in its own defaults (Adam at 1e-3, no warm-up). `lang` is
    nlp.lang (None: the base's, else the preset's, "en"). Validated by building the pipeline
    (the backbones are not loaded)."""
    from spacy.util import load_config, load_model_from_config

    tasks = list(dict.fromkeys(t.strip() for t in pipeline if t.strip()))
    unknown = [t for t in tasks if t not in TASKS]
    if not tasks or unknown:
        raise ValueError(f"--pipeline takes components among {', '.join(TASKS)} (comma-separated), got {list(pipeline)}")
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    config = load_config(config_path(f"{tasks[0]}_{preset}.cfg"), interpolate=False)
    for task in tasks[1:]:
        other = load_config(config_path(f"{task}_{preset}.cfg"), interpolate=False)
        config["components"][task] = other["components"][task]
        config["nlp"]["pipeline"] = [*config["nlp"]["pipeline"], task]
    # spaCy fills the weights from each component's defaults, normalised over the tasks
    config["training"]["score_weights"] = {}
    if base is not None:
        config = config.merge(Config(base, is_interpolated=False))
        missing = [name for name in config["nlp"]["pipeline"] if name not in config["components"]]
        if missing:
            raise ValueError(f"[nlp] pipeline names components without a [components.NAME] block: {', '.join(missing)}")
        # drop the blocks of the preset's tasks that the base's pipeline leaves out
        config["components"] = {name: config["components"][name] for name in config["nlp"]["pipeline"]}
    if lang:
        config["nlp"]["lang"] = lang
    if char_backbone:
        config["paths"]["char_backbone"] = str(char_backbone)
    if subword_backbone:
        config["paths"]["subword_backbone"] = str(subword_backbone)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    return nlp.config
