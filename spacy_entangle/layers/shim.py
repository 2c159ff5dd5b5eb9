"""A PyTorchShim that owns the entanglement model *and* what it needs to be
rebuilt offline: both backbones' configs, the subword tokenizer's files and all
weights (safetensors), and the ONNX graphs exported from those weights (onnx/, when an
engine mode has predicted: ``spacy.load`` reads them instead of exporting again).
``spacy.load`` goes through ``from_bytes`` and never calls ``from_pretrained``, so it
needs no network and runs no remote code.

It pickles and deep-copies in every inference mode, before and after the first prediction:
the prediction copy (and its ONNX Runtime sessions) is left out and made again from the
weights and the saved graphs, so ``nlp.pipe(n_process=...)`` under spawn, ``copy.deepcopy``
and ``nlp.replace_listeners`` work and no worker exports again."""

import hashlib
import logging
import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, cast

import srsly
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from thinc.api import ArgsKwargs, Optimizer, PyTorchShim, get_torch_default_device, torch2xp, xp2torch
from thinc.shims.pytorch_grad_scaler import PyTorchGradScaler
from thinc.types import FloatsXd

from ..backbone_dirs.sample_text import sample_lines
from ..modeling import EntangleEncoder, encoder_from_config, load_encoder, load_tokenizer
from ..modeling.engines.graphs import GraphStore, export_report
from ..modeling.inference import (
    COPY_MODES,
    ENGINE_MODES,
    autocast,
    autocast_dtype,
    calibrates,
    check_inference_mode,
    engine_settings,
    inference_on_device,
    prediction_copy,
)
from ..modeling.sizes import legacy_heads
from ..modeling.skip_init import not_loaded, skipped_random_init
from ..tokenization import CharSpec, SubwordSpec
from ..tokenization.subwords import (
    Specials,
    legacy_special_ids,
    portable_tokenizer_config,
    recorded_special_ids,
    special_ids,
    specials_record,
)
from ..versions import IncompatibleFilesError, library_mismatch, saved_versions
from .settings import EntangleSettings

ENCODER_PREFIXES = ("char_encoder.", "subword_encoder.")
REQUIRED_FILES = ("char_config.json", "subword_config.json", "model.safetensors")
CHECKSUM = "model.safetensors.sha256"
VERSIONS = "versions.json"  # the libraries it was saved with (versions.saved_versions)
FILE_CHECKSUMS = "files.sha256.json"  # every file's sha256 but the weights' (CHECKSUM holds that)
# the special pieces the subword windows were trained with: a later transformers may read
# other specials from the same tokenizer files, which would change predictions silently
SPECIALS = "subword_specials.json"
TOKENIZER_CONFIG = "tokenizer/tokenizer_config.json"
# buffers that transformers rebuilds in the constructor and some versions keep in the state dict
# (4.30 saved embeddings.position_ids; later versions neither save nor expect it)
REBUILT_BUFFERS = ("position_ids", "token_type_ids")
NOT_INITIALIZED = (
    "The entangle model is not initialized: call nlp.initialize() (or load a "
    "trained pipeline with spacy.load) before using it."
)
# the library's own logger (not the root one): the one line an export of ONNX graphs logs
logger = logging.getLogger("spacy_entangle")
# one prediction copy made at a time (its engine's first call exports under the engine's own lock)
_COPY_LOCK = threading.Lock()


class EntangleShim(PyTorchShim):
    """``cfg`` holds the model settings (``EntangleSettings.to_cfg()``), saved with it."""

    subwords: Optional[SubwordSpec]
    chars: Optional[CharSpec]

    def __init__(self, settings: EntangleSettings):
        super().__init__(None, config=settings.to_cfg(), mixed_precision=settings.mixed_precision)
        self.subwords = None
        self.chars = None
        self.inference = "fp32"
        self._predict_mode = "fp32"  # `inference` on the model's device (int8 is CPU only)
        # opt-in: keep the co-attention maps of each prediction (last_attention)
        self.store_attention = False
        self.last_attention: Optional[List[Any]] = None
        # the copy that int8 / onnx / onnx-int8 predict with, built on their first predict
        self._fast_model: Optional[torch.nn.Module] = None
        # the engine modes' graphs for the weights as they are (saved with them, read on load)
        self._graphs = GraphStore()
        # the process that holds the model (a forked child is told apart: _own_process)
        self._pid = os.getpid()

    def __getstate__(self) -> Dict[str, Any]:
        """Everything but the prediction copy, which holds ONNX Runtime sessions (they do not
        pickle) and is made again from the weights and the graphs on the next prediction."""
        state = self.__dict__.copy()
        state["_fast_model"] = None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pid = os.getpid()

    def set_inference(self, mode: str) -> None:
        """How ``predict`` runs: fp32 (exact), int8 (quantized copy, CPU), bf16 (autocast),
        onnx / onnx-int8 (ONNX Runtime copy, CPU; without onnxruntime fp32, with a warning),
        auto (the device's default: modeling/inference.py)."""
        self.inference = check_inference_mode(mode)
        self._settle_inference()

    @property
    def predict_mode(self) -> str:
        """The mode ``predict`` runs in on the model's device (``inference`` resolved)."""
        return self._predict_mode

    def graph_names(self) -> List[str]:
        """``MODE:PART/KEY`` of the ONNX graphs held for the weights as they are (saved by
        ``to_files``)."""
        return self._graphs.names()

    def _settle_inference(self) -> None:
        """Decide how ``predict`` runs on the model's device, when the model is built or
        moved or the mode set: int8 elsewhere than on the CPU warns here and runs fp32,
        instead of failing at the first prediction (e.g. after a whole ``spacy train``)."""
        self._drop_fast_model()
        if self._model is not None:
            device_type = next(self._model.parameters()).device.type
            self._predict_mode = inference_on_device(self.inference, device_type)

    def _drop_fast_model(self) -> None:
        """Forget the prediction copy (int8, onnx, onnx-int8): the next prediction builds it from
        the weights as they are then. Whatever changes the weights, their device or the mode
        calls this."""
        self._fast_model = None

    def _weights_changed(self, reason: str = "the weights changed since the last export") -> None:
        """The prediction copy and the graphs are of weights the model no longer has."""
        self._drop_fast_model()
        self._graphs = GraphStore(reason)

    @property
    def settings(self) -> EntangleSettings:
        """The settings of the model (a loaded one's: ``from_bytes`` takes the saved
        shapes and keeps the configured run-time settings, ``EntangleSettings.loaded``)."""
        return EntangleSettings.from_cfg(self.cfg)

    @property
    def is_built(self) -> bool:
        return self._model is not None

    def built_specs(self) -> Tuple[SubwordSpec, CharSpec]:
        """The subword and char input specs, which the model gets when it is built."""
        if self.subwords is None or self.chars is None:
            raise ValueError(NOT_INITIALIZED)
        return self.subwords, self.chars

    # -- building -------------------------------------------------------------
    def build_from_pretrained(self) -> None:
        """Load both backbones by hub name or local path (training-time init)."""
        settings = self.settings
        char_encoder = load_encoder(settings.char_backbone, role="char")
        subword_encoder = load_encoder(settings.subword_backbone, role="subword")
        tokenizer = load_tokenizer(settings.subword_backbone)
        self._build(char_encoder, subword_encoder, tokenizer)

    def _build(
        self,
        char_encoder: Any,
        subword_encoder: Any,
        tokenizer: Any,
        saved: bool = False,
        specials: Optional[Specials] = None,
    ) -> None:
        """saved: rebuilt from saved files, with the head count they were built with;
        specials: the subword specials it was trained with (None: the tokenizer's own)."""
        settings = self.settings
        n_heads = settings.n_heads
        if saved:  # saved with n_heads = null before a default that does not divide was refused
            width = settings.hidden_width or subword_encoder.config.hidden_size
            n_heads = legacy_heads(width, n_heads, getattr(subword_encoder.config, "num_attention_heads", None))
        # the encoders' own limits; the window settings may ask for less
        self.chars = CharSpec.from_config(char_encoder.config)
        self.subwords = SubwordSpec.from_tokenizer(tokenizer, subword_encoder.config, specials=specials)
        model = EntangleEncoder(
            char_encoder,
            subword_encoder,
            n_coattention=settings.n_coattention,
            width=settings.hidden_width,
            n_heads=n_heads,
            ffn_width=settings.ffn_width,
            dropout=settings.dropout,
            checkpointing=settings.gradient_checkpointing,
        )
        self._model = model.to(get_torch_default_device())
        self._graphs = GraphStore()
        self._reset_grad_scaler()
        self._settle_inference()

    def _reset_grad_scaler(self) -> None:
        """Mixed precision is a CUDA setting (fp16 autocast + loss scaling); on the CPU
        the model trains in fp32 and the scaler (which refuses CPU tensors) is off."""
        device = next(self._model.parameters()).device
        autocasts = autocast_dtype(device.type, training=True, mixed_precision=self._mixed_precision)
        enabled = autocasts is torch.float16
        if self._grad_scaler._enabled != enabled:
            self._grad_scaler = PyTorchGradScaler(enabled)
        self._grad_scaler.to_(device)

    # -- prediction -------------------------------------------------------------
    def predict(self, inputs: ArgsKwargs) -> Any:
        """Under ``torch.inference_mode`` (no autograd bookkeeping) in eval mode, with the
        opt-in int8 / bf16 / onnx / onnx-int8 inference (the onnx modes run the exact model
        when the co-attention maps are kept: the graphs do not return them). Like thinc's
        PyTorchShim, the model goes back to the mode it was in: a training batch's deferred
        backward (with checkpointing it reruns the forward) may still follow, e.g. with
        ``entangle`` in annotating_components."""
        self._own_process()
        mode = self._predict_mode
        if mode in ENGINE_MODES and self.store_attention:
            mode = "fp32"  # the graphs return states only: the maps come from the exact model
        model = self._model
        if mode in COPY_MODES:
            model = self._prediction_copy(mode)
        device_type = next(self._model.parameters()).device.type
        dtype = autocast_dtype(device_type, training=False, mixed_precision=self._mixed_precision, mode=mode)
        held = self._graphs.modes.get(mode)
        saved = bool(held and held.graphs)  # graphs of this mode before the call
        with _eval_mode(model), torch.inference_mode(), autocast(device_type, dtype), export_report() as report:
            if mode not in ENGINE_MODES:  # an engine copy keeps no attention maps
                model.keep_attention(self.store_attention)
            output = model(*inputs.args, **inputs.kwargs)
        if report.exported:
            reason = report.reason or (
                "the saved ones are for other inputs (e.g. every row, not the listeners' rows)"
                if saved
                else self._graphs.reason
            )
            logger.warning(
                "spacy-entangle: exported %d ONNX graph(s) for inference = %r in %.1f s (%s); saving the "
                "pipeline (nlp.to_disk) keeps them, so spacy.load and worker processes do not export again",
                len(report.exported),
                mode,
                report.seconds,
                reason,
            )
        self.last_attention = model.attention_maps(clear=True) if self.store_attention else None
        return output

    def _prediction_copy(self, mode: str) -> torch.nn.Module:
        """The copy ``mode`` predicts with, made on first use (once, whichever thread asks
        first), an engine mode's from the graphs held for these weights."""
        fast = self._fast_model
        if fast is None:
            with _COPY_LOCK:
                fast = self._fast_model
                if fast is None:
                    calibration = self._calibration() if calibrates(mode) else None
                    graphs = self._graphs.for_mode(mode, engine_settings(mode)) if mode in ENGINE_MODES else None
                    fast = self._fast_model = prediction_copy(self._model, mode, calibration, graphs)
        return fast

    def _own_process(self) -> None:
        """In a process forked from the one that holds the model (``nlp.pipe(n_process=...)``'s
        workers under fork), one torch thread: torch's thread pool does not survive a fork,
        and the child's first parallel op would wait on threads that are not there (torch's
        DataLoader workers do the same). A spawned worker starts its own torch: left alone. The
        ONNX Runtime sessions make themselves again in the child (engines/onnx.py, _Graph)."""
        pid = os.getpid()
        if pid != self._pid:
            self._pid = pid
            if torch.get_num_threads() > 1:
                torch.set_num_threads(1)

    def _calibration(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """Subword ids and mask of the fixed sample text (English, tweets, other scripts),
        on the model's device: what onnx-int8 smooths its activations on when it smooths, so its
        copy does not depend on the first batch it predicts."""
        ids, mask = self.built_specs()[0].padded(sample_lines())
        device = next(self._model.parameters()).device
        return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)

    # -- training ---------------------------------------------------------------
    def begin_update(self, inputs: ArgsKwargs) -> Tuple[Any, Callable[..., None]]:
        """Forward in train mode; the backprop is ``backward``, which takes the outputs with
        their gradients: EntangleModel calls it once for all the chunks of an update (one
        loss scaling per update). The gradients stay scaled (mixed precision) until
        ``finish_update`` unscales them once: thinc's PyTorchShim unscales every
        parameter's gradient on each backward call, which divides the gradients of
        earlier chunks (or accumulated batches) by the loss scale again."""
        self._model.train()
        self._model.keep_attention(False)
        device_type = next(self._model.parameters()).device.type
        dtype = autocast_dtype(device_type, training=True, mixed_precision=self._mixed_precision)
        with autocast(device_type, dtype):
            output = self._model(*inputs.args, **inputs.kwargs)
        return output, self.backward

    def backward(self, tensors: Sequence[torch.Tensor], grad_tensors: Sequence[torch.Tensor]) -> None:
        """One backward pass for all outputs of an update, the gradients scaled."""
        scaled = self._grad_scaler.scale(list(grad_tensors), inplace=True)
        torch.autograd.backward(list(tensors), grad_tensors=list(scaled))

    def finish_update(self, optimizer: Optimizer) -> None:
        """Like PyTorchShim's, with the gradients unscaled once for the whole update
        and a learning-rate scale for the pretrained encoders (the new co-attention
        layers usually want a larger rate)."""
        scale = float(self.settings.backbone_lr_scale)
        grads: List[torch.Tensor] = [p.grad for p in self._model.parameters() if p.grad is not None]
        self._grad_scaler.unscale(grads)
        self._weights_changed()
        for name, param in self._model.named_parameters():
            if param.grad is None:
                continue
            if not self._grad_scaler.found_inf:
                lr_scale = scale if name.startswith(ENCODER_PREFIXES) else 1.0
                # as thinc's PyTorchShim: torch2xp is typed as any array, the parameters are floats
                weights, grad = cast(FloatsXd, torch2xp(param.data)), cast(FloatsXd, torch2xp(param.grad))
                data, _ = optimizer((self.id, name), weights, grad, lr_scale=lr_scale)
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
            subwords = self.built_specs()[0]
            subwords.tokenizer.save_pretrained(tmp)
            for path in Path(tmp).iterdir():
                files[f"tokenizer/{path.name}"] = path.read_bytes()
        if TOKENIZER_CONFIG in files:  # read by every supported transformers, not only this one
            files[TOKENIZER_CONFIG] = portable_tokenizer_config(files[TOKENIZER_CONFIG])
        record = specials_record(subwords.before, subwords.after, subwords.tokenizer)
        files[SPECIALS] = srsly.json_dumps(record).encode("utf8")
        state = {k: v.detach().cpu().contiguous().clone() for k, v in self._model.state_dict().items()}
        files["model.safetensors"] = save_safetensors(state)
        # checked on load: damaged weight bytes would otherwise load silently
        files[CHECKSUM] = hashlib.sha256(files["model.safetensors"]).hexdigest().encode("ascii")
        files[VERSIONS] = srsly.json_dumps(saved_versions()).encode("utf8")
        # the other files' too: a load that fails on intact files is a library mismatch, not damage
        # the engine modes' graphs of these weights (after a prediction, or prepared for a package)
        files.update(self._graphs.to_files(files[CHECKSUM].decode("ascii")))
        files[FILE_CHECKSUMS] = srsly.json_dumps(_sha256s(files)).encode("utf8")
        return files

    def from_files(self, files: Dict[str, bytes]) -> None:
        """Rebuild from ``to_files``' output; every failure names the stored file. Damage
        (a file missing, a checksum that does not match) is told apart from intact files
        the installed transformers / tokenizers cannot read (``IncompatibleFilesError``)."""
        from transformers import AutoTokenizer

        missing = [name for name in REQUIRED_FILES if name not in files]
        if missing or not any(name.startswith("tokenizer/") for name in files):
            raise ValueError(f"the saved model lacks {', '.join(missing) or 'the tokenizer files'}")
        weights = files["model.safetensors"]
        weights_sha256 = hashlib.sha256(weights).hexdigest()
        if CHECKSUM in files and weights_sha256 != files[CHECKSUM].decode("ascii"):
            raise ValueError("model.safetensors does not match its stored sha256: the weights are damaged")
        verified_sha256s = _check_sha256s(files)
        verified = verified_sha256s is not None and CHECKSUM in files
        saved = _json_file(files, VERSIONS) if VERSIONS in files else {}

        def mismatch(what: str, err: Exception) -> IncompatibleFilesError:
            return IncompatibleFilesError(library_mismatch(what, err, saved, verified))

        with tempfile.TemporaryDirectory() as tmp:
            names = []
            for name, data in files.items():
                if name.startswith("tokenizer/"):
                    names.append(name)
                    # older saves under transformers 5 name a class 4.x does not know
                    portable = portable_tokenizer_config(data) if name == TOKENIZER_CONFIG else data
                    (Path(tmp) / name.split("/", 1)[1]).write_bytes(portable)
            try:
                tokenizer = AutoTokenizer.from_pretrained(tmp, use_fast=True, trust_remote_code=False)
            except Exception as err:  # re-raised naming the files
                raise mismatch(f"the tokenizer files ({', '.join(sorted(names))})", err) from err
        try:
            state = load_safetensors(weights)
        except Exception as err:  # re-raised naming the file
            raise _weights_error(files, mismatch, err) from err
        # every weight is about to be overwritten: not drawn at random first, unless the model
        # holds random state the saved weights do not fill (then built again, drawn as usual)
        with skipped_random_init() as init:
            self._build_saved(files, tokenizer, state, mismatch)
        built = self._model.state_dict()
        if not_loaded(init.skipped, (built[k] for k in state if k in built)):
            self._build_saved(files, tokenizer, state, mismatch)
        self._graphs = GraphStore.from_files(files, weights_sha256, verified_sha256s)

    def _build_saved(
        self,
        files: Dict[str, bytes],
        tokenizer: Any,
        state: Dict[str, torch.Tensor],
        mismatch: Callable[[str, Exception], Exception],
    ) -> None:
        """The model of the saved configs, with the saved weights; each failure names its file."""
        encoders = []
        for name in ("char_config.json", "subword_config.json"):
            config = _json_file(files, name)
            try:
                encoders.append(encoder_from_config(config))
            except Exception as err:  # re-raised naming the file
                raise mismatch(f"{name} (model type {config.get('model_type')!r})", err) from err
        specials = _trained_specials(files, tokenizer, getattr(encoders[1].config, "vocab_size", None))
        try:
            self._build(encoders[0], encoders[1], tokenizer, saved=True, specials=specials)
        except Exception as err:  # re-raised naming what was built
            raise mismatch("the model built from the saved configs and tokenizer", err) from err
        try:
            _load_weights(self._model, state)
        except Exception as err:  # re-raised naming the file
            raise _weights_error(files, mismatch, err) from err

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps({"config": self.cfg, "files": self.to_files()})

    def from_bytes(self, bytes_data: bytes) -> "EntangleShim":
        try:
            msg = srsly.msgpack_loads(bytes_data)
            config, files = msg["config"], msg["files"]
        except Exception as err:  # truncated or foreign bytes
            raise ValueError(f"not a saved spacy-entangle model (truncated?): {type(err).__name__}: {err}") from err
        # the weights' shapes as saved; the run-time settings of the config loaded with
        self.cfg = self.settings.loaded(config).to_cfg()
        self.from_files(files)
        return self

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)
            self._reset_grad_scaler()
            self._settle_inference()

    @contextmanager
    def use_params(self, params: Dict[str, Any]) -> Iterator[None]:
        if self._model is None or not any(str(key).startswith(f"pytorch_{self.id}_") for key in params):
            yield  # PyTorchShim.use_params swaps no weight of this model: its copy and graphs stay
            return
        # built from the parameters in use, never kept across; the graphs of the weights
        # outside stay valid for them
        outside = self._graphs
        self._weights_changed("the weights in use (use_params) are others than the graphs were exported from")
        try:
            with super().use_params(params):
                yield
        finally:
            self._drop_fast_model()
            self._graphs = outside


@contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """``model`` in eval mode inside, back in the mode it was in after."""
    training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(training)


# -- saved files: checksums and weights (to_files / from_files) -------------------------------
def _sha256s(files: Dict[str, bytes]) -> Dict[str, str]:
    """The sha256 of every file but the weights (hashed once, into CHECKSUM)."""
    skip = ("model.safetensors", CHECKSUM, FILE_CHECKSUMS)
    return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items()) if name not in skip}


def _check_sha256s(files: Dict[str, bytes]) -> Optional[Dict[str, str]]:
    """Raise, naming them, when files do not match their stored sha256 (damage); the verified
    sha256 of each file but the weights, or None for pipelines saved before they were stored."""
    if FILE_CHECKSUMS not in files:
        return None
    try:
        stored = srsly.json_loads(files[FILE_CHECKSUMS].decode("utf8"))
    except Exception as err:  # re-raised naming the file
        raise ValueError(f"{FILE_CHECKSUMS} cannot be read (damaged): {type(err).__name__}: {err}") from err
    actual = _sha256s(files)
    bad = sorted(name for name in set(stored) | set(actual) if stored.get(name) != actual.get(name))
    if bad:
        kind = "the tokenizer files are" if all(n.startswith("tokenizer/") for n in bad) else "the saved files are"
        raise ValueError(f"{kind} damaged: {', '.join(bad)} missing or not matching the stored sha256")
    return actual


def _trained_specials(files: Dict[str, bytes], tokenizer: Any, vocab_size: Optional[int]) -> Specials:
    """The subword specials the saved model was trained with. Recorded (SPECIALS) since they
    could differ between transformers versions; older saves follow the rule of the code that
    saved them: the post-processor's (saves that record their versions) or, before that,
    ``build_inputs_with_special_tokens`` (``legacy_special_ids``)."""
    if SPECIALS in files:
        record = _json_file(files, SPECIALS)
        try:
            return recorded_special_ids(record, tokenizer, vocab_size)
        except ValueError as err:  # named by file, as every other refusal of saved files
            raise ValueError(f"{SPECIALS}: {err}") from err
    if VERSIONS in files:
        return special_ids(tokenizer)
    return legacy_special_ids(tokenizer)


def _json_file(files: Dict[str, bytes], name: str) -> Dict[str, Any]:
    """A stored JSON file; unreadable JSON is damage, whatever the library versions."""
    try:
        value = srsly.json_loads(files[name].decode("utf8"))
    except Exception as err:  # re-raised naming the file
        raise ValueError(f"{name} cannot be read: {type(err).__name__}: {err}") from err
    if not isinstance(value, dict):
        raise ValueError(f"{name} cannot be read: not a JSON object")
    return value


def _weights_error(
    files: Dict[str, bytes], mismatch: Callable[[str, Exception], Exception], err: Exception
) -> Exception:
    """Why model.safetensors did not load: damage where no checksum rules it out, else a mismatch
    between intact weights and the encoders the installed libraries build."""
    if CHECKSUM not in files:  # saved before the checksum: damage cannot be ruled out
        return ValueError(f"model.safetensors cannot be loaded: {type(err).__name__}: {err}")
    return mismatch("model.safetensors (into the encoders built from the saved configs)", err)


def _load_weights(model: torch.nn.Module, state: Dict[str, torch.Tensor]) -> None:
    """Strict for every parameter; the encoders' rebuilt buffers may be absent (transformers
    >= 4.31 does not save position_ids) or extra (4.30 did), so pipelines load across versions."""
    result = model.load_state_dict(state, strict=False)
    buffers = {name for name, _ in model.named_buffers()}
    missing = [k for k in result.missing_keys if not (k in buffers and k.startswith(ENCODER_PREFIXES))]
    unexpected = [
        k
        for k in result.unexpected_keys
        if not (k.startswith(ENCODER_PREFIXES) and k.rsplit(".", 1)[-1] in REBUILT_BUFFERS)
    ]
    if missing or unexpected:
        raise RuntimeError(f"the weights do not fit the model: missing {missing[:6]}, unexpected {unexpected[:6]}")
