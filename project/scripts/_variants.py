"""What the runner (variants_run.py) and the report (variants_report.py) of scripts/variants.py
share: the typer app their commands register on, variants.yml (read and checked), and where
each seed's pipeline and metrics live."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

import typer

HERE = Path(__file__).resolve().parent.parent
NOISE = re.compile(r"_noise([0-9.]+)\.spacy$")
SIDES = ("subword", "char", "both")
ENCODERS = ("random", "masked", "distilled", "grown", "grown-canine")
# the folder under backbones/ of each char encoder (grown: design (b), word-pooled, not a
# CANINE; grown-canine: design (a), a CANINE whose deep stack is MiniLM's layers)
ENCODER_DIRS = {
    "random": "canine-random",
    "masked": "canine-masked",
    "distilled": "canine-distilled",
    "grown": "grown",
    "grown-canine": "grown-canine",
}
DEFAULT = "default"  # char_encoder of a variant that follows the project's `char_encoder`
KEYS = {
    "config",
    "char_encoder",
    "side",
    "augment",
    "char_backbone",
    "subword_backbone",
    "component",
    "side_key",
    "settings",
    "aug_level",
    "aug_rate",
}

app = typer.Typer(
    name="variants.py",
    help="Train, evaluate and compare the variants of a variants.yml.",
    no_args_is_help=True,
    add_completion=False,
)
# every command reads a variants.yml: WNUT-17's by default, a task project passes its own
VARIANTS_FILE = typer.Option(HERE / "variants.yml", "--variants", help="the variants.yml to read")


@dataclass(frozen=True)
class Variant:
    """One entry of variants.yml."""

    name: str
    config: str
    char_encoder: Optional[str] = None
    side: str = "subword"
    augment: bool = False
    # the augmenter's strength when `augment` is on (None: the command line's --aug-level/--aug-rate)
    aug_level: Optional[float] = None
    aug_rate: Optional[float] = None
    char_backbone: Optional[str] = None
    subword_backbone: Optional[str] = None
    component: str = "ner"
    side_key: str = "model.tok2vec.side"  # where the component's config holds `side`
    # config overrides of this variant alone, {dotted.key: value}: a recipe's own settings
    # (e.g. components.entangle.model.backbone_lr_scale), so each row is one variant name
    settings: Tuple[Tuple[str, str], ...] = ()

    @property
    def is_entangle(self) -> bool:
        return self.char_encoder is not None or self.char_backbone is not None

    def char_dir(self, backbones_dir: Path, default: str, default_dir: Optional[str] = None) -> str:
        """The char backbone: an explicit name/path, else backbones/ENCODER_DIRS[ENCODER]
        (for `default`: default_dir when given)."""
        if self.char_backbone:
            return self.char_backbone
        if self.char_encoder == DEFAULT and default_dir:
            return default_dir
        encoder = default if self.char_encoder == DEFAULT else self.char_encoder
        return str(backbones_dir / ENCODER_DIRS[encoder])


def load_variants(path: Path = HERE / "variants.yml") -> Dict[str, Variant]:
    """Read and check variants.yml: a mistake names the variant and the key."""
    import srsly

    raw = (srsly.read_yaml(path) or {}).get("variants") or {}
    out: Dict[str, Variant] = {}
    for name, spec in raw.items():
        spec = dict(spec or {})
        unknown = set(spec) - KEYS
        if unknown:
            raise ValueError(f"{path}: variant {name!r}: unknown keys {sorted(unknown)}")
        if "config" not in spec:
            raise ValueError(f"{path}: variant {name!r} names no config")
        settings = spec.pop("settings", None) or {}
        if not isinstance(settings, dict):
            raise ValueError(f"{path}: variant {name!r}: settings must be a mapping of config keys to values")
        pairs = tuple((str(k), json.dumps(v) if not isinstance(v, str) else v) for k, v in settings.items())
        variant = Variant(name=name, settings=pairs, **spec)
        if variant.char_encoder not in (None, DEFAULT, *ENCODERS):
            raise ValueError(f"{path}: variant {name!r}: char_encoder must be one of {(DEFAULT,) + ENCODERS} or null")
        if variant.side not in SIDES:
            raise ValueError(f"{path}: variant {name!r}: side must be one of {SIDES}")
        out[name] = variant
    return out


def named_variants(path: Path, names: Iterable[str]) -> Dict[str, Variant]:
    """variants.yml, after checking that it has every variant a command names."""
    variants = load_variants(path)
    unknown = [n for n in names if n not in variants]
    if unknown:
        raise SystemExit(f"variants.py: no variant {unknown} in {path} (known: {', '.join(variants)})")
    return variants


def metrics_path(metrics_dir: Path, name: str, seed: int, key: str) -> Path:
    """metrics/NAME/seedN_KEY.json: KEY is train_time, dev, dev_noiseR or test."""
    return metrics_dir / name / f"seed{seed}_{key}.json"


def trained_pipeline(training_dir: Path, name: str, seed: int) -> Path:
    """Where `train` leaves a variant's pipeline: training/NAME/seedN/model-best."""
    return training_dir / name / f"seed{seed}" / "model-best"


def score(scores: Dict, what: str = "f") -> Optional[float]:
    """Entity F (P, R) of `spacy evaluate` output: the ner's ents_*, or a spancat's spans_sc_*."""
    value = scores.get(f"ents_{what}")
    return scores.get(f"spans_sc_{what}") if value is None else value
