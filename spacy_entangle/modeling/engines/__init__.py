"""Prediction engines other than eager PyTorch (opt-in ``inference`` modes). An engine
builds, from the trained model, a stand-in that ``EntangleEncoder.forward`` runs as it
is: only whole submodules are replaced (the encoders, or their Hugging Face parts, and
the co-attention modules), so an engine does not depend on how those are written."""

from typing import Any

from .graphs import GraphStore, ModeGraphs

__all__ = ["ONNX_INSTALL", "GraphStore", "ModeGraphs", "onnx_model"]


def __getattr__(name: str) -> Any:
    """The ONNX engine on first use: it imports transformers and torch's exporter, which
    `import spacy_entangle` must not (spaCy imports the package to find its factories)."""
    if name in ("ONNX_INSTALL", "onnx_model"):
        from . import onnx

        return getattr(onnx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
