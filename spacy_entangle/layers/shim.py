"""A PyTorchShim that owns the entanglement model *and* what it needs to be
rebuilt offline: both backbones' configs, the subword tokenizer's files and all
weights (safetensors). ``spacy.load`` goes through ``from_bytes`` and never
calls ``from_pretrained``, so it needs no network and runs no remote code."""
import hashlib
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import srsly
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from thinc.api import ArgsKwargs, PyTorchShim, get_torch_default_device, torch2xp, xp2torch
from thinc.shims.pytorch_grad_scaler import PyTorchGradScaler

from ..modeling import EntangleEncoder, encoder_from_config, load_encoder, load_tokenizer
from ..modeling.inference import check_inference_mode, inference_autocast, quantize_int8
from ..tokenization import CharSpec, SubwordSpec
from .settings import EntangleSettings

ENCODER_PREFIXES = ("char_encoder.", "subword_encoder.")
REQUIRED_FILES = ("char_config.json", "subword_config.json", "model.safetensors")
CHECKSUM = "model.safetensors.sha256"


class EntangleShim(PyTorchShim):
    """``cfg`` holds the model settings (``EntangleSettings.to_cfg()``), saved with it."""

    subwords: Optional[SubwordSpec]
    chars: Optional[CharSpec]

    def __init__(self, settings: EntangleSettings):
        super().__init__(None, config=settings.to_cfg(), mixed_precision=settings.mixed_precision)
        self.subwords = None
        self.chars = None
        self.inference = "fp32"
        # opt-in: keep the co-attention maps of each prediction (last_attention)
        self.store_attention = False
        self.last_attention: Optional[List[Any]] = None
        self._autocast = False  # fp16 autocast in training (mixed precision, CUDA only)
        self._int8_model: Optional[torch.nn.Module] = None  # built on first int8 predict

    def set_inference(self, mode: str) -> None:
        """How ``predict`` runs: fp32 (exact), int8 (quantized copy, CPU) or bf16 (autocast)."""
        self.inference = check_inference_mode(mode)
        self._int8_model = None

    @property
    def settings(self) -> EntangleSettings:
        """The settings of the model (a loaded one's: ``from_bytes`` replaces the cfg)."""
        return EntangleSettings.from_cfg(self.cfg)

    @property
    def is_built(self) -> bool:
        return self._model is not None

    # -- building -------------------------------------------------------------
    def build_from_pretrained(self) -> None:
        """Load both backbones by hub name or local path (training-time init)."""
        settings = self.settings
        char_encoder = load_encoder(settings.char_backbone, role="char")
        subword_encoder = load_encoder(settings.subword_backbone, role="subword")
        tokenizer = load_tokenizer(settings.subword_backbone)
        self._build(char_encoder, subword_encoder, tokenizer)

    def _build(self, char_encoder: Any, subword_encoder: Any, tokenizer: Any) -> None:
        settings = self.settings
        # the encoders' own limits; the window getter may ask for less
        self.chars = CharSpec.from_config(char_encoder.config)
        self.subwords = SubwordSpec.from_tokenizer(tokenizer, subword_encoder.config)
        model = EntangleEncoder(
            char_encoder,
            subword_encoder,
            n_coattention=settings.n_coattention,
            width=settings.hidden_width,
            n_heads=settings.n_heads,
            ffn_width=settings.ffn_width,
            dropout=settings.dropout,
            checkpointing=settings.gradient_checkpointing,
        )
        self._model = model.to(get_torch_default_device())
        self._reset_grad_scaler()
        self._int8_model = None

    def _reset_grad_scaler(self) -> None:
        """Mixed precision is a CUDA setting (fp16 autocast + loss scaling); on the CPU
        the model trains in fp32 and the scaler (which refuses CPU tensors) is off."""
        device = next(self._model.parameters()).device
        enabled = self._mixed_precision and device.type == "cuda"
        self._autocast = enabled
        if self._grad_scaler._enabled != enabled:
            self._grad_scaler = PyTorchGradScaler(enabled)
        self._grad_scaler.to_(device)

    # -- prediction -------------------------------------------------------------
    def predict(self, inputs: ArgsKwargs) -> Any:
        """Under ``torch.inference_mode`` (no autograd bookkeeping), with the opt-in
        int8 / bf16 inference; the model stays in eval mode until the next update."""
        model = self._model
        if self.inference == "int8":
            if self._int8_model is None:
                self._int8_model = quantize_int8(self._model)
            model = self._int8_model
        model.eval()
        model.keep_attention(self.store_attention)
        device_type = next(self._model.parameters()).device.type
        with torch.inference_mode(), inference_autocast(self.inference, device_type):
            with torch.autocast(device_type="cuda", enabled=self._autocast):
                output = model(*inputs.args, **inputs.kwargs)
        self.last_attention = model.attention_maps(clear=True) if self.store_attention else None
        return output

    # -- training ---------------------------------------------------------------
    def begin_update(self, inputs: ArgsKwargs):
        """Forward in train mode. The gradients stay scaled (mixed precision) until
        ``finish_update`` unscales them once: thinc's PyTorchShim unscales every
        parameter's gradient on each backward call, which divides the gradients of
        earlier chunks (or accumulated batches) by the loss scale again."""
        self._model.train()
        self._model.keep_attention(False)
        with torch.autocast("cuda", enabled=self._autocast):
            output = self._model(*inputs.args, **inputs.kwargs)

        def backprop(grads: ArgsKwargs) -> None:
            self.backward(grads.args[0], grads.kwargs["grad_tensors"])

        return output, backprop

    def backward(self, tensors: Sequence[torch.Tensor], grad_tensors: Sequence[torch.Tensor]) -> None:
        """One backward pass for all outputs of an update, the gradients scaled."""
        scaled = self._grad_scaler.scale(list(grad_tensors), inplace=True)
        torch.autograd.backward(list(tensors), grad_tensors=list(scaled))

    def finish_update(self, optimizer) -> None:
        """Like PyTorchShim's, with the gradients unscaled once for the whole update
        and a learning-rate scale for the pretrained encoders (the new co-attention
        layers usually want a larger rate)."""
        scale = float(self.settings.backbone_lr_scale)
        grads: List[torch.Tensor] = [p.grad for p in self._model.parameters() if p.grad is not None]
        self._grad_scaler.unscale(grads)
        self._int8_model = None  # the weights change
        for name, param in self._model.named_parameters():
            if param.grad is None:
                continue
            if not self._grad_scaler.found_inf:
                lr_scale = scale if name.startswith(ENCODER_PREFIXES) else 1.0
                data, _ = optimizer(
                    (self.id, name), torch2xp(param.data), torch2xp(param.grad), lr_scale=lr_scale
                )
                param.data = xp2torch(data, requires_grad=True, device=param.device)
            param.grad.zero_()
        self._grad_scaler.update()

    # -- serialisation ------------------------------------------------------------
    def to_files(self) -> Dict[str, bytes]:
        """Everything needed to rebuild the model offline, as named files."""
        if self._model is None:
            raise ValueError("The entangle model is not initialized: nothing to serialise.")
        files: Dict[str, bytes] = {}
        files["char_config.json"] = srsly.json_dumps(self._model.char_encoder.config.to_dict()).encode("utf8")
        files["subword_config.json"] = srsly.json_dumps(self._model.subword_encoder.config.to_dict()).encode("utf8")
        with tempfile.TemporaryDirectory() as tmp:
            self.subwords.tokenizer.save_pretrained(tmp)
            for path in Path(tmp).iterdir():
                files[f"tokenizer/{path.name}"] = path.read_bytes()
        state = {k: v.detach().cpu().contiguous().clone() for k, v in self._model.state_dict().items()}
        files["model.safetensors"] = save_safetensors(state)
        # checked on load: damaged weight bytes would otherwise load silently
        files[CHECKSUM] = hashlib.sha256(files["model.safetensors"]).hexdigest().encode("ascii")
        return files

    def from_files(self, files: Dict[str, bytes]) -> None:
        """Rebuild from ``to_files``' output; every failure names the stored file."""
        from transformers import AutoTokenizer

        missing = [name for name in REQUIRED_FILES if name not in files]
        if missing or not any(name.startswith("tokenizer/") for name in files):
            raise ValueError(f"the saved model lacks {', '.join(missing) or 'the tokenizer files'}")
        weights = files["model.safetensors"]
        if CHECKSUM in files and hashlib.sha256(weights).hexdigest() != files[CHECKSUM].decode("ascii"):
            raise ValueError("model.safetensors does not match its stored sha256: the weights are damaged")
        encoders = []
        for name in ("char_config.json", "subword_config.json"):
            try:
                encoders.append(encoder_from_config(srsly.json_loads(files[name].decode("utf8"))))
            except Exception as err:  # noqa: BLE001 - re-raised naming the file
                raise ValueError(f"{name} cannot be read: {type(err).__name__}: {err}") from err
        with tempfile.TemporaryDirectory() as tmp:
            names = []
            for name, data in files.items():
                if name.startswith("tokenizer/"):
                    names.append(name)
                    (Path(tmp) / name.split("/", 1)[1]).write_bytes(data)
            try:
                tokenizer = AutoTokenizer.from_pretrained(tmp, use_fast=True, trust_remote_code=False)
            except Exception as err:  # noqa: BLE001 - re-raised naming the files
                raise ValueError(
                    f"the tokenizer files ({', '.join(sorted(names))}) cannot be read: {type(err).__name__}: {err}"
                ) from err
        self._build(encoders[0], encoders[1], tokenizer)
        try:
            self._model.load_state_dict(load_safetensors(weights))
        except Exception as err:  # noqa: BLE001 - re-raised naming the file
            raise ValueError(f"model.safetensors cannot be loaded: {type(err).__name__}: {err}") from err

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps({"config": self.cfg, "files": self.to_files()})

    def from_bytes(self, bytes_data: bytes) -> "EntangleShim":
        try:
            msg = srsly.msgpack_loads(bytes_data)
            config, files = msg["config"], msg["files"]
        except Exception as err:  # noqa: BLE001 - truncated or foreign bytes
            raise ValueError(f"not a saved spacy-entangle model (truncated?): {type(err).__name__}: {err}") from err
        self.cfg = config
        self.from_files(files)
        return self

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)
            self._reset_grad_scaler()
            self._int8_model = None

    @contextmanager
    def use_params(self, params):
        if self._model is None:
            yield
            return
        self._int8_model = None  # built from the parameters in use, never kept across
        try:
            with super().use_params(params):
                yield
        finally:
            self._int8_model = None

