"""The exported graphs of one model's weights, per inference mode, kept so that an export
runs once: the engine adds each graph it exports, the shim saves them with the pipeline's
files (``onnx/MODE/``, beside the weights) and reads them back on load, and a pickled or
copied pipeline carries them, so a worker process rebuilds its sessions instead of
exporting again.

A mode's graphs are used only for the weights they were exported from (the weights' sha256,
in the mode's manifest) and the engine settings that shaped them (``settings``: the format
below and the mode's own, e.g. onnx-int8's smoothing): anything else exports again. ``reason``
says why a mode has no graphs, for the one line the shim logs when it exports.

A part whose export failed is recorded too (``FailedExport``), with the torch version that
tried: loaded with the same torch, the part runs in PyTorch at once, with one warning, instead
of failing the same export on every load; another torch (whose exporters may take it), other
weights or other settings try again."""

import hashlib
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import srsly

# what the engine modes need installed (the `onnx` extra), named in their errors and warnings
ENGINE_INSTALL = "pip install 'spacy-entangle[onnx]'"
GRAPH_DIR = "onnx"  # the files' folder inside the saved model's files
MANIFEST = "manifest.json"
# how the engine makes and names its graphs: a change that makes saved graphs wrong bumps it
FORMAT = 1
NONE_SAVED = "the pipeline was saved without them"


@dataclass
class SavedGraph:
    """One graph as exported (ONNX bytes, quantized in int8), with what the engine records of
    its making: whether it was exported from the smoothed encoder, and the graph nodes int8
    left in float."""

    data: bytes
    smoothed: bool = False
    kept_float: Tuple[str, ...] = ()


@dataclass
class FailedExport:
    """Why a part did not export (the exporters' errors), and the torch version that tried."""

    reason: str
    torch: str


@dataclass
class ModeGraphs:
    """One mode's graphs (by ``PART/KEY``: the part's name and the way it is called), the
    parts that did not export, and the settings they were made with."""

    settings: Dict[str, Any]
    graphs: Dict[str, SavedGraph] = field(default_factory=dict)
    failed: Dict[str, FailedExport] = field(default_factory=dict)


class GraphStore:
    """Every mode's graphs for the weights as they are now; the shim replaces it when the
    weights change."""

    def __init__(self, reason: str = NONE_SAVED):
        self.modes: Dict[str, ModeGraphs] = {}
        self.reason = reason

    def for_mode(self, mode: str, settings: Dict[str, Any]) -> ModeGraphs:
        """The graphs of ``mode`` made with ``settings`` (an empty set to fill when the held
        ones were made with other settings)."""
        held = self.modes.get(mode)
        settings = {"format": FORMAT, **settings}
        if held is None or held.settings != settings:
            if held is not None and held.graphs:
                self.reason = "the saved ones were made with other engine settings"
            held = self.modes[mode] = ModeGraphs(settings)
        return held

    def names(self) -> List[str]:
        """``MODE:PART/KEY`` of every graph held."""
        return [f"{mode}:{name}" for mode, held in self.modes.items() for name in held.graphs]

    def to_files(self, weights_sha256: str) -> Dict[str, bytes]:
        """The graphs as named files, each mode's manifest naming the weights they belong to."""
        files: Dict[str, bytes] = {}
        for mode, held in self.modes.items():
            if not held.graphs and not held.failed:
                continue
            folder = f"{GRAPH_DIR}/{mode}"
            entries = {}
            for name, graph in sorted(held.graphs.items()):
                file_name = name.replace("/", ".") + ".onnx"
                files[f"{folder}/{file_name}"] = graph.data
                entries[name] = {
                    "file": file_name,
                    "sha256": hashlib.sha256(graph.data).hexdigest(),
                    "smoothed": graph.smoothed,
                    "kept_float": list(graph.kept_float),
                }
            failed = {name: {"reason": f.reason, "torch": f.torch} for name, f in sorted(held.failed.items())}
            manifest = {
                "weights_sha256": weights_sha256,
                "settings": held.settings,
                "graphs": entries,
                "failed": failed,
            }
            files[f"{folder}/{MANIFEST}"] = srsly.json_dumps(manifest, indent=2).encode("utf8")
        return files

    @classmethod
    def from_files(
        cls, files: Dict[str, bytes], weights_sha256: str, sha256s: Optional[Dict[str, str]] = None
    ) -> "GraphStore":
        """The saved graphs that belong to these weights (the others are left out, and the
        reason kept). A manifest that cannot be read or a graph that does not match its
        sha256 counts as not saved: the engine exports again rather than fail the load.
        ``sha256s``: the files' digests already computed by the caller (a graph is large:
        hashed once per load)."""
        store = cls()
        prefix = f"{GRAPH_DIR}/"
        manifests = sorted(n for n in files if n.startswith(prefix) and n.endswith(f"/{MANIFEST}"))
        for path in manifests:
            mode = path[len(prefix) : -len(MANIFEST) - 1]
            held = _read_manifest(files, path, weights_sha256, sha256s or {})
            if isinstance(held, str):
                store.reason = held
                continue
            store.modes[mode] = held
        return store


def _read_manifest(
    files: Dict[str, bytes], path: str, weights_sha256: str, sha256s: Dict[str, str]
) -> Union[ModeGraphs, str]:
    """One mode's graphs, or why they are not used."""
    try:
        manifest = srsly.json_loads(files[path].decode("utf8"))
        if manifest["weights_sha256"] != weights_sha256:
            return "the saved ones were exported from other weights"
        held = ModeGraphs(dict(manifest["settings"]))
        folder = path.rsplit("/", 1)[0]
        for name, entry in manifest["graphs"].items():
            stored = f"{folder}/{entry['file']}"
            data: Optional[bytes] = files.get(stored)
            if data is None or (sha256s.get(stored) or hashlib.sha256(data).hexdigest()) != entry["sha256"]:
                return f"the saved {name} graph is missing or damaged"
            held.graphs[name] = SavedGraph(data, bool(entry.get("smoothed")), tuple(entry.get("kept_float", ())))
        for name, entry in manifest.get("failed", {}).items():
            held.failed[name] = FailedExport(str(entry["reason"]), str(entry["torch"]))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        return f"{path} cannot be read ({type(err).__name__}: {err})"
    return held


@dataclass
class ExportReport:
    """What one thread's prediction exported (``export_report``): graph names and seconds."""

    exported: List[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: Optional[str] = None  # why a saved graph was not used, when one was not


_reports = threading.local()  # per thread: the report a prediction collects (None: none)


@contextmanager
def export_report() -> Iterator[ExportReport]:
    """Collect the exports the engine runs in this thread inside the block (the shim logs
    them in one line after the prediction)."""
    report = ExportReport()
    previous = getattr(_reports, "current", None)
    _reports.current = report
    try:
        yield report
    finally:
        _reports.current = previous


def current_report() -> Optional[ExportReport]:
    """The report of the ``export_report`` block this thread is in (None: none)."""
    return getattr(_reports, "current", None)
