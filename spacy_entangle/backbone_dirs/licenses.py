"""The licences of what a backbone directory contains, so that its model card and config.json
say all of them: weights copied from another model keep that model's licence beside
spacy-entangle's own (MIT) for what it trained or wrote. A part is ``(what, SPDX id)``;
config.json carries them as ``spacy_entangle_licenses`` (read back by ``folder_licenses`` and by
the WNUT-17 project's package meta), the card as its hub header and a "Licences" section."""

import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import srsly

OWN_LICENSE = "MIT"  # spacy-entangle's LICENSE: the weights it initialises or trains itself
UNKNOWN = "unknown"
Part = Tuple[str, str]


def card_header(folder: Path) -> Dict:
    """The metadata header of a folder's README.md ({} when it has none)."""
    path = Path(folder) / "README.md"
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf8")
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        return {}
    header = srsly.yaml_loads(text[4:].split("\n---", 1)[0])
    return header if isinstance(header, dict) else {}


def folder_licenses(source: str) -> List[str]:
    """The licences a local model folder declares: its config.json record when spacy-entangle
    wrote one, else its card's header (the hub's `license`); [] when it says none (a hub
    name, a folder without a card)."""
    folder = Path(source)
    config = folder / "config.json"
    if config.is_file():
        parts = json.loads(config.read_text(encoding="utf8")).get("spacy_entangle_licenses")
        if parts:
            return unique(part["license"] for part in parts)
    header = card_header(folder)
    name = header.get("license_name") if header.get("license") == "other" else header.get("license")
    if not name:
        return []
    return unique(SPDX.get(term, term) for term in str(name).split("-and-"))


def copied_from(what: str, source: str) -> List[Part]:
    """The parts of weights copied from ``source``: one per licence it declares, or one
    ``unknown`` part that names it (its licence must then be looked up by hand)."""
    found = folder_licenses(source)
    return [(f"{what} {source}", license) for license in found] or [(f"{what} {source} (no licence found)", UNKNOWN)]


def unique(ids: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(ids))


def hub_license(parts: Sequence[Part]) -> Dict[str, str]:
    """The hub's header fields: one licence id, or `other` with all of them joined in
    license_name (the hub's header holds a single id)."""
    ids = unique(license.lower() for _, license in parts)
    if len(ids) == 1:
        return {"license": ids[0]}
    return {"license": "other", "license_name": "-and-".join(ids)}


def licenses_md(parts: Sequence[Part]) -> str:
    """The card's "Licences" section: each part and its licence."""
    lines = "\n".join(f"- {what}: {license}" for what, license in parts)
    return f"## Licences\n\nThis directory contains:\n\n{lines}\n\nIts use must follow each of them."


def as_records(parts: Sequence[Part]) -> List[Dict[str, str]]:
    """The parts as config.json stores them."""
    return [{"part": what, "license": license} for what, license in parts]


def expression(ids: Sequence[str], extra: Optional[Sequence[str]] = None) -> str:
    """An SPDX expression of every licence (e.g. "CC-BY-4.0 AND Apache-2.0 AND MIT")."""
    return " AND ".join(unique([*ids, *(extra or [])]))


# the hub's lowercase ids -> SPDX spelling, for those spacy-entangle's cards use
SPDX = {"mit": "MIT", "apache-2.0": "Apache-2.0", "cc-by-4.0": "CC-BY-4.0", UNKNOWN: UNKNOWN}
