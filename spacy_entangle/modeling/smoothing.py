"""Activation smoothing before dynamic int8 (SmoothQuant, Xiao et al. 2023, arXiv 2211.10438;
pure PyTorch).

Dynamic int8 quantizes a product's activations with one scale per call: a few input channels
with a wide range (a transformer's feed-forward output after the GELU has them) leave the
others few levels. Smoothing divides each input channel j by s_j and multiplies the weight's
column j by it, ``s_j = max|x_j|^alpha / max|W_j|^(1 - alpha)``: the same product in float,
with the range moved from the activations into the per-channel-quantized weights. The
activation ranges come from a calibration batch run through the float model.

``onnx-int8`` exports its subword encoder smoothed when ``inference.ONNX_INT8_SMOOTHING`` is an
alpha (engines/onnx.py; off by default: on MiniLM it moved the int8 states further from fp32),
calibrated on the fixed sample text (backbone_dirs/sample_text.py), so the graph does not
depend on the first batch predicted.
"""

import copy
import itertools
from typing import Callable, Dict, List, Tuple, cast

import torch
from torch import nn

# the products smoothed in each BERT-style layer (Hugging Face's BERT / RoBERTa / XLM-R names):
# those whose input is one tensor no other product reads (the query / key / value products
# share theirs, and would each need the same scale)
SMOOTHED = ("attention.output.dense", "intermediate.dense", "output.dense")


class SmoothedLinear(nn.Module):
    """``linear`` with its input channels divided by ``scale`` and its weight's columns
    multiplied by it: the same function in float, an easier one to quantize."""

    inverse: torch.Tensor

    def __init__(self, linear: nn.Linear, scale: torch.Tensor):
        super().__init__()
        self.linear = nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
        with torch.no_grad():
            self.linear.weight.copy_(linear.weight * scale[None, :])
            if linear.bias is not None:
                self.linear.bias.copy_(linear.bias)
        self.register_buffer("inverse", (1.0 / scale).to(linear.weight.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inverse)


def smoothable(encoder: nn.Module) -> bool:
    """Whether ``encoder`` has BERT-style layers (``encoder.layer``) with every product this
    module smooths, as plain Linear layers."""
    try:
        layers = _layers(encoder)
        return bool(layers) and all(type(layer.get_submodule(p)) is nn.Linear for layer in layers for p in SMOOTHED)
    except AttributeError:  # get_submodule: no such submodule
        return False


def _layers(encoder: nn.Module) -> List[nn.Module]:
    layers = encoder.get_submodule("encoder.layer")
    return list(layers) if isinstance(layers, nn.ModuleList) else []


def input_ranges(encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Dict[str, torch.Tensor]:
    """Per input channel, the largest |value| each smoothed product of ``encoder`` reads over
    the real positions of a calibration batch (float forward, hooks on the products)."""
    real = attention_mask.bool()
    ranges: Dict[str, torch.Tensor] = {}
    hooks = []

    def record(name: str) -> Callable[[nn.Module, Tuple[torch.Tensor, ...], torch.Tensor], None]:
        def hook(module: nn.Module, args: Tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            top = args[0][real].abs().amax(0)  # (B, L, C) at the real positions
            ranges[name] = torch.maximum(ranges[name], top) if name in ranges else top

        return hook

    for i, layer in enumerate(_layers(encoder)):
        for path in SMOOTHED:
            hooks.append(layer.get_submodule(path).register_forward_hook(record(f"{i}.{path}")))
    try:
        with torch.no_grad():  # not inference_mode: the ranges are used beside parameters
            encoder(input_ids=input_ids, attention_mask=attention_mask)
    finally:
        for handle in hooks:
            handle.remove()
    return ranges


def smooth_encoder(
    encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, alpha: float = 0.5
) -> nn.Module:
    """A copy of ``encoder`` (eval mode; its other tensors shared) whose ``SMOOTHED`` products
    are ``SmoothedLinear``, scaled from the calibration batch's activation ranges; ``encoder``
    itself is not changed."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"the smoothing alpha must be in [0, 1]; got {alpha}")
    if not smoothable(encoder):
        raise ValueError(f"{type(encoder).__name__} has no BERT-style layers with the products {', '.join(SMOOTHED)}")
    ranges = input_ranges(encoder, input_ids, attention_mask)
    shared = {id(t): t for t in itertools.chain(encoder.parameters(), encoder.buffers())}
    smoothed = copy.deepcopy(encoder, memo=shared).eval()
    for i, layer in enumerate(_layers(smoothed)):
        for path in SMOOTHED:
            parent_path, _, name = path.rpartition(".")
            parent = layer.get_submodule(parent_path)
            linear = cast(nn.Linear, getattr(parent, name))
            weight = linear.weight.detach().abs().amax(0)
            scale = ranges[f"{i}.{path}"].clamp(min=1e-5) ** alpha / weight.clamp(min=1e-5) ** (1 - alpha)
            setattr(parent, name, SmoothedLinear(linear, scale))
    return smoothed
