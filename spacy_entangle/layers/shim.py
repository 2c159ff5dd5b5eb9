"""A PyTorchShim that owns the entanglement model *and* what it needs to be
rebuilt offline: both backbones' configs, the subword tokenizer's files and all
weights (safetensors). ``spacy.load`` goes through ``from_bytes`` and never
calls ``from_pretrained``, so it needs no network and runs no remote code."""
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

import srsly
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from thinc.api import PyTorchShim, get_torch_default_device, torch2xp, xp2torch

from ..modeling import EntangleEncoder, encoder_from_config, load_encoder, load_tokenizer
from ..tokenization import CharSpec, SubwordSpec

ENCODER_PREFIXES = ("char_encoder.", "subword_encoder.")


class EntangleShim(PyTorchShim):
    """``cfg`` holds the model settings (backbone names, n_coattention, widths...)."""

    subwords: Optional[SubwordSpec]
    chars: Optional[CharSpec]

    def __init__(self, settings: Dict[str, Any], mixed_precision: bool = False):
        super().__init__(None, config=dict(settings), mixed_precision=mixed_precision)
        self.subwords = None
        self.chars = None

    @property
    def is_built(self) -> bool:
        return self._model is not None

    # -- building -------------------------------------------------------------
    def build_from_pretrained(self) -> None:
        """Load both backbones by hub name or local path (training-time init)."""
        cfg = self.cfg
        char_encoder = load_encoder(cfg["char_backbone"], role="char")
        subword_encoder = load_encoder(cfg["subword_backbone"], role="subword")
        tokenizer = load_tokenizer(cfg["subword_backbone"])
        self._build(char_encoder, subword_encoder, tokenizer)

    def _build(self, char_encoder: Any, subword_encoder: Any, tokenizer: Any) -> None:
        cfg = self.cfg
        self.chars = CharSpec.from_config(char_encoder.config, max_length=cfg.get("max_chars") or 2048)
        self.subwords = SubwordSpec.from_tokenizer(
            tokenizer, subword_encoder.config, max_length=cfg.get("max_pieces") or 512
        )
        model = EntangleEncoder(
            char_encoder,
            subword_encoder,
            n_coattention=cfg["n_coattention"],
            width=cfg.get("hidden_width"),
            n_heads=cfg.get("n_heads"),
            ffn_width=cfg.get("ffn_width"),
            dropout=cfg.get("dropout", 0.1),
            checkpointing=cfg.get("gradient_checkpointing", False),
        )
        self._model = model.to(get_torch_default_device())
        self._grad_scaler.to_(get_torch_default_device())

    # -- training ---------------------------------------------------------------
    def finish_update(self, optimizer) -> None:
        """Like PyTorchShim's, with a learning-rate scale for the pretrained
        encoders (the new co-attention layers usually want a larger rate)."""
        scale = float(self.cfg.get("backbone_lr_scale", 1.0))
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
        return files

    def from_files(self, files: Dict[str, bytes]) -> None:
        from transformers import AutoTokenizer

        char_encoder = encoder_from_config(srsly.json_loads(files["char_config.json"].decode("utf8")))
        subword_encoder = encoder_from_config(srsly.json_loads(files["subword_config.json"].decode("utf8")))
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in files.items():
                if name.startswith("tokenizer/"):
                    (Path(tmp) / name.split("/", 1)[1]).write_bytes(data)
            tokenizer = AutoTokenizer.from_pretrained(tmp, use_fast=True, trust_remote_code=False)
        self._build(char_encoder, subword_encoder, tokenizer)
        state = load_safetensors(files["model.safetensors"])
        self._model.load_state_dict(state)

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps({"config": self.cfg, "files": self.to_files()})

    def from_bytes(self, bytes_data: bytes) -> "EntangleShim":
        msg = srsly.msgpack_loads(bytes_data)
        self.cfg = msg["config"]
        self.from_files(msg["files"])
        return self

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)

    def use_params(self, params):
        if self._model is None:
            from contextlib import nullcontext

            return nullcontext()
        return super().use_params(params)

