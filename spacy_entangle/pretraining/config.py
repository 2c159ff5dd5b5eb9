"""`pretrain-chars CONFIG.cfg OUT --pretrain.max_steps 100`: a run described by a config
file with dotted overrides, as `spacy pretrain` reads one (thinc's config format, spaCy's
override parser). Three sections, each optional; a key left out keeps its default, which
lives in one place (``PretrainSettings`` for [pretrain]):

    [paths]
    texts = ["tweets.txt"]        # plain-text files, one document per line

    [encoder]                      # the start of a run that is not grown (see --config)
    config = "canine-small"
    layers = null
    width = null
    heads = null

    [pretrain]                     # PretrainSettings' fields
    max_steps = 2400
    noise_rate = 0.15
    init_from = null

A key or section that nothing reads is an error that names it.
"""

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .settings import PretrainSettings

ENCODER_KEYS = ("config", "layers", "width", "heads")


@dataclass
class PretrainRunConfig:
    """Everything a `pretrain-chars` call runs: the texts, the starting encoder and shape
    overrides (runs that are not grown), and the settings."""

    texts: List[Path]
    settings: PretrainSettings
    encoder: str = "canine-small"
    shape: Dict[str, Optional[int]] = field(default_factory=lambda: dict.fromkeys(ENCODER_KEYS[1:]))


def setting_names() -> List[str]:
    return [f.name for f in fields(PretrainSettings)]


def parse_overrides(args: Sequence[str]) -> Dict[str, Any]:
    """``--section.key value`` / ``--section.key=value`` pairs (values read as JSON where
    they parse, else as strings), as `spacy train` and `spacy pretrain` read them."""
    from click.exceptions import ClickException
    from spacy.cli._util import parse_config_overrides

    try:
        return parse_config_overrides(list(args))
    except ClickException as err:  # a mistyped --flag lands here too
        raise ValueError(
            f"{err.format_message()} (overrides of a config file are dotted: --pretrain.max_steps 100)"
        ) from None


def read_run_config(path: Path, overrides: Optional[Dict[str, Any]] = None) -> PretrainRunConfig:
    """The run a config file and its overrides describe; unknown sections and keys are
    errors that name them and list what is known."""
    from thinc.api import Config

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such config file")
    try:
        cfg = Config().from_disk(path, overrides=overrides or {})
    except Exception as err:  # noqa: BLE001 - thinc's parse and override errors, re-raised with the file named
        raise ValueError(f"{path}: {err}") from None
    known = {"paths": ["texts"], "encoder": list(ENCODER_KEYS), "pretrain": setting_names()}
    for section, values in cfg.items():
        if section not in known:
            raise ValueError(f"{path}: unknown section [{section}] (known: {', '.join(known)})")
        unknown = [key for key in values if key not in known[section]]
        if unknown:
            raise ValueError(
                f"{path}: unknown key {section}.{unknown[0]} (known in [{section}]: {', '.join(known[section])})"
            )
    texts = cfg.get("paths", {}).get("texts")
    if not texts:
        raise ValueError(f"{path}: give the text files as [paths] texts (or --paths.texts FILE)")
    encoder = dict(cfg.get("encoder", {}))
    return PretrainRunConfig(
        texts=[Path(t) for t in ([texts] if isinstance(texts, str) else texts)],
        settings=PretrainSettings(**cfg.get("pretrain", {})),
        encoder=str(encoder.pop("config", "canine-small")),
        shape={key: encoder.get(key) for key in ENCODER_KEYS[1:]},
    )
