"""Loading the two Hugging Face encoders: by hub name, by local directory, or
from a stored config (the spacy.load path, which must never touch the network
and never runs remote code)."""
import os
from pathlib import Path
from typing import Any, Dict

from transformers import AutoConfig, AutoModel, AutoTokenizer


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
            if role == "tokenizer" and not any(p.startswith("tokenizer") or p in ("vocab.txt", "vocab.json") for p in present):
                parts.append("it has no tokenizer files (tokenizer.json, vocab.*)")
            detail = "; ".join(parts) or f"{type(err).__name__}: {err}"
            why = f"the local directory '{name}' cannot be loaded: {detail} (files: {present})"
    else:
        offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
        why = (
            f"'{name}' is not a local directory and could not be fetched from the Hugging Face hub "
            + ("(offline mode is set)" if offline else "(hub unreachable, or no such model)")
            + "; give a local directory (e.g. one made by `python -m spacy_entangle init-backbone`)"
        )
    return BackboneError(f"Cannot load the {role} backbone {name!r}: {why}. ({type(err).__name__}: {err})")


def load_encoder(name: str, role: str) -> Any:
    """An encoder (AutoModel) from a hub name or a local directory."""
    try:
        return AutoModel.from_pretrained(str(name), trust_remote_code=False)
    except Exception as err:  # noqa: BLE001 - re-raised with the backbone named
        raise _explain(str(name), role, err) from err


def load_tokenizer(name: str) -> Any:
    """The fast tokenizer stored with the subword backbone."""
    try:
        return AutoTokenizer.from_pretrained(str(name), use_fast=True, trust_remote_code=False)
    except Exception as err:  # noqa: BLE001 - re-raised with the backbone named
        raise _explain(str(name), "tokenizer", err) from err


def encoder_from_config(config_dict: Dict[str, Any]) -> Any:
    """An encoder with the given architecture and random weights (weights come next)."""
    config_dict = dict(config_dict)
    model_type = config_dict.pop("model_type")
    config = AutoConfig.for_model(model_type, **config_dict)
    return AutoModel.from_config(config, trust_remote_code=False)
