"""ONNX Runtime for CPU prediction (``inference = "onnx"`` / ``"onnx-int8"``).

The engine is a copy of the trained ``EntangleEncoder`` (sharing its tensors) in which
whole submodules are replaced by ONNX Runtime sessions: the subword encoder, the char
encoder's Hugging Face parts (a grown encoder's copied layers; the whole encoder when it
has none, unless no exporter keeps its length dynamic, as with CANINE: ``LENGTH_SPECIALISED``)
and, in int8, each co-attention module (in fp32 torch's fused attention fast path runs
those faster). What stays outside the graphs (a grown encoder's word segmentation, a rule
over codepoints, and its small character front end) runs in PyTorch, so the engine does
not depend on how those are written. A part that does not export runs in PyTorch too,
with a warning naming it; the failure is saved with the graphs, so a load under the same
torch runs that part in PyTorch at once instead of failing the same export again.

Graphs are exported from the loaded weights when a part is first called (batch and length
axes dynamic; each graph is run once at other sizes against PyTorch before it is used), once:
each is added to the ``ModeGraphs`` the engine is given (engines/graphs.py), which the shim
saves with the pipeline and reads back on load (a saved graph is used instead of an export;
one that cannot run here is exported again). An export changes no process-wide state (no
stdout redirection, no global logging or torch switch: what the exporters print or log is
left as it is) and runs under a lock: torch's exporters are not thread-safe. Sessions follow
torch's thread count at prediction time and are rebuilt in a forked child and on unpickling
(``_Graph``).

``onnx-int8``: ONNX Runtime's dynamic int8 quantization (per-channel int8 weights,
activations quantized on the fly) of every graph but those under ``keep_float``, the
subword encoder's exported smoothed when a calibration text is given, which is off by
default (modeling/smoothing.py: its feed-forward outputs' few wide channels no longer set
every channel's int8 step); the PyTorch parts left run their Linear layers in torch's
dynamic int8 (those not under ``keep_float``). A prediction that keeps only the listeners' rows passes them to the last
co-attention modules' graphs, as to the PyTorch modules. Unlike ``int8`` it quantizes the
subword encoder and the copied layers too (that is where its speed comes from): the
fast mode, whose F1 cost a trained pipeline measures (research/benchmarks/int8_accuracy.py).
"""

import base64
import copy
import ctypes
import functools
import importlib
import itertools
import os
import re
import tempfile
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from ..quantization import quantize_linears
from ..smoothing import smooth_encoder, smoothable
from .graphs import ENGINE_INSTALL, ExportReport, FailedExport, ModeGraphs, SavedGraph, current_report
from .traceable import traceable

if TYPE_CHECKING:
    from ..entangle import EntangleEncoder

ONNX_INSTALL = ENGINE_INSTALL
REQUIRED = ("onnxruntime", "onnx", "onnxscript")  # the runtime, and what the exporter needs
# example sizes of the export: > 1 (torch.export specialises sizes 0 and 1) and unequal
EXAMPLE_SIZES = {"batch": 2, "length": 7, "other_length": 9, "rows": 4}
Dims = Tuple[Optional[str], ...]  # per axis of an input: its dynamic name, or None (static)
# input ids (B, L) and attention mask (B, L) of a fixed calibration text, and the smoothing alpha
Calibration = Tuple[torch.Tensor, torch.Tensor, float]
EXPORTERS = ("torchscript", "dynamo")  # tried in this order (_write_graph)
# encoders whose graph every exporter fixes to the example's length, and why: the engine
# leaves them in PyTorch (torch's dynamic int8 of their Linear layers in onnx-int8) rather
# than export, fail the check and warn on every load
LENGTH_SPECIALISED = {
    "canine": "its local attention loops over the characters in Python, so every exporter "
    "fixes the graph to one length",
}
# torch's exporters share module-level state (torch.export's tracing, the ONNX registries):
# one export at a time in the process, whichever pipeline or thread asks
_EXPORT_LOCK = threading.RLock()
# ONNX Runtime's CPU memory arena: off, it kept the largest chunk's activations for the rest of
# the process; what-ifs turn it on (research/benchmarks/engine_memory.py --arena, speed_compare.py
# --what-if-arena): a graph keeps the setting it was made with
CPU_MEM_ARENA = False
_SESSION_LOCK = threading.Lock()
_GRAPHS: "weakref.WeakSet[_Graph]" = weakref.WeakSet()  # every graph of the process (_inherit_sessions)


def require_onnxruntime(mode: str, names: Sequence[str] = REQUIRED) -> None:
    """A clear error naming the extra when the engine's packages (``names``) are not installed
    (the component never gets here without onnxruntime: it predicts in fp32 with a warning,
    modeling/inference.py)."""
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ModuleNotFoundError(
            f"inference = {mode!r} needs {', '.join(missing)}, which is not installed: {ONNX_INSTALL}",
            name=missing[0],
        )


def onnx_model(
    model: nn.Module,
    *,
    int8: bool,
    keep_float: Sequence[str] = (),
    keep_float_nodes: Sequence[str] = (),
    calibration: Optional[Calibration] = None,
    graphs: Optional[ModeGraphs] = None,
    mode: Optional[str] = None,
) -> nn.Module:
    """A copy of ``model`` (an ``EntangleEncoder``, eval mode, tensors shared) whose encoders
    (and, with int8, co-attention modules) run in ONNX Runtime. int8: quantize the graphs of
    the parts whose names do not start with ``keep_float``, except their MatMul / Gemm nodes
    whose part-qualified names (``PART/NODE``, e.g.
    ``char_encoder.words/encoder/encoder/layer.0/output/dense/MatMul``) match a regular
    expression of ``keep_float_nodes`` (``re.search``): a what-if finer than a whole part.
    ``calibration``: subword ids and mask of a fixed text and the smoothing alpha; int8 then
    exports the subword encoder smoothed (modeling/smoothing.py) when it has BERT-style layers.
    ``graphs``: the graphs saved for these weights and settings, used instead of exporting; the
    engine adds the ones it exports (None: its own, not kept). Saved graphs need onnxruntime
    alone; a part whose export fails (e.g. without onnx / onnxscript) runs in PyTorch.
    ``mode``: the inference mode the messages name (default: onnx-int8 or onnx, by ``int8``)."""
    mode = mode or ("onnx-int8" if int8 else "onnx")
    require_onnxruntime(mode, ("onnxruntime",))
    store = graphs if graphs is not None else ModeGraphs({})
    if any(p.device.type != "cpu" for p in model.parameters()):
        raise ValueError("the ONNX Runtime engine runs on the CPU only; on a GPU use inference = 'bf16' or 'fp32'")
    shared = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    engine = cast("EntangleEncoder", copy.deepcopy(model, memo=shared).eval())
    engine.keep_attention(False)  # the graphs return states only (no attention maps)
    keep = tuple(keep_float)

    def quantized(name: str) -> bool:
        return int8 and not f"{name}.".startswith(keep)

    def part(cls: Any, module: nn.Module, name: str, *args: Any) -> "_Part":
        return cast(_Part, cls(module, name, *args, quantized(name), float_nodes=keep_float_nodes, store=store))

    engine.subword_encoder = part(OnnxEncoder, engine.subword_encoder, "subword_encoder")
    if int8 and calibration is not None and quantized("subword_encoder"):
        engine.subword_encoder.calibration = calibration
    char = engine.char_encoder
    parts = [(n, c) for n, c in char.named_children() if isinstance(c, PreTrainedModel)]
    for name, child in parts:  # a grown encoder's copied layers: called with inputs_embeds
        full = f"char_encoder.{name}"
        setattr(char, name, part(OnnxEncoder, child, full))
    why = LENGTH_SPECIALISED.get(_model_type(char) or "")
    if not parts and why is not None:
        # no exporter keeps its length dynamic: the export would fail on every load
        warnings.warn(
            f"the char encoder ({_model_type(char)}) runs in PyTorch under inference = {mode!r}: {why}",
            UserWarning,
            stacklevel=2,
        )
    elif not parts:  # any other encoder without Hugging Face parts: the whole encoder, called with ids
        engine.char_encoder = part(OnnxEncoder, char, "char_encoder")
    if not int8:  # in fp32, torch's fused attention fast path runs them faster than ONNX Runtime
        return engine
    cross: Dims = ("batch", "length")
    dims: List[Dims] = [
        ("batch", "length", None),
        cross,
        ("batch", "other_length", None),
        ("batch", "other_length"),
        ("batch", "rows"),  # the rows a prediction keeps (the last module): a graph of its own
    ]
    for side in ("sub_layers", "char_layers"):
        layers = getattr(engine, side)
        for i, layer in enumerate(layers):
            layers[i] = part(OnnxModule, layer, f"{side}.{i}", dims)
    # the PyTorch parts left (a grown encoder's front end): torch's dynamic int8 of their Linear
    # layers (en_entangle_wnut: 1.06x the words/s with them in float, on an AMX Xeon)
    return quantize_linears(engine, keep)


def _model_type(module: nn.Module) -> Optional[str]:
    """The Hugging Face ``model_type`` of ``module`` (None: not a Hugging Face model)."""
    return getattr(getattr(module, "config", None), "model_type", None)


class _Graph:
    """One graph's bytes and its ONNX Runtime session, called with tensors (returns its first
    output). The session is made for the process and the thread count it runs with: made
    again when torch's thread count changes (the user's setting at prediction time, not the
    one at export) and in a forked child (ONNX Runtime's thread pool does not survive a
    fork). Pickled and copied as its bytes: a copy, or a spawned worker, makes its own."""

    def __init__(self, data: bytes, arena: Optional[bool] = None):
        self.data = data
        self.arena = CPU_MEM_ARENA if arena is None else arena
        self._session: Any = None
        self._made_for: Optional[Tuple[int, int]] = None  # (process id, intra-op threads)
        self._inputs: List[str] = []
        _GRAPHS.add(self)

    def __getstate__(self) -> Dict[str, Any]:
        return {"data": self.data, "arena": self.arena}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["data"], state.get("arena"))  # type: ignore[misc]

    @property
    def session(self) -> Any:
        """The session for this process and torch's thread count now."""
        made_for = (os.getpid(), torch.get_num_threads())
        if self._made_for != made_for:
            with _SESSION_LOCK:
                if self._made_for != made_for:
                    session = _session(self.data, made_for[1], self.arena)
                    self._inputs = [i.name for i in session.get_inputs()]  # unused inputs are pruned
                    self._session, self._made_for = session, made_for
        return self._session

    def __call__(self, names: Sequence[str], tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        session = self.session
        feeds = {n: t.detach().cpu().contiguous().numpy() for n, t in zip(names, tensors) if n in self._inputs}
        return torch.from_numpy(session.run(None, feeds)[0])


def _inherit_sessions() -> None:
    """In a forked child: the sessions the parent made are never freed here (a session's
    destructor joins its thread pool, whose threads this process does not have); each graph
    makes its own on its next call."""
    for graph in list(_GRAPHS):
        if graph._session is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(graph._session))


if hasattr(os, "register_at_fork"):  # not on Windows (no fork)
    os.register_at_fork(after_in_child=_inherit_sessions)


class _Part(nn.Module):
    """A submodule replaced by a graph: a saved one (``store``), else exported on its first
    call (falls back to PyTorch, with a warning, when it does not export). The original
    module is held outside the module tree: the copy has no parameters of its own for
    quantization to touch."""

    exporters: Tuple[str, ...] = EXPORTERS

    def __init__(
        self,
        module: nn.Module,
        name: str,
        int8: bool,
        float_nodes: Sequence[str] = (),
        store: Optional[ModeGraphs] = None,
    ):
        super().__init__()
        self._torch = [module]
        self.part_name = name
        self.int8 = int8
        self.float_nodes = tuple(float_nodes)  # regexes of PART/NODE names int8 leaves in float
        self.kept_float: List[str] = []  # the nodes they matched, once exported
        self._graphs: Dict[str, Optional[_Graph]] = {}
        self.store = store if store is not None else ModeGraphs({})
        self._smoothed_keys: List[str] = []

    def _graph(
        self,
        key: str,
        exported: Callable[[], nn.Module],
        names: Sequence[str],
        like: Sequence[torch.Tensor],
        dims: Sequence[Dims],
    ) -> Optional[_Graph]:
        """The graph of ``key``: the saved one, else exported from ``exported()`` (once, under
        the process's export lock), or None (the part runs in PyTorch: its export failed, now
        or, with this torch, when the graphs were made)."""
        if key not in self._graphs:
            with _EXPORT_LOCK:
                if key not in self._graphs:
                    graph = self._saved(key)
                    if graph is None and not self._failed_before(key):
                        graph = self._exported_graph(key, exported, names, like, dims)
                    self._graphs[key] = graph
        return self._graphs[key]

    def _failed_before(self, key: str) -> bool:
        """Whether ``key``'s export failed when these graphs were made, with this torch (then
        one warning says so); a failure under another torch is forgotten and tried again."""
        name = f"{self.part_name}/{key}"
        failed = self.store.failed.get(name)
        if failed is None:
            return False
        if failed.torch != torch.__version__:
            del self.store.failed[name]
            return False
        warnings.warn(
            f"{self.part_name} runs in PyTorch (fp32): its ONNX export failed when this pipeline's "
            f"graphs were made, with this torch ({failed.reason}). Set inference = 'fp32' to predict "
            "without the ONNX engine.",
            UserWarning,
            stacklevel=5,
        )
        return True

    def _saved(self, key: str) -> Optional[_Graph]:
        """The saved graph of ``key``, its session made here (None: none saved, or one that
        cannot run here, which is then exported again)."""
        store = self.store
        saved = store.graphs.get(f"{self.part_name}/{key}")
        if saved is None:
            return None
        graph = _Graph(saved.data)
        try:
            graph.session  # noqa: B018 - made now: a graph this onnxruntime cannot run is exported again
        except Exception as err:  # noqa: BLE001 - any failure to load it means: export it again
            del store.graphs[f"{self.part_name}/{key}"]
            report: Optional[ExportReport] = current_report()
            if report is not None:
                report.reason = f"the saved {self.part_name} graph cannot run here ({type(err).__name__})"
            return None
        if saved.smoothed:
            self._smoothed_keys.append(key)
        self.kept_float.extend(n for n in saved.kept_float if n not in self.kept_float)
        return graph

    def _exported_graph(
        self,
        key: str,
        exported: Callable[[], nn.Module],
        names: Sequence[str],
        like: Sequence[torch.Tensor],
        dims: Sequence[Dims],
    ) -> Optional[_Graph]:
        """``key``'s graph exported now and added to the store (None when it does not export)."""
        start = time.perf_counter()
        try:
            float_nodes = self._float_node if self.float_nodes else None
            module = exported()
            graph = _export(module, names, like, dims, self.int8, self.exporters, float_nodes)
        except Exception as err:  # noqa: BLE001 - export is best effort: the part still runs, in PyTorch
            warnings.warn(
                f"ONNX export of {self.part_name} failed ({type(err).__name__}: {err}); it runs in PyTorch "
                "(fp32). Set inference = 'fp32' to predict without the ONNX engine.",
                UserWarning,
                stacklevel=4,
            )
            if not isinstance(err, ExportFailed) or not err.missing_package:
                # saved with the graphs: the same export is not failed again on every load
                self.store.failed[f"{self.part_name}/{key}"] = FailedExport(
                    f"{type(err).__name__}: {err}"[:500], torch.__version__
                )
            return None
        name = f"{self.part_name}/{key}"
        smoothed = key in self._smoothed_keys
        self.store.graphs[name] = SavedGraph(graph.data, smoothed, tuple(self.kept_float))
        report: Optional[ExportReport] = current_report()
        if report is not None:
            report.exported.append(name)
            report.seconds += time.perf_counter() - start
        return graph

    def _float_node(self, node: str) -> bool:
        """Whether int8 leaves the graph's node ``node`` in float (and records it)."""
        qualified = f"{self.part_name}/{node.lstrip('/')}"
        keep = any(re.search(pattern, qualified) for pattern in self.float_nodes)
        if keep and qualified not in self.kept_float:
            self.kept_float.append(qualified)
        return keep


class OnnxEncoder(_Part):
    """Stands in for a Hugging Face encoder: called with ``input_ids`` or ``inputs_embeds``
    and ``attention_mask``, returns ``.last_hidden_state`` (one graph per way it is called)."""

    def __init__(
        self,
        encoder: nn.Module,
        name: str,
        int8: bool,
        float_nodes: Sequence[str] = (),
        store: Optional[ModeGraphs] = None,
    ):
        super().__init__(encoder, name, int8, float_nodes, store)
        self.config = getattr(encoder, "config", None)
        self.calibration: Optional[Calibration] = None  # int8: export the encoder smoothed (ids only)

    @property
    def smoothed(self) -> bool:
        """Whether a graph of this part runs, exported from the smoothed encoder."""
        return any(self._graphs.get(key) is not None for key in self._smoothed_keys)

    def _exported(self, key: str) -> nn.Module:
        """What the graph of ``key`` is exported from: the encoder, smoothed first when it is
        calibrated, called with ids and has BERT-style layers (else as it is)."""
        encoder = self._torch[0]
        if self.calibration is not None and key == "input_ids" and smoothable(encoder):
            ids, mask, alpha = self.calibration
            encoder = smooth_encoder(encoder, ids, mask, alpha)
            self._smoothed_keys.append(key)
        return _Keywords(encoder, key)

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        output_hidden_states: bool = False,
        **kwargs: Any,
    ) -> BaseModelOutput:
        key = "input_ids" if inputs_embeds is None else "inputs_embeds"
        x = input_ids if inputs_embeds is None else inputs_embeds
        if x is None:
            raise ValueError(f"{self.part_name}: called without input_ids or inputs_embeds")
        if attention_mask is None:
            attention_mask = torch.ones(x.shape[:2], dtype=torch.long, device=x.device)
        encoder = self._torch[0]
        graph = None
        if not output_hidden_states and not kwargs:
            dims = [("batch", "length") + (None,) * (x.dim() - 2), ("batch", "length")]
            graph = self._graph(key, lambda: self._exported(key), [key, "attention_mask"], [x, attention_mask], dims)
        if graph is None:  # what the graph does not return, or a part that did not export
            return encoder(
                **{key: x},
                attention_mask=attention_mask,
                output_hidden_states=output_hidden_states,
                **kwargs,
            )
        states = graph([key, "attention_mask"], [x, attention_mask]).to(x.device)
        return BaseModelOutput(last_hidden_state=cast(torch.FloatTensor, states))


class OnnxModule(_Part):
    """Stands in for a module called with positional tensors (a co-attention module, with
    or without the rows a prediction keeps: one graph per number of inputs); ``dims``:
    each possible input's axes, named where dynamic. The tracing exporter bakes
    nn.MultiheadAttention's shapes into its graph: a co-attention module is exported from its
    traceable form (engines/traceable.py: the same states, ~10x faster to export), anything
    else by torch.export only."""

    def __init__(
        self,
        module: nn.Module,
        name: str,
        dims: Sequence[Dims],
        int8: bool,
        float_nodes: Sequence[str] = (),
        store: Optional[ModeGraphs] = None,
    ):
        super().__init__(module, name, int8, float_nodes, store)
        self.dims = list(dims)
        if traceable(module) is None:
            self.exporters = ("dynamo",)

    def _export_form(self) -> nn.Module:
        """What the graphs are exported from (made at export time, from the weights then)."""
        return traceable(self._torch[0]) or self._torch[0]

    def forward(self, *inputs: Optional[torch.Tensor]) -> torch.Tensor:
        given = list(inputs)
        while given and given[-1] is None:  # an optional input not given (no rows)
            given.pop()
        tensors = cast(List[torch.Tensor], given)
        if any(t is None for t in given) or len(tensors) > len(self.dims):
            raise ValueError(f"{self.part_name}: called with {len(inputs)} inputs, at most {len(self.dims)} tensors")
        names = [f"input_{i}" for i in range(len(tensors))]
        dims = self.dims[: len(tensors)]
        graph = self._graph(f"inputs{len(tensors)}", self._export_form, names, tensors, dims)
        if graph is None:
            return self._torch[0](*tensors)
        return graph(names, tensors)


class _Keywords(nn.Module):
    """A Hugging Face encoder as a module of positional tensors (what export traces)."""

    def __init__(self, encoder: nn.Module, key: str):
        super().__init__()
        self.encoder = encoder
        self.key = key

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(**{self.key: x}, attention_mask=attention_mask).last_hidden_state


def _example(like: torch.Tensor, dims: Dims, sizes: Optional[Dict[str, int]] = None) -> torch.Tensor:
    """An input shaped as ``like`` but with the example sizes on the dynamic axes; masks get
    one padded position, so the export sees padding (values do not shape the graph)."""
    sizes = EXAMPLE_SIZES if sizes is None else sizes
    shape = [sizes[d] if d else like.shape[i] for i, d in enumerate(dims)]
    if like.dtype.is_floating_point:
        generator = torch.Generator().manual_seed(0)
        return torch.randn(shape, generator=generator, dtype=like.dtype)
    if like.dtype == torch.bool:  # True = padding
        out = torch.zeros(shape, dtype=torch.bool)
        out[-1, -1] = True
        return out
    out = torch.ones(shape, dtype=like.dtype)  # ids (1 is a valid id) or a mask (1 = real)
    out[-1, -1] = 0
    return out


class ExportFailed(RuntimeError):
    """Every exporter failed (their errors, in order). ``missing_package``: one of them lacked
    a package (onnx, onnxscript), which an install fixes: not recorded as the part's failure."""

    def __init__(self, errors: Sequence[str], missing_package: bool):
        super().__init__("; ".join(errors))
        self.missing_package = missing_package


def _export(
    module: nn.Module,
    names: Sequence[str],
    like: Sequence[torch.Tensor],
    dims: Sequence[Dims],
    int8: bool,
    exporters: Sequence[str] = EXPORTERS,
    float_node: Optional[Callable[[str], bool]] = None,
) -> _Graph:
    """``module`` exported with dynamic axes, quantized when asked, in a checked ONNX Runtime
    session: by the first of ``exporters`` whose graph passes ``_check``."""
    if len(dims) != len(like):
        raise ValueError(f"expected {len(dims)} inputs, got {len(like)}")
    errors = []
    missing_package = False
    for exporter in exporters:
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = _write_graph(exporter, module.eval(), names, like, dims, Path(tmp) / "graph.onnx")
                data = (_quantize(path, float_node) if int8 else path).read_bytes()
            graph = _Graph(data)
            _check(graph, module, names, like, dims, int8)
            return graph
        except Exception as err:  # noqa: BLE001 - tried with the next exporter, all failures re-raised
            missing_package = missing_package or isinstance(err, ImportError)
            errors.append(f"{exporter}: {type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:200]}")
    raise ExportFailed(errors, missing_package)


def _write_graph(
    exporter: str,
    module: nn.Module,
    names: Sequence[str],
    like: Sequence[torch.Tensor],
    dims: Sequence[Dims],
    path: Path,
) -> Path:
    """The graph of ``module`` at ``path``. "torchscript" (torch's tracing exporter) gives the
    graphs ONNX Runtime fuses best (MiniLM: 1.15x the dynamo graph's speed in fp32, 1.46x in
    int8) but bakes some shapes in (nn.MultiheadAttention); "dynamo" (torch.export) keeps
    every dynamic axis. torch's fused fast path of ``nn.TransformerEncoderLayer`` /
    ``MultiheadAttention`` has no ONNX form: it is not taken while grad is enabled and an input
    requires grad, so the float examples require grad under ``torch.enable_grad`` (both
    per-thread settings; the global switch, ``torch.backends.mha``, is left alone)."""
    examples = tuple(_example(t, d).requires_grad_(t.dtype.is_floating_point) for t, d in zip(like, dims))
    with torch.enable_grad():
        if exporter == "torchscript":
            axes = {name: {i: d for i, d in enumerate(ds) if d} for name, ds in zip(names, dims)}
            torch.onnx.export(
                module,
                examples,
                str(path),
                input_names=list(names),
                output_names=["output"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
            return path
        dim = {name: torch.export.Dim(name, min=1) for name in EXAMPLE_SIZES}
        program = torch.onnx.export(
            module,
            examples,
            dynamic_shapes=tuple({i: dim[d] for i, d in enumerate(ds) if d} for ds in dims),
            input_names=list(names),
            output_names=["output"],
            dynamo=True,
            optimize=True,
            verbose=False,
            report=False,
        )
        if program is None:
            raise RuntimeError("torch.onnx.export returned no program")
        program.save(str(path))
        return path


# ONNX Runtime's default int8 kernels on an x86 CPU without VNNI (AVX2, or AVX-512 without VNNI)
# add each pair of uint8 x int8 products in a saturating 16-bit lane: wide activations times
# wide weights clip, and an int8 graph's output drifts from the model's. This session option has
# it rewrite the int8 weights to uint8 and run its exact u8u8 kernels instead. Where the CPU has
# VNNI or AMX the default kernels are exact and the option only costs: the u8u8 products do not
# use VNNI (MiniLM's int8 graph ran about 2x slower with it on a Xeon with AMX), so it is set only
# where a probe of the default kernels comes back saturated.
U8U8_OPTION = ("session.x64quantprecision", "1")
# the int8 kernels sessions are made with: "exact" (the u8u8 ones where the default ones
# saturate, the default ones elsewhere); the research benchmarks' what-ifs: "default" (ONNX
# Runtime's own choice everywhere, saturated on an x86 CPU without VNNI), "u8u8" (everywhere)
INT8_KERNELS = "exact"
# the probe: one MatMulInteger of a uint8 row of 64 255s by an int8 column of 64 127s, each pair
# of products past 16 bits; exact, it returns 64 * 255 * 127. Serialized here (built by
# research/benchmarks/int8_saturation.py with onnx.helper; a test checks they agree), so that a
# pipeline with saved graphs needs onnxruntime alone.
_PROBE = base64.b64decode(
    "CAg6mAEKGAoBQQoBQhIBWSINTWF0TXVsSW50ZWdlchIFcHJvYmUqSwhACAEQA0IBQkpAf39/f39/f39/f39/f39/f39/f39/"
    "f39/f39/f39/f39/f39/f39/f39/f39/f39/f39/f39/f39/f39/f39/f1oTCgFBEg4KDAgCEggKAggBCgIIQGITCgFZEg4K"
    "DAgGEggKAggBCgIIAUIECgAQEQ=="
)
PROBE_EXACT = 64 * 255 * 127


def probe_product(session: Any) -> int:
    """The product a session of the probe (``_PROBE``) returns: PROBE_EXACT where its int8
    kernels are exact, about half of it where they saturate."""
    import numpy

    return int(session.run(None, {"A": numpy.full((1, 64), 255, numpy.uint8)})[0][0, 0])


@functools.lru_cache(maxsize=1)
def default_int8_saturates() -> bool:
    """Whether ONNX Runtime's default int8 kernels saturate on this CPU, read off the probe's
    product (not off CPU flags: the kernels are what ONNX Runtime picks, on any platform)."""
    import onnxruntime  # type: ignore[import-untyped]  # (no py.typed)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return (
        probe_product(onnxruntime.InferenceSession(_PROBE, options, providers=["CPUExecutionProvider"])) != PROBE_EXACT
    )


def _session(data: bytes, threads: int, arena: bool = False) -> Any:
    """A CPU session of the graph ``data`` with ``threads`` intra-op threads (the thread count
    torch has when it is made: OMP_NUM_THREADS, torch.set_num_threads), not every core, ONNX
    Runtime's memory arena only with ``arena`` (CPU_MEM_ARENA), and exact int8 products on every
    CPU (INT8_KERNELS), so an int8 graph gives the same states with or without VNNI."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if INT8_KERNELS == "u8u8" or (INT8_KERNELS == "exact" and default_int8_saturates()):
        options.add_session_config_entry(*U8U8_OPTION)
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = arena
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _check(
    graph: _Graph,
    module: nn.Module,
    names: Sequence[str],
    like: Sequence[torch.Tensor],
    dims: Sequence[Dims],
    int8: bool,
) -> None:
    """Refuse a graph that fixed a dynamic axis to its example size (an exporter may do so
    silently) or that computes something else: it is run once at other sizes, against
    PyTorch (fp32: to float rounding; int8: the shape)."""
    for arg in graph.session.get_inputs():
        i = list(names).index(arg.name)
        fixed = [axis for axis, d in enumerate(dims[i]) if d and isinstance(arg.shape[axis], int)]
        if fixed:
            raise ValueError(f"the graph fixed the dynamic axes {fixed} of {arg.name} to {arg.shape}")
    sizes = {"batch": 3, "length": 5, "other_length": 11, "rows": 2}
    probe = tuple(_example(t, d, sizes) for t, d in zip(like, dims))
    with torch.inference_mode():
        expected = module(*probe)
    got = graph(names, probe)
    if got.shape != expected.shape:
        raise ValueError(f"the graph returns shape {tuple(got.shape)}, PyTorch {tuple(expected.shape)}")
    if not int8 and not torch.allclose(got, expected.float(), atol=1e-3, rtol=1e-3):
        raise ValueError(f"the graph differs from PyTorch by {float((got - expected).abs().max()):.3g}")


def _quantize(path: Path, float_node: Optional[Callable[[str], bool]] = None) -> Path:
    """Dynamic int8 (per-channel int8 weights, activations quantized on the fly); the MatMul
    and Gemm nodes ``float_node`` picks stay in float. ONNX Runtime's pre-processing runs
    first: its constant folding turns the weights torch.export leaves behind a Split (the
    attention's packed in-projection, cut into query and key/value) into initializers, which
    only then are quantized (a co-attention module: 6 of 10 weight products in int8 without
    it, all 10 with it)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]
    from onnxruntime.quantization.shape_inference import quant_pre_process  # type: ignore[import-untyped]

    out = path.with_name("graph.int8.onnx")
    folded = path.with_name("graph.folded.onnx")
    quant_pre_process(str(path), str(folded), skip_symbolic_shape=True)
    path = folded
    # shape inference does not type every tensor of the exporter's graphs: float is the default
    options = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    exclude = []
    if float_node is not None:
        nodes = onnx.load(str(path), load_external_data=False).graph.node
        exclude = [n.name for n in nodes if n.op_type in ("MatMul", "Gemm") and float_node(n.name)]
    quantize_dynamic(
        path, out, per_channel=True, weight_type=QuantType.QInt8, extra_options=options, nodes_to_exclude=exclude
    )
    return out


def parts(model: nn.Module) -> List[str]:
    """The names of the parts of an engine copy that run in ONNX Runtime (their graph exported)."""
    return [
        m.part_name for m in model.modules() if isinstance(m, _Part) and any(g is not None for g in m._graphs.values())
    ]


def kept_float_nodes(model: nn.Module) -> List[str]:
    """The part-qualified graph nodes that onnx-int8 left in float (``keep_float_nodes``) in
    an engine copy, once its graphs are exported."""
    return [node for m in model.modules() if isinstance(m, _Part) for node in m.kept_float]
