"""Outputs of `annotate`: one file per shard (JSONL or DocBin), written atomically, and a
manifest that records each finished shard, so a re-run with the same arguments skips them.

A shard counts as finished only once its entry is in the manifest and its file is there with
the recorded size: a run killed between writing a shard and recording it redoes that shard
(the atomic rename replaces the file), so every doc is written exactly once.
"""

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc, DocBin, Span, SpanGroup

from ..converters.io import write_bytes_atomic
from .readers import ShardSpec

MANIFEST = "manifest.json"
ERRORS = "errors.jsonl"
TOOL = "spacy-entangle annotate"
SUFFIXES = {"jsonl": ".jsonl", "spacy": ".spacy"}


def doc_to_json(doc: Doc, id_: Any) -> Dict[str, Any]:
    """id, text, entities as character offsets + label (+ score where a span group scores
    exactly doc.ents: `scored_ner`'s ``doc.spans["ents"]``); tags, cats and every span group
    (``"spans"``: key -> spans, each with its score where the group has ``attrs["scores"]``)
    when the pipeline sets them. What the pipeline produced, not a subset of it."""
    ents = list(doc.ents)
    out: Dict[str, Any] = {"id": id_, "text": doc.text, "entities": _spans_json(ents, _entity_scores(doc, ents))}
    if doc.has_annotation("TAG"):
        out["tags"] = [{"start": t.idx, "end": t.idx + len(t), "tag": t.tag_} for t in doc]
    if doc.cats:
        out["cats"] = doc.cats
    if doc.spans:
        out["spans"] = {key: _spans_json(list(group), _scores(group)) for key, group in doc.spans.items()}
    return out


def _scores(group: SpanGroup) -> Optional[List[float]]:
    """One score per span of the group (``attrs["scores"]``, as spancat and scored_ner set it), or None."""
    scores = group.attrs.get("scores")
    if scores is None:
        return None
    values = [float(score) for score in numpy.asarray(scores, dtype="float64").reshape(-1)]
    return values if len(values) == len(group) else None


def _entity_scores(doc: Doc, ents: List[Span]) -> Optional[List[float]]:
    """The scores of the span group that holds exactly doc.ents, in order (None: no such group)."""
    wanted = [(e.start, e.end, e.label) for e in ents]
    for group in doc.spans.values():
        if [(s.start, s.end, s.label) for s in group] == wanted:
            scores = _scores(group)
            if scores is not None:
                return scores
    return None


def _spans_json(spans: List[Span], scores: Optional[List[float]]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = [{"start": s.start_char, "end": s.end_char, "label": s.label_} for s in spans]
    if scores is not None:
        for span, score in zip(out, scores):
            span["score"] = score
    return out


def dumps_line(obj: Any) -> str:
    """One compact JSON line, non-ASCII kept as is (the same bytes from every engine)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def shard_bytes(docs: Sequence[Tuple[Any, Doc]], fmt: str) -> bytes:
    """The shard file's content: JSON lines, or a DocBin with each id in `doc.user_data["id"]`."""
    if fmt == "jsonl":
        return "".join(dumps_line(doc_to_json(doc, id_)) for id_, doc in docs).encode("utf8")
    docbin = DocBin(store_user_data=True)
    for id_, doc in docs:
        doc.user_data["id"] = id_
        docbin.add(doc)
    return docbin.to_bytes()


def write_shard(
    output_dir: Path,
    spec: ShardSpec,
    fmt: str,
    docs: Sequence[Tuple[Any, Doc]],
    errors: List[Dict[str, Any]],
    docs_in: int,
) -> Dict[str, Any]:
    """Write one shard atomically; returns its manifest entry."""
    data = shard_bytes(docs, fmt)
    file_name = spec.name + SUFFIXES[fmt]
    write_bytes_atomic(data, Path(output_dir) / file_name)
    return {
        "name": spec.name,
        "file": file_name,
        "source": spec.path,
        "start": spec.start,
        "size": spec.size,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "docs_in": docs_in,
        "docs_out": len(docs),
        "errors": errors,
    }


class Manifest:
    """`manifest.json` in the output folder: the run's arguments and every finished shard."""

    def __init__(self, output_dir: Path, run: Dict[str, Any], shards: Dict[str, Dict[str, Any]]):
        self.output_dir = Path(output_dir)
        self.run = run
        self.shards = shards

    @classmethod
    def open(cls, output_dir: Path, run: Dict[str, Any]) -> "Manifest":
        """The folder's manifest, or a new one; a manifest of other arguments is an error
        (resuming it would mix two runs' shards)."""
        path = Path(output_dir) / MANIFEST
        if not path.exists():
            return cls(output_dir, run, {})
        try:
            data = json.loads(path.read_text(encoding="utf8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not a readable manifest ({e}); use another output folder") from None
        if not isinstance(data, dict) or data.get("tool") != TOOL:
            raise ValueError(f"{path}: not a manifest of `{TOOL}`; use another output folder")
        if data.get("run") != run:
            changed = sorted(k for k in set(run) | set(data.get("run", {})) if run.get(k) != data["run"].get(k))
            raise ValueError(
                f"{output_dir} holds a run with other arguments or changed inputs ({', '.join(changed)}): "
                "re-run with the same ones to resume, or use another output folder"
            )
        return cls(output_dir, run, dict(data.get("shards", {})))

    def is_done(self, spec: ShardSpec) -> bool:
        """Recorded, and its file is there with the recorded size."""
        entry = self.shards.get(spec.name)
        if entry is None:
            return False
        path = self.output_dir / entry["file"]
        return path.is_file() and path.stat().st_size == entry["bytes"]

    def record(self, entry: Dict[str, Any]) -> None:
        """Mark one shard finished (the manifest is rewritten atomically each time)."""
        self.shards[entry["name"]] = entry
        self.save()

    def save(self) -> None:
        data = {"tool": TOOL, "run": self.run, "shards": self.shards}
        write_bytes_atomic(json.dumps(data, ensure_ascii=False, indent=1).encode("utf8"), self.output_dir / MANIFEST)

    def finish(self, specs: Iterable[ShardSpec]) -> Tuple[int, int, int]:
        """Write `errors.jsonl` (all shards' errors in input order); returns (docs in, docs out, errors)."""
        entries = [self.shards[spec.name] for spec in specs if spec.name in self.shards]
        errors = [err for entry in entries for err in entry["errors"]]
        write_bytes_atomic("".join(dumps_line(err) for err in errors).encode("utf8"), self.output_dir / ERRORS)
        self.save()
        return sum(e["docs_in"] for e in entries), sum(e["docs_out"] for e in entries), len(errors)


def remove_stale_temp_files(output_dir: Path, specs: Iterable[ShardSpec]) -> None:
    """Temp files a killed run left behind (`.NAME.SUFFIX.PID.HEX.tmp`, ours only)."""
    prefixes = tuple(f".{name}." for name in (MANIFEST, ERRORS))
    names = {spec.name for spec in specs}
    for path in Path(output_dir).glob(".*.tmp"):
        if path.name[1:].split(".", 1)[0] in names or path.name.startswith(prefixes):
            path.unlink()
