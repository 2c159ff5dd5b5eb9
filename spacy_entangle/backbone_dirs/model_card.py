"""Model cards (README.md) of the backbone directories spacy-entangle writes, with the
Hugging Face metadata header (the YAML block the hub reads: licence, library, tags), so a
directory pushed with `huggingface-cli upload` is labelled for what it is."""

from pathlib import Path
from typing import Any, Dict, Optional, Sequence

import srsly

from .licenses import Part, hub_license, licenses_md


def write_model_card(
    out: Path,
    title: str,
    body: str,
    *,
    licenses: Sequence[Part],
    tags: Sequence[str] = (),
    base_model: Optional[str] = None,
) -> Path:
    """README.md: the metadata header (the licence of every part, licenses.py), then
    ``# title``, the body (markdown) and the "Licences" section."""
    meta: Dict[str, Any] = {**hub_license(licenses), "library_name": "transformers", "tags": ["spacy-entangle", *tags]}
    if base_model:
        meta["base_model"] = base_model
    path = Path(out) / "README.md"
    path.write_text(
        f"---\n{srsly.yaml_dumps(meta).strip()}\n---\n\n# {title}\n\n{body}\n\n{licenses_md(licenses)}\n",
        encoding="utf8",
    )
    return path
