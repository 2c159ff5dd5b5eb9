"""Inputs of `annotate`: expand files, globs and folders, cut them into shards, read a shard.

A shard is a fixed range of lines (``.txt``, ``.jsonl``) or rows (``.parquet``) of one file,
so the same inputs always give the same shards: that is what makes a re-run resumable and the
local and Ray engines write the same files. Reading never raises on bad input: an undecodable
line, bad JSON or a missing text becomes an `InputError` with its source and reason.
"""

import glob
import hashlib
import json
from dataclasses import asdict, dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

FORMATS = {".txt": "txt", ".jsonl": "jsonl", ".parquet": "parquet"}
GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class Record:
    """One doc to annotate: `pos` is its 0-based index in the shard's range."""

    pos: int
    id: Any
    text: str


@dataclass(frozen=True)
class InputError:
    """One input line or row that is not a doc, and why."""

    pos: int
    source: str
    line: int
    reason: str

    def to_json(self) -> Dict[str, Any]:
        return {"source": self.source, "line": self.line, "reason": self.reason}


@dataclass(frozen=True)
class ShardSpec:
    """Lines (or rows) [start, start + size) of one input file; byte offsets for text files."""

    name: str
    path: str  # as given: ids and error reports name it
    file: str  # absolute: what workers open
    format: str
    start: int
    size: int
    byte_start: int = 0
    byte_end: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def expand_inputs(inputs: Sequence[Union[str, Path]], exclude: Optional[Path] = None) -> List[Path]:
    """Files, globs and folders (searched recursively for .txt/.jsonl/.parquet) -> files,
    sorted per input, without duplicates, leaving out anything under `exclude` (the output)."""
    exclude = Path(exclude).resolve() if exclude is not None else None
    files: List[Path] = []
    seen = set()
    for item in inputs:
        text = str(item)
        if GLOB_CHARS & set(text):
            found = [Path(p) for p in sorted(glob.glob(text, recursive=True)) if Path(p).is_file()]
            found = [p for p in found if p.suffix in FORMATS]
        elif Path(text).is_dir():
            found = sorted(p for p in Path(text).rglob("*") if p.is_file() and p.suffix in FORMATS)
        elif Path(text).is_file():
            if Path(text).suffix not in FORMATS:
                raise ValueError(f"input {text}: unsupported file type (use {', '.join(FORMATS)})")
            found = [Path(text)]
        else:
            raise ValueError(f"input {text}: no such file or folder")
        if not found:
            raise ValueError(f"input {text}: matches no .txt, .jsonl or .parquet file")
        for path in found:
            resolved = path.resolve()
            if resolved in seen or (exclude is not None and exclude in resolved.parents):
                continue
            seen.add(resolved)
            files.append(path)
    return files


def plan_shards(files: Sequence[Path], shard_size: int) -> List[ShardSpec]:
    """Cut every file into shards of `shard_size` lines or rows (the last may be shorter)."""
    if shard_size < 1:
        raise ValueError(f"--shard-size must be >= 1, got {shard_size}")
    specs: List[ShardSpec] = []
    for path in files:
        fmt = FORMATS[path.suffix]
        if fmt == "parquet":
            n = _parquet_rows(path)
            bounds = [(start, min(shard_size, n - start), 0, 0) for start in range(0, n, shard_size)]
        else:
            bounds = _line_bounds(path, shard_size)
        prefix = _shard_prefix(path)
        for k, (start, size, byte_start, byte_end) in enumerate(bounds):
            specs.append(
                ShardSpec(f"{prefix}-{k:05d}", str(path), str(path.resolve()), fmt, start, size, byte_start, byte_end)
            )
    return specs


def _shard_prefix(path: Path) -> str:
    """The file's stem plus a digest of its absolute path: unique and stable between runs."""
    digest = hashlib.sha1(str(path.resolve()).encode("utf8")).hexdigest()[:8]
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in path.stem)[:40]
    return f"{stem}-{digest}"


def _line_bounds(path: Path, shard_size: int) -> List[tuple]:
    """(first line, n lines, first byte, end byte) of each shard of a text file, in one pass."""
    bounds = []
    start = byte_start = offset = n = 0
    with open(path, "rb") as f:
        for line in f:
            offset += len(line)
            n += 1
            if n - start == shard_size:
                bounds.append((start, shard_size, byte_start, offset))
                start, byte_start = n, offset
    if n > start:
        bounds.append((start, n - start, byte_start, offset))
    return bounds


def _parquet_rows(path: Path) -> int:
    pq = _import_parquet(path)
    return pq.ParquetFile(path).metadata.num_rows


def _import_parquet(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"input {path}: reading .parquet needs pyarrow (pip install spacy-entangle[ray])") from None
    return pq


def read_shard(spec: ShardSpec, text_key: str = "text") -> Iterator[Union[Record, InputError]]:
    """The docs (and the bad lines) of one shard, in input order."""
    if spec.format == "parquet":
        yield from _read_parquet(spec, text_key)
        return
    with open(spec.file, "rb") as f:
        f.seek(spec.byte_start)
        data = f.read(spec.byte_end - spec.byte_start)
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the file's last line end
    for pos, raw in enumerate(lines[: spec.size]):
        line = spec.start + pos + 1
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        try:
            text = raw.decode("utf8")
        except UnicodeDecodeError as e:
            yield InputError(pos, spec.path, line, f"not UTF-8: {e}")
            continue
        if not text.strip():
            continue  # a blank line is no doc
        if spec.format == "txt":
            yield Record(pos, f"{spec.path}:{line}", text)
        else:
            yield _jsonl_record(spec, pos, line, text, text_key)


def _jsonl_record(spec: ShardSpec, pos: int, line: int, text: str, text_key: str) -> Union[Record, InputError]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return InputError(pos, spec.path, line, f"not JSON: {e}")
    if not isinstance(obj, dict):
        return InputError(pos, spec.path, line, f"not a JSON object: {type(obj).__name__}")
    return _make_record(spec, pos, line, obj.get(text_key), obj.get("id"), text_key)


def _make_record(spec: ShardSpec, pos: int, line: int, text: Any, id_: Any, text_key: str) -> Union[Record, InputError]:
    if text is None:
        return InputError(pos, spec.path, line, f"no text under key {text_key!r}")
    if not isinstance(text, str):
        return InputError(
            pos, spec.path, line, f"text under key {text_key!r} is not a string but {type(text).__name__}"
        )
    return Record(pos, f"{spec.path}:{line}" if id_ is None else id_, text)


def _read_parquet(spec: ShardSpec, text_key: str) -> Iterator[Union[Record, InputError]]:
    """Rows [start, start + size), reading only the row groups that hold them."""
    pq = _import_parquet(Path(spec.path))
    pf = pq.ParquetFile(spec.file)
    names = pf.schema_arrow.names
    if text_key not in names:
        for pos in range(spec.size):
            yield InputError(
                pos, spec.path, spec.start + pos + 1, f"no column {text_key!r} (columns: {', '.join(names)})"
            )
        return
    columns = [text_key] + (["id"] if "id" in names and text_key != "id" else [])
    meta = pf.metadata
    starts = list(accumulate((meta.row_group(g).num_rows for g in range(meta.num_row_groups)), initial=0))
    end = spec.start + spec.size
    groups = [g for g in range(meta.num_row_groups) if starts[g] < end and starts[g + 1] > spec.start]
    offset = starts[groups[0]] if groups else 0
    table = pf.read_row_groups(groups, columns=columns).slice(spec.start - offset, spec.size)
    texts = table.column(text_key).to_pylist()
    ids = table.column("id").to_pylist() if "id" in columns else [None] * len(texts)
    for pos, (text, id_) in enumerate(zip(texts, ids)):
        yield _make_record(spec, pos, spec.start + pos + 1, text, id_, text_key)
