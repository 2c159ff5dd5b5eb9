"""The `entangle` component: runs the entanglement model once per batch and feeds
every downstream listener (ner, tagger, textcat, ...), like spacy-transformers'
`transformer` component."""
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate

from ..data import SIDES, EntangleData
from ..modeling.inference import check_inference_mode
from ..layers.listener import EntangleListener

DEFAULT_CONFIG = """
[model]
@architectures = "spacy-entangle.EntangleModel.v1"
char_backbone = "google/canine-s"
subword_backbone = "roberta-base"
n_coattention = 2
"""


LONG_DOC_CHARS = 1000  # store_attention warns above this: the maps grow with length squared


def install_extensions() -> None:
    if not Doc.has_extension("entangle"):
        Doc.set_extension("entangle", default=None)
    if not Doc.has_extension("entangle_attention"):
        Doc.set_extension("entangle_attention", default=None)


@dataclass
class _PendingBackward:
    """One training batch's forward pass, waiting for its listeners' gradients."""

    outputs: List[EntangleData]
    backprop: Callable[[List[EntangleData]], Any]
    sgd: Optional[Optimizer] = None
    grads: Dict[int, EntangleData] = field(default_factory=dict)

    @property
    def has_grads(self) -> bool:
        return bool(self.grads)

    def add(self, grads: List[EntangleData]) -> float:
        """Sum a listener's gradients into the batch's; returns their squared norm
        (summed on the device, read back once per call: no GPU sync per doc)."""
        norm: Any = 0.0
        for i, g in enumerate(grads):
            for side in SIDES:
                d = getattr(g, side)
                if d is None:
                    continue
                norm = norm + (d**2).sum()
                total = self.grads.setdefault(i, EntangleData(None, None, g.align))
                current = getattr(total, side)
                setattr(total, side, d if current is None else current + d)
        return float(norm)

    def full_grads(self) -> List[EntangleData]:
        return [self.grads.get(i, EntangleData(None, None, out.align)) for i, out in enumerate(self.outputs)]


def check_listeners(nlp: Language) -> None:
    """Refuse every EntangleListener in the pipeline whose upstream is not an
    `entangle` component before it (it would train on zeros, then fail to predict)."""
    names = nlp.component_names
    for position, (name, proc) in enumerate(nlp.components):
        model = getattr(proc, "model", None)
        if not isinstance(model, Model):
            continue
        for node in model.walk():
            if isinstance(node, EntangleListener):
                _check_upstream(nlp, names[:position], name, node.upstream_name)


def _check_upstream(nlp: Language, before: List[str], name: str, upstream: str) -> None:
    where = f"Component '{name}' listens to upstream = {upstream!r}"
    if upstream == "*":
        if not any(isinstance(nlp.get_pipe(n), Entangle) for n in before):
            raise ValueError(f"{where}, but no `entangle` component comes before it in the pipeline.")
        return
    if upstream not in nlp.component_names:
        raise ValueError(
            f"{where}, but the pipeline has no component named {upstream!r} "
            f"(components: {', '.join(nlp.component_names)})."
        )
    if not isinstance(nlp.get_pipe(upstream), Entangle):
        raise ValueError(f"{where}, which is a {type(nlp.get_pipe(upstream)).__name__}, not an `entangle` component.")
    if upstream not in before:
        raise ValueError(f"{where}, which comes after it in the pipeline: put {upstream!r} before {name!r}.")


@Language.factory(
    "entangle",
    default_config={
        "model": util.load_config_from_str(DEFAULT_CONFIG)["model"],
        "frozen": False,
        "store_output": True,
        "inference": "fp32",
        "store_attention": False,
    },
)
def make_entangle(
    nlp: Language, name: str, model: Model, frozen: bool, store_output: bool, inference: str,
    store_attention: bool,
) -> "Entangle":
    """The shared character + subword encoder. frozen = true: predict under no-grad
    and never step the optimizer (grad_factor = 0 is not freezing). store_output =
    false: ``doc._.entangle`` is dropped once every listener has read it. inference:
    how prediction runs, "fp32" (exact), "int8" (dynamic int8 quantization of the
    Linear layers, CPU) or "bf16" (bfloat16 autocast); training is always exact.
    store_attention = true: ``doc._.entangle_attention`` keeps each co-attention module's
    cross-attention maps (``python -m spacy_entangle explain`` draws them); off by default."""
    return Entangle(nlp.vocab, model, name, frozen=frozen, store_output=store_output, inference=inference,
                    store_attention=store_attention)


class Entangle(TrainablePipe):
    """Stores its per-doc output in ``doc._.entangle`` and broadcasts it to listeners."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "entangle",
        *,
        frozen: bool = False,
        store_output: bool = True,
        inference: str = "fp32",
        store_attention: bool = False,
    ):
        self.vocab = vocab
        self.model = model
        # a run-time setting from the config, not saved with the weights (cfg is)
        self.inference = check_inference_mode(inference)
        if model.shims:
            model.shims[0].set_inference(self.inference)
        self.store_attention = store_attention
        self.name = name
        self.cfg = {"frozen": frozen, "store_output": store_output}
        self.listener_map: Dict[str, List[EntangleListener]] = {}
        # training: the batch waiting for its backward pass; gradients not yet stepped
        self._pending: Optional[_PendingBackward] = None
        self._grads_waiting = False
        install_extensions()

    @property
    def store_attention(self) -> bool:
        """Keep the co-attention maps of each prediction in ``doc._.entangle_attention``
        (per window: pieces, characters, their doc offsets and tokens, and per module the
        head-averaged weights subword -> char and char -> subword; see
        ``layers.entangle_model.attention_maps``). A run-time setting: costs memory
        (n_pieces x n_chars floats per module and direction) and the fused attention."""
        return bool(self.model.shims and self.model.shims[0].store_attention)

    @store_attention.setter
    def store_attention(self, value: bool) -> None:
        if self.model.shims:
            self.model.shims[0].store_attention = bool(value)

    @property
    def frozen(self) -> bool:
        return bool(self.cfg.get("frozen"))

    # -- listeners -------------------------------------------------------------------
    @property
    def listeners(self) -> List[EntangleListener]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: EntangleListener, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        if self.model.has_dim("nO") and listener.has_dim("nO") is None:
            listener.set_dim("nO", self.model.get_dim("nO"))
        listener.connect(self.name)
        self._update_sides()

    def remove_listener(self, listener: EntangleListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            listener.connect(None)
            self._update_sides()
            return True
        return False

    def find_listeners(self, component) -> None:
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, EntangleListener) and node.upstream_name in names:
                    self.add_listener(node, component.name)

    def _update_sides(self) -> None:
        """Compute only what is read: a side no listener reads skips its last module."""
        wanted = {s for listener in self.listeners for s in listener.attrs["sides"]}
        self.model.attrs["sides"] = tuple(s for s in SIDES if s in wanted) or SIDES

    # -- prediction ----------------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        for batch in util.minibatch(stream, batch_size):
            batch = list(batch)
            self.set_annotations(batch, self.predict(batch))
            yield from batch

    def predict(self, docs: Iterable[Doc]) -> List[EntangleData]:
        docs = list(docs)
        if self.store_attention:
            long = [len(doc.text) for doc in docs if len(doc.text) > LONG_DOC_CHARS]
            if long:
                warnings.warn(
                    f"store_attention keeps n_pieces x n_chars weights per co-attention module and direction: "
                    f"{len(long)} doc(s) of up to {max(long):,} characters hold large maps (turn it off "
                    "for bulk processing)", stacklevel=2)
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], outputs: List[EntangleData]) -> None:
        readers = 0 if self.cfg.get("store_output", True) else len(self.listeners)
        for doc, data in zip(docs, outputs):
            data.readers_left = readers
            doc._.entangle = data
            if self.store_attention:
                doc._.entangle_attention = data.attention

    # -- training ------------------------------------------------------------------------
    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Run the model once and hand its output to every listener; the last
        listener's backprop call runs the one backward pass (and the optimizer step,
        with ``sgd`` or the optimizer ``finish_update`` got before it). A batch whose
        last listener never reported (its component excluded, frozen or with nothing
        to learn) runs its backward pass at ``finish_update`` or at the next update."""
        validate_examples(examples, "Entangle.update")
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        docs = [eg.predicted for eg in examples]
        batch_id = EntangleListener.get_batch_id(docs)
        if self.frozen:
            outputs = self.predict(docs)
            for listener in self.listeners:
                listener.receive(batch_id, outputs, lambda d: [])
            return losses
        self._run_backward()
        set_dropout_rate(self.model, drop)
        outputs, bp_outputs = self.model.begin_update(docs)
        pending = _PendingBackward(outputs, bp_outputs, sgd=sgd)
        self._pending = pending

        def accumulate_gradient(grads: List[EntangleData]) -> List[Doc]:
            losses[self.name] += pending.add(grads)
            return []

        def backprop(grads: List[EntangleData]) -> List[Doc]:
            accumulate_gradient(grads)
            if self._pending is pending:
                self._run_backward()
            return []

        listeners = self.listeners
        for listener in listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient)
        if listeners:
            listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """One optimizer step per batch. ``nlp.update(sgd=...)`` finishes each
        component right after its own update, before any listener has reported:
        the step then waits for the backward pass. ``spacy train`` finishes after
        every update: a backward pass still pending (the last listener's component
        did not update) runs here with the gradients handed back so far."""
        if self.frozen:
            return
        pending = self._pending
        if pending is not None and not pending.has_grads:
            pending.sgd = sgd
            return
        self._run_backward()
        if self._grads_waiting:
            self._step(sgd)

    def _run_backward(self) -> None:
        """The pending batch's one backward pass, with what its listeners handed
        back (nothing: no backward), then its optimizer step if it has one."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        for listener in self.listeners:
            if listener.holds(pending.outputs):
                listener.clear()  # a listener that never reported: free the graph
        if pending.has_grads:
            pending.backprop(pending.full_grads())
            self._grads_waiting = True
        if pending.sgd is not None and self._grads_waiting:
            self._step(pending.sgd)

    def _step(self, sgd: Optimizer) -> None:
        self.model.finish_update(sgd)
        self._grads_waiting = False

    def get_loss(self, examples, scores):  # pragma: no cover - no loss of its own
        return 0.0, None

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """Load both backbones (by name or local path), check and size the listeners."""
        self.model.initialize()
        if nlp is not None:
            check_listeners(nlp)
            for i, (name, proc) in enumerate(nlp.pipeline):
                if proc is self:
                    for _, proc2 in nlp.pipeline[i + 1 :]:
                        self.find_listeners(proc2)
                    break
        width = self.model.get_dim("nO")
        for listener in self.listeners:
            listener.set_dim("nO", width, force=True)

    # -- serialisation ---------------------------------------------------------------------
    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        serialize = {
            "cfg": lambda p: srsly.write_json(p, self.cfg),
            "vocab": lambda p: self.vocab.to_disk(p, exclude=exclude),
            "model": lambda p: self.model.to_disk(p),
        }
        util.to_disk(path, serialize, exclude)

    def _load_model(self, data: bytes, where: str) -> None:
        """model.from_bytes, with any failure naming this component and its file."""
        try:
            self.model.from_bytes(data)
        except Exception as err:  # noqa: BLE001 - re-raised naming the component
            raise ValueError(
                f"Cannot load the `{self.name}` component from {where} (damaged, truncated, or not "
                f"saved by spacy-entangle): {err}"
            ) from err

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Entangle":
        deserialize = {
            "cfg": lambda b: self.cfg.update(srsly.json_loads(b)),
            "vocab": lambda b: self.vocab.from_bytes(b, exclude=exclude),
            "model": lambda b: self._load_model(b, "bytes (nlp.from_bytes)"),
        }
        util.from_bytes(bytes_data, deserialize, exclude)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Entangle":
        def load_model(p: Path) -> None:
            with Path(p).open("rb") as file_:
                self._load_model(file_.read(), str(p))

        deserialize = {
            "cfg": lambda p: self.cfg.update(srsly.read_json(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
        }
        util.from_disk(path, deserialize, exclude)
        return self
