"""Prediction engines other than eager PyTorch (opt-in ``inference`` modes). An engine
builds, from the trained model, a stand-in that ``EntangleEncoder.forward`` runs as it
is: only whole submodules are replaced (the encoders, or their Hugging Face parts, and
the co-attention modules), so an engine does not depend on how those are written."""

from .onnx import ONNX_INSTALL, onnx_model

__all__ = ["ONNX_INSTALL", "onnx_model"]
