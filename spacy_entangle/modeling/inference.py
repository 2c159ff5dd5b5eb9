"""Opt-in prediction speed-ups for a trained model (pure PyTorch).

- ``int8``: dynamic int8 quantization of the Linear layers of the character encoder,
  the projections and the co-attention layers (weights int8, activations quantized on
  the fly; CPU only). The pretrained subword encoder stays in float: quantizing MiniLM
  too cost 2.9 F1 on WNUT-17 dev (1.6 per channel), the rest costs nothing measurable.
  The TRM blocks' feed-forward layers stay in float as well: torch runs
  ``nn.TransformerEncoderLayer`` through a fused fast path at prediction time, which
  needs float weights.
- ``bf16``: bfloat16 autocast (CPUs with AVX512-BF16/AMX, or CUDA).
- ``fp32``: the exact model (default).
"""
import copy
import warnings
from contextlib import nullcontext
from typing import ContextManager, Tuple

import torch
from torch import nn

INFERENCE_MODES: Tuple[str, ...] = ("fp32", "int8", "bf16")
FLOAT_PREFIXES = ("subword_encoder.",)  # modules int8 leaves in float


def check_inference_mode(mode: str) -> str:
    if mode not in INFERENCE_MODES:
        raise ValueError(f"inference must be one of {', '.join(INFERENCE_MODES)}; got {mode!r}")
    return mode


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` (in eval mode) with its Linear layers (but the subword
    encoder's) dynamically quantized to int8; ``model`` itself is left as it is (it is
    still trained and saved)."""
    if any(p.is_cuda for p in model.parameters()):
        raise ValueError(
            "inference = 'int8' (dynamic quantization) runs on the CPU only; on a GPU use "
            "inference = 'bf16'"
        )
    fused = (nn.TransformerEncoderLayer,)
    skip = {
        f"{name}.{child}"
        for name, module in model.named_modules()
        if isinstance(module, fused)
        for child in ("linear1", "linear2")
    }
    targets = {
        name
        for name, module in model.named_modules()
        if type(module) is nn.Linear and name not in skip and not name.startswith(FLOAT_PREFIXES)
    }
    copied = copy.deepcopy(model).eval()
    with warnings.catch_warnings():
        # torch.ao.quantization is deprecated upstream in favour of torchao, and still
        # the one dynamic quantization shipped with torch itself
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(copied, targets, dtype=torch.qint8, inplace=True)


def inference_autocast(mode: str, device_type: str) -> ContextManager:
    """The autocast context of an inference mode (a no-op except for bf16)."""
    if mode == "bf16":
        return torch.autocast(device_type=device_type, dtype=torch.bfloat16)
    return nullcontext()
