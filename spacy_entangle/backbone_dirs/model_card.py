"""Model cards (README.md) of the backbone directories spacy-entangle writes, with the
Hugging Face metadata header (the YAML block the hub reads: licence, library, tags), so a
directory pushed with `huggingface-cli upload` is labelled for what it is."""

from pathlib import Path
from typing import Optional, Sequence

import srsly


def write_model_card(
    out: Path,
    title: str,
    body: str,
    *,
    license: str = "mit",
    tags: Sequence[str] = (),
    base_model: Optional[str] = None,
) -> Path:
    """README.md: the metadata header, then ``# title`` and the body (markdown)."""
    meta = {"license": license, "library_name": "transformers", "tags": ["spacy-entangle", *tags]}
    if base_model:
        meta["base_model"] = base_model
    path = Path(out) / "README.md"
    path.write_text(f"---\n{srsly.yaml_dumps(meta).strip()}\n---\n\n# {title}\n\n{body}\n", encoding="utf8")
    return path
