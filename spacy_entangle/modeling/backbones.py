"""Loading the two Hugging Face encoders: by hub name, by local directory, or
from a stored config (the spacy.load path, which must never touch the network
and never runs remote code).

transformers is imported inside the functions: importing it costs ~3.5 s (its auto classes
pull in torch's compiler stack and scikit-learn), and spaCy imports this package to find its
factories, so `spacy train`, `spacy.load` and every CLI call would pay it before any work."""

import os
from pathlib import Path
from typing import Any, Dict, Optional

from .. import canine
from .sizes import check_positive


class BackboneError(ValueError):
    """A backbone could not be loaded; the message names it and says why."""


def _explain(name: str, role: str, err: Exception) -> BackboneError:
    path = Path(name)
    if path.exists():
        if not path.is_dir():
            why = f"'{name}' is a file, not a model directory"
        else:
            present = sorted(p.name for p in path.iterdir())
            missing = [f for f in ("config.json",) if f not in present]
            weights = any(p.endswith((".safetensors", ".bin")) for p in present)
            parts = []
            if missing:
                parts.append("it lacks config.json")
            if not weights and role != "tokenizer":
                parts.append("it has no weights (*.safetensors / *.bin)")
            if role == "tokenizer" and not any(
                p.startswith("tokenizer") or p in ("vocab.txt", "vocab.json") for p in present
            ):
                parts.append("it has no tokenizer files (tokenizer.json, vocab.*)")
            detail = "; ".join(parts) or f"{type(err).__name__}: {err}"
            why = f"the local directory '{name}' cannot be loaded: {detail} (files: {present})"
    else:
        offline = _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE")
        why = (
            f"'{name}' is not a local directory and could not be fetched from the Hugging Face hub "
            + ("(offline mode is set)" if offline else "(hub unreachable, or no such model)")
            + "; give a local directory (e.g. one made by `python -m spacy_entangle init-backbone`)"
        )
    return BackboneError(f"Cannot load the {role} backbone {name!r}: {why}. ({type(err).__name__}: {err})")


def _env_true(name: str) -> bool:
    """Read a flag as huggingface_hub does: 1 / ON / YES / TRUE, any case ("0" is off)."""
    return os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def register_model_types() -> None:
    """The model types this package adds to transformers' auto classes (the grown char
    encoder), registered here, where backbones load, rather than on `import spacy_entangle`
    (the module imports transformers)."""
    from . import grown  # noqa: F401  (registers on import)


def load_encoder(name: str, role: str) -> Any:
    """An encoder (AutoModel) from a hub name or a local directory."""
    from transformers import AutoModel

    register_model_types()
    try:
        return AutoModel.from_pretrained(str(name), trust_remote_code=False)
    except Exception as err:  # noqa: BLE001 - re-raised with the backbone named
        raise _explain(str(name), role, err) from None  # its message names err


def load_tokenizer(name: str) -> Any:
    """The fast tokenizer stored with the subword backbone."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(name), use_fast=True, trust_remote_code=False)
    except Exception as err:  # noqa: BLE001 - re-raised with the backbone named
        raise _explain(str(name), "tokenizer", err) from None


def encoder_from_config(config_dict: Dict[str, Any]) -> Any:
    """An encoder with the given architecture and random weights (weights come next)."""
    from transformers import AutoConfig, AutoModel

    register_model_types()
    config_dict = dict(config_dict)
    model_type = config_dict.pop("model_type")
    config = AutoConfig.for_model(model_type, **config_dict)
    return AutoModel.from_config(config, trust_remote_code=False)


def canine_config(
    *,
    layers: int = 2,
    width: int = 256,
    heads: int = 4,
    ffn_width: Optional[int] = None,
    max_chars: int = canine.MAX_CHARS,
    local_stride: int = canine.BLOCK,
    hash_buckets: int = canine.HASH_BUCKETS,
) -> Any:
    """A CanineConfig of the given shape, checked here rather than deep inside transformers:

    - CANINE embeds each codepoint with 8 hash functions, one width/8 shard each,
      so ``width`` must divide by 8 (and by ``heads``);
    - transformers sizes CANINE's character *position* table by
      ``num_hash_buckets``, not by ``max_position_embeddings``, so inputs longer than
      ``hash_buckets`` characters fail with an IndexError: require
      ``max_chars <= hash_buckets`` (google/canine-s uses 16384 for both);
    - ``max_chars`` and ``local_stride`` are multiples of the downsampling rate 4.
    """
    check_positive(
        layers=layers,
        width=width,
        heads=heads,
        ffn_width=ffn_width,
        max_chars=max_chars,
        local_stride=local_stride,
        hash_buckets=hash_buckets,
    )
    if width % canine.HASH_FUNCTIONS or width % heads:
        raise ValueError(
            f"CANINE width {width} must be divisible by {canine.HASH_FUNCTIONS} (hash functions) and by heads={heads}"
        )
    if max_chars % canine.DOWNSAMPLING or local_stride % canine.DOWNSAMPLING:
        raise ValueError(
            f"max_chars ({max_chars}) and local_stride ({local_stride}) must be multiples of "
            f"CANINE's downsampling rate ({canine.DOWNSAMPLING})"
        )
    if max_chars > hash_buckets:
        raise ValueError(
            f"max_chars ({max_chars}) must be <= hash_buckets ({hash_buckets}): transformers' CANINE "
            "sizes its character position table by num_hash_buckets, so longer inputs would crash"
        )
    from transformers import CanineConfig

    return CanineConfig(
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn_width or 4 * width,
        max_position_embeddings=max_chars,
        local_transformer_stride=local_stride,
        num_hash_buckets=hash_buckets,
        num_hash_functions=canine.HASH_FUNCTIONS,
        downsampling_rate=canine.DOWNSAMPLING,
    )
