"""Loading the two Hugging Face encoders: by hub name, by local directory, or
from a stored config (the spacy.load path, which must never touch the network
and never runs remote code).

transformers is imported inside the functions: importing it costs ~3.5 s (its auto classes
pull in torch's compiler stack and scikit-learn), and spaCy imports this package to find its
factories, so `spacy train`, `spacy.load` and every CLI call would pay it before any work.
A name that can only be a local path, or any name the cache lacks while offline or while the
hub does not answer one short request, fails before that import (``check_findable``), naming
the local model folders nearest the name: a mistyped path must not wait on the hub's retries."""

import difflib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import canine
from .sizes import check_positive


class BackboneError(ValueError):
    """A backbone could not be loaded; the message names it and says why."""


# a Hugging Face model id: "name" or "org/name" (letters, digits, "-", "_", "."), as
# huggingface_hub validates it; anything else can only be a local path
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's ENV_VARS_TRUE_VALUES
HUB_PROBE_SECONDS = 3.0  # how long the one connectivity probe waits for the hub's answer
HUB_PROBE_TTL = 60.0  # seconds a probe's answer is reused (three loads per pipeline: one probe)
# the folders the search for local model folders never enters (environments, caches, VCS)
_SKIPPED_DIRS = {"node_modules", "__pycache__", "site-packages", "venv", "env"}
_SEARCH_DEPTH = 3  # folders below the working directory searched for model folders
_SEARCH_MAX_DIRS = 5000  # and at most this many folders visited (a huge working directory stays fast)
_probes: Dict[str, Tuple[float, bool]] = {}


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
        why = (
            f"'{name}' is not a local directory and could not be fetched from the Hugging Face hub "
            + ("(offline mode is set)" if hub_offline() else "(hub unreachable, or no such model)")
            + f"{_nearest_model_dirs(name)}; give a local directory (e.g. one made by "
            "`python -m spacy_entangle init-backbone`)"
        )
    return BackboneError(f"Cannot load the {role} backbone {name!r}: {why}. ({type(err).__name__}: {err})")


def _env_true(name: str) -> bool:
    """Read a flag as huggingface_hub does: 1 / ON / YES / TRUE, any case ("0" is off)."""
    return os.environ.get(name, "").strip().upper() in _TRUE


def hub_offline() -> bool:
    """Offline mode as huggingface_hub reads it: HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE
    when HF_HUB_OFFLINE is unset or empty (so HF_HUB_OFFLINE=0 wins over TRANSFORMERS_OFFLINE=1)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in _TRUE


def _only_a_path(name: str) -> Optional[str]:
    """Why ``name`` can only mean a local directory (so asking the hub is pointless), or None
    when it may be a hub model id."""
    if name.startswith((".", "~")) or os.path.isabs(name) or (os.altsep and os.altsep in name):
        return "it is written as a path"
    if not _HUB_ID.match(name) or "--" in name or ".." in name:
        return "it is not a Hugging Face model id (name or org/name)"
    if "/" in name and Path(name.split("/", 1)[0]).is_dir():
        return f"'{name.split('/', 1)[0]}' is a local directory"
    return None


def _nearest_listing(name: str) -> str:
    """What the deepest existing folder on ``name``'s path holds: the typo is usually there."""
    for parent in Path(name).parents:
        if str(parent) not in ("", ".") and parent.is_dir():
            entries = sorted(p.name for p in parent.iterdir())
            shown = ", ".join(entries[:12]) + (", ..." if len(entries) > 12 else "")
            return f"; '{parent}' holds: {shown or 'nothing'}"
    return ""


def local_model_dirs(root: Path = Path(".")) -> List[str]:
    """Folders holding a config.json under ``root`` (itself and up to ``_SEARCH_DEPTH`` levels
    down, hidden folders and environments skipped, at most ``_SEARCH_MAX_DIRS`` visited), as
    paths relative to it. Linked folders are followed (a model folder is often a link to a
    download cache); the depth and visit bounds keep a link cycle finite."""
    found: List[str] = []
    visited = 0
    for folder, subdirs, files in os.walk(root, followlinks=True):
        visited += 1
        rel = os.path.relpath(folder, root)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        if "config.json" in files and rel != ".":
            found.append(rel)
        if depth >= _SEARCH_DEPTH or visited >= _SEARCH_MAX_DIRS:
            subdirs[:] = []
        else:
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
    return found


def _nearest_model_dirs(name: str, limit: int = 5) -> str:
    """A clause naming the local model folders nearest ``name`` (by spelling, whole path or
    last part), or saying that none was found below the working directory."""
    here = os.path.abspath(".")
    folders = local_model_dirs()
    if not folders:
        return f"; no model folder (with a config.json) lies below {here} ({_SEARCH_DEPTH} levels searched)"

    def closeness(folder: str) -> float:
        whole = difflib.SequenceMatcher(None, name.lower(), folder.lower()).ratio()
        last = difflib.SequenceMatcher(None, Path(name).name.lower(), Path(folder).name.lower()).ratio()
        return max(whole, last)

    nearest = sorted(folders, key=lambda folder: (-closeness(folder), folder))[:limit]
    return f"; the local model folders nearest that name (below {here}): {', '.join(nearest)}"


def hub_endpoint() -> str:
    """The hub's address as huggingface_hub reads it (HF_ENDPOINT, else huggingface.co)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether the hub answers one HEAD request within ``timeout`` seconds (any HTTP answer
    counts; proxies as requests reads them). The answer is kept for HUB_PROBE_TTL seconds per
    endpoint. Name resolution cannot be timed out in Python, so the request runs in a daemon
    thread that is left behind when it does not answer in time."""
    endpoint = hub_endpoint()
    now = time.monotonic()
    known = _probes.get(endpoint)
    if known is not None and now - known[0] < HUB_PROBE_TTL:
        return known[1]
    answered: List[bool] = []

    def probe() -> None:
        try:
            import requests

            requests.head(endpoint, timeout=timeout, allow_redirects=False)
            answered.append(True)
        except Exception:  # noqa: BLE001 - no answer, whatever the reason
            answered.append(False)

    thread = threading.Thread(target=probe, name="spacy-entangle-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    reachable = bool(answered and answered[0])
    _probes[endpoint] = (now, reachable)
    return reachable


def _in_hub_cache(name: str) -> bool:
    """Whether the local Hugging Face cache holds ``name`` (offline loads read it from there)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        files = ("config.json", "tokenizer_config.json", "tokenizer.json")
        return any(isinstance(try_to_load_from_cache(name, f), str) for f in files)
    except Exception:  # noqa: BLE001 - an id the cache cannot hold: not cached
        return False


def check_findable(name: str, role: str) -> Dict[str, Any]:
    """Fail at once, before transformers is asked, when ``name`` is not a local directory and
    the hub cannot help: a name that can only be a path (a typo in a config's backbone path
    used to cost five retries of the hub, ~30 s and a long log, before the same error), any
    name that the cache lacks when offline mode is set, or when the hub does not answer one
    short probe (``hub_reachable``: a path typed where its first folder does not exist looks
    like a hub id, and waited 110 s on the hub's retries). Returns what ``from_pretrained``
    then needs: ``local_files_only`` for a cached name while the hub does not answer."""
    if Path(name).exists():
        return {}  # a local directory (or file): from_pretrained says what is wrong with it
    reason = _only_a_path(name)
    if reason is not None:
        why = (
            f"no such local directory ({reason}, so the Hugging Face hub was not asked){_nearest_listing(name)}"
            f"{_nearest_model_dirs(name)}; check the path, relative to the directory you run in"
        )
        err = f"FileNotFoundError: {os.path.abspath(name)}"
    elif hub_offline():
        if _in_hub_cache(name):
            return {}
        why = (
            f"'{name}' is not a local directory, offline mode is set (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE) "
            f"and the Hugging Face cache does not hold it{_nearest_model_dirs(name)}; give a local directory "
            "(e.g. one made by `python -m spacy_entangle init-backbone`)"
        )
        err = "OSError: not in the Hugging Face cache"
    elif hub_reachable():
        return {}
    elif _in_hub_cache(name):
        return {"local_files_only": True}  # what the cache holds, without the hub's retries
    else:
        why = (
            f"'{name}' is not a local directory, the Hugging Face hub ({hub_endpoint()}) did not answer "
            f"(one request, {HUB_PROBE_SECONDS:g} s at most) and its cache does not hold it{_nearest_listing(name)}"
            f"{_nearest_model_dirs(name)}; give a local directory (relative to the directory you run in; "
            "e.g. one made by `python -m spacy_entangle init-backbone`), or set HF_HUB_OFFLINE=1 to read "
            "the cache alone"
        )
        err = "OSError: the hub is unreachable"
    raise BackboneError(f"Cannot load the {role} backbone {name!r}: {why}. ({err})")


def register_model_types() -> None:
    """The model types this package adds to transformers' auto classes (the grown char
    encoder): char_designs registers them, lazily, on `import spacy_entangle` already."""
    from . import char_designs  # noqa: F401  (registers on import)


def load_encoder(name: str, role: str) -> Any:
    """An encoder (AutoModel) from a hub name or a local directory."""
    hub = check_findable(str(name), role)  # before the import: a typo fails at once
    from transformers import AutoModel

    register_model_types()
    try:
        return AutoModel.from_pretrained(str(name), trust_remote_code=False, **hub)
    except Exception as err:  # noqa: BLE001 - re-raised with the backbone named
        raise _explain(str(name), role, err) from None  # its message names err


def load_tokenizer(name: str) -> Any:
    """The fast tokenizer stored with the subword backbone."""
    hub = check_findable(str(name), "tokenizer")
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(name), use_fast=True, trust_remote_code=False, **hub)
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
