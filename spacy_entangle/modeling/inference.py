"""Opt-in prediction speed-ups for a trained model, and the one autocast decision
(pure PyTorch).

- ``int8``: dynamic int8 quantization of the Linear layers of the character encoder,
  the projections and the co-attention layers (weights int8 per channel, activations quantized on
  the fly; CPU only: on another device the model predicts in fp32, with a warning).
  The pretrained subword encoder stays in float: quantizing it cost F1 where the rest cost
  nothing measurable (docs/results/speed.md). So do a grown char encoder's layers copied from the subword encoder: the children its
  registered design names (``CharDesign.int8_keep_float``, modeling/char_designs.py).
  The TRM blocks' feed-forward layers stay in float as well: torch runs
  ``nn.TransformerEncoderLayer`` through a fused fast path at prediction time, which
  needs float weights.
- ``bf16``: bfloat16 autocast. On WNUT-17 tweets at the shipped shapes it was measured no
  faster than fp32 on any CPU or GPU tried (docs/results/speed.md). On a CPU it warns so and
  still runs in bf16; on a GPU it stays an option for larger encoders (the paper's).
- ``onnx``: ONNX Runtime runs the encoders (graphs exported from the weights once, on the
  first prediction, and saved with the pipeline by ``to_disk``, so ``spacy.load`` reads them;
  CPU only, elsewhere fp32 with a warning; needs ``pip install 'spacy-entangle[onnx]'``,
  without it fp32 with a warning): the same model in fp32, outputs within float rounding of
  ``fp32`` (engines/onnx.py, engines/graphs.py).
- ``onnx-int8``: ONNX Runtime's dynamic int8 (per-channel weights) for the encoders and
  the co-attention (a grown encoder's word segmentation and front end stay in PyTorch, the
  front end's Linear layers in torch's dynamic int8): the fastest mode, at a cost in F1.
  Unlike ``int8`` it quantizes the subword encoder and the copied layers (but those under
  ONNX_INT8_FLOAT_PREFIXES, and the graph nodes ONNX_INT8_FLOAT_NODES matches), with the subword
  encoder's activations smoothed first when ONNX_INT8_SMOOTHING is an alpha (off by default;
  modeling/smoothing.py).
- ``onnx-mixed``: ONNX Runtime with ``int8``'s split: the pretrained encoders (the subword
  encoder, a grown encoder's copied layers) in fp32 graphs, the layers the model adds (the
  co-attention in int8 graphs, a grown encoder's front end in torch's dynamic int8). ``int8``'s
  accuracy, faster than it where ONNX Runtime runs the encoders faster than PyTorch.
- ``fp32``: the exact model (default), also when the model trains in mixed precision.
- ``auto``: the default of a shipped pipeline: on a CPU the fastest mode that keeps fp32's
  accuracy (``AUTO_CPU_MODE``; where it is an engine mode and onnxruntime is missing,
  ``AUTO_CPU_FALLBACK`` with one warning); on a GPU the model itself (fp32), without a warning.
"""

import copy
import importlib
import itertools
import warnings
from contextlib import nullcontext
from typing import Any, ContextManager, Dict, Literal, Optional, Tuple, get_args

import torch
from torch import nn

from .char_designs import design_of
from .engines.graphs import ENGINE_INSTALL
from .quantization import quantize_linears

# how prediction runs: the one list (the benchmarks' modes)
InferenceMode = Literal["fp32", "int8", "bf16", "onnx", "onnx-mixed", "onnx-int8"]
INFERENCE_MODES: Tuple[str, ...] = get_args(InferenceMode)
# what the component's `inference` setting takes: a mode, or "auto" (the mode picked per device)
InferenceSetting = Literal["auto", "fp32", "int8", "bf16", "onnx", "onnx-mixed", "onnx-int8"]
INFERENCE_SETTINGS: Tuple[str, ...] = get_args(InferenceSetting)
# what "auto" predicts with on a CPU: the fastest mode whose F1 cost, clean and on noisy text,
# stayed within 0.3 points of fp32 over 3 trained seeds of the shipped recipe (docs/results/speed.md:
# onnx-int8 is faster but cost about a point at noise 0.5; a test reads the rule off the
# committed per-seed files and the side-by-side speed run)
AUTO_CPU_MODE = "onnx-mixed"
# what "auto" predicts with on a CPU where AUTO_CPU_MODE needs ONNX Runtime and it is missing: the
# fastest mode within the same bound that needs nothing more than torch
AUTO_CPU_FALLBACK = "int8"
ENGINE_PACKAGE = "onnxruntime"  # what the engine modes need to run (saved graphs: nothing more)
CPU_ONLY = ("int8", "onnx", "onnx-mixed", "onnx-int8")  # modes with CPU kernels only
COPY_MODES = CPU_ONLY  # modes that predict with a copy of the model (built on first use)
ENGINE_MODES = ("onnx", "onnx-mixed", "onnx-int8")  # modes whose copy runs outside PyTorch: no attention maps
FLOAT_PREFIXES = ("subword_encoder.",)  # modules int8 leaves in float
ONNX_INT8_FLOAT_PREFIXES: Tuple[str, ...] = ()  # modules onnx-int8 leaves in float (what-ifs add some)
# regexes of part-qualified graph nodes onnx-int8 leaves in float (engines.onnx.onnx_model; the
# what-ifs of research/benchmarks/int8_accuracy.py and speed_compare.py set them, e.g. the feed-forward
# output products of the subword encoder's first three layers, the default until smoothing
# replaced them at more speed: docs/results/speed.md, "Smoothing instead of float products")
ONNX_INT8_FLOAT_NODES: Tuple[str, ...] = ()
# an alpha: onnx-int8 smooths the subword encoder's activations before quantizing
# (modeling/smoothing.py), calibrated on the fixed sample text; None: not smoothed. Off by
# default: on the real MiniLM the unsmoothed int8 states were closer to fp32 on every corpus
# tried, and over 3 trained seeds smoothing gained no F1 (docs/results/speed.md); an alpha stays
# a what-if of research/benchmarks/int8_accuracy.py and speed_compare.py
ONNX_INT8_SMOOTHING: Optional[float] = None


def check_inference_mode(mode: str) -> str:
    """``mode`` when it is an inference setting (a mode or "auto"), else a clear error."""
    if mode not in INFERENCE_SETTINGS:
        raise ValueError(f"inference must be one of {', '.join(INFERENCE_SETTINGS)}; got {mode!r}")
    return mode


def engine_available() -> bool:
    """Whether the ONNX Runtime engine can run here (onnxruntime imports)."""
    try:
        importlib.import_module(ENGINE_PACKAGE)
    except ImportError:
        return False
    return True


def inference_on_device(mode: str, device_type: str) -> str:
    """The mode prediction runs in on ``device_type``. Dynamic int8 quantization and the
    ONNX Runtime engine run on the CPU only: elsewhere the model predicts in fp32 and a
    warning says so, so that a pipeline saved with int8 for the CPU still loads, trains and
    predicts on a GPU. Without onnxruntime the engine modes predict in fp32 with a warning
    naming the override, so a pipeline saved in one loads anywhere. "auto": AUTO_CPU_MODE on
    a CPU (AUTO_CPU_FALLBACK with a warning where that needs onnxruntime and it is missing),
    fp32 elsewhere (the model on its device).
    bf16 on a CPU warns that it was measured slower than fp32 there."""
    check_inference_mode(mode)
    if mode == "auto":
        if device_type != "cpu":
            return "fp32"
        mode = AUTO_CPU_MODE
        if mode in ENGINE_MODES and not engine_available():
            warnings.warn(
                f"inference = 'auto' predicts in {mode} on the CPU with ONNX Runtime, which is not installed: "
                f"the entangle component predicts in {AUTO_CPU_FALLBACK}, as accurate and slower ({ENGINE_INSTALL} "
                f"for {mode}; set inference = '{AUTO_CPU_FALLBACK}' to silence this warning).",
                UserWarning,
                stacklevel=3,
            )
            return AUTO_CPU_FALLBACK
        return mode
    if mode == "bf16" and device_type == "cpu":
        warnings.warn(
            "inference = 'bf16' on the CPU was measured slower than fp32 on tweets, with AMX and "
            "without (research/benchmarks/bf16_devices.py); for CPU speed set inference = 'onnx-int8' or 'onnx'.",
            UserWarning,
            stacklevel=3,
        )
    if mode in CPU_ONLY and device_type != "cpu":
        warnings.warn(
            f"inference = {mode!r} runs on the CPU only: on {device_type} the "
            "entangle component predicts in fp32. Set inference = 'bf16' for faster GPU prediction, "
            "or 'fp32' to silence this warning.",
            UserWarning,
            stacklevel=3,
        )
        return "fp32"
    if mode in ENGINE_MODES and not engine_available():
        warnings.warn(
            f"inference = {mode!r} needs ONNX Runtime, which is not installed: the entangle component "
            f"predicts in fp32 ({ENGINE_INSTALL} for the ONNX engine; set inference = 'fp32' to silence "
            "this warning).",
            UserWarning,
            stacklevel=3,
        )
        return "fp32"
    return mode


def engine_settings(mode: str) -> Dict[str, Any]:
    """The settings an engine mode's graphs are made with besides the weights: saved graphs
    made with other ones are not used (engines/graphs.py)."""
    if mode == "onnx-int8":
        return {
            "smoothing": ONNX_INT8_SMOOTHING,
            "float_prefixes": list(ONNX_INT8_FLOAT_PREFIXES),
            "float_nodes": list(ONNX_INT8_FLOAT_NODES),
        }
    if mode == "onnx-mixed":  # int8's split (the design's own float children come with the weights)
        return {"float_prefixes": list(FLOAT_PREFIXES)}
    return {}


def autocast_dtype(
    device_type: str, *, training: bool, mixed_precision: bool, mode: str = "fp32"
) -> Optional[torch.dtype]:
    """The one decision of the dtype a forward pass autocasts to (None: no autocast).
    Training under ``mixed_precision`` runs fp16 on CUDA (with loss scaling; the CPU
    trains in fp32). Prediction follows ``mode`` alone: fp32 and int8 are never
    autocast, so fp32 stays exact whatever the training precision; bf16 autocasts."""
    if training:
        return torch.float16 if mixed_precision and device_type == "cuda" else None
    return torch.bfloat16 if check_inference_mode(mode) == "bf16" else None


def autocast(device_type: str, dtype: Optional[torch.dtype]) -> ContextManager:
    """``torch.autocast`` to ``dtype`` on ``device_type``, or nothing for None."""
    if dtype is None:
        return nullcontext()
    return torch.autocast(device_type=device_type, dtype=dtype)


def _keep_float(module: nn.Module) -> Tuple[str, ...]:
    """The children of a Hugging Face model (it has a ``config_class``) grown by a
    registered design that the design keeps in float."""
    design = design_of(module.config) if getattr(module, "config_class", None) is not None else None
    return design.int8_keep_float if design else ()


def float_prefixes(model: nn.Module) -> Tuple[str, ...]:
    """The module-name prefixes int8 leaves in float: FLOAT_PREFIXES, and the children that
    grown char encoders keep in float (pretrained layers that lose accuracy in int8)."""
    declared = tuple(
        dict.fromkeys(
            f"{name}.{child}." if name else f"{child}."
            for name, module in model.named_modules()
            for child in _keep_float(module)
        )
    )
    return FLOAT_PREFIXES + declared


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` (in eval mode) with its Linear layers (but those under
    ``float_prefixes``) dynamically quantized to int8; ``model`` itself is left as it is (it is
    still trained and saved). The copy shares every parameter and buffer with ``model``
    (only the module objects are new), so it adds the int8 weights and nothing else."""
    if any(p.device.type != "cpu" for p in model.parameters()):
        raise ValueError(
            "inference = 'int8' (dynamic quantization) runs on the CPU only; on a GPU use inference = 'bf16'"
        )
    # deepcopy's memo maps each tensor to itself: the modules are copied, the tensors shared
    shared = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    copied = copy.deepcopy(model, memo=shared).eval()
    return quantize_linears(copied, float_prefixes(copied))


def calibrates(mode: str) -> bool:
    """Whether the copy of ``mode`` needs the calibration text: onnx-int8 while it smooths
    (read at call time: the what-ifs set ONNX_INT8_SMOOTHING)."""
    return mode == "onnx-int8" and ONNX_INT8_SMOOTHING is not None


def prediction_copy(
    model: nn.Module,
    mode: str,
    calibration: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    graphs: Optional[Any] = None,
) -> nn.Module:
    """The copy of ``model`` that predicts in a COPY_MODES mode (tensors shared).
    ``calibration``: subword ids and mask of a fixed text, which onnx-int8 smooths on
    (ONNX_INT8_SMOOTHING); without it, or with smoothing off, it does not smooth.
    ``graphs``: an engine mode's saved graphs (engines.graphs.ModeGraphs), used instead of
    exporting and added to."""
    if mode == "int8":
        return quantize_int8(model)
    if mode == "onnx-mixed":
        from .engines.onnx import onnx_model

        # the graphs of the parts int8 keeps in float are fp32 graphs, the others int8 ones
        return onnx_model(model, int8=True, keep_float=float_prefixes(model), graphs=graphs, mode=mode)
    if mode in ENGINE_MODES:
        from .engines.onnx import onnx_model

        int8 = mode == "onnx-int8"
        smoothing = None
        if int8 and calibration is not None and ONNX_INT8_SMOOTHING is not None:
            smoothing = (*calibration, ONNX_INT8_SMOOTHING)
        return onnx_model(
            model,
            int8=int8,
            keep_float=ONNX_INT8_FLOAT_PREFIXES,
            keep_float_nodes=ONNX_INT8_FLOAT_NODES,
            calibration=smoothing,
            graphs=graphs,
        )
    raise ValueError(f"inference = {mode!r} predicts with the model itself, not a copy")
