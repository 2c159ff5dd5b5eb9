"""The `entangle` component: runs the entanglement model once per batch and feeds
every downstream listener (ner, tagger, textcat, ...), like spacy-transformers'
`transformer` component."""
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Union

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate

from ..data import SIDES, EntangleData
from ..layers.listener import EntangleListener

DEFAULT_CONFIG = """
[model]
@architectures = "spacy-entangle.EntangleModel.v1"
char_backbone = "google/canine-s"
subword_backbone = "roberta-base"
n_coattention = 2
"""


def install_extensions() -> None:
    if not Doc.has_extension("entangle"):
        Doc.set_extension("entangle", default=None)


@Language.factory(
    "entangle",
    default_config={
        "model": util.load_config_from_str(DEFAULT_CONFIG)["model"],
        "frozen": False,
        "store_output": True,
    },
)
def make_entangle(nlp: Language, name: str, model: Model, frozen: bool, store_output: bool) -> "Entangle":
    """The shared character + subword encoder. frozen = true: predict under no-grad
    and never step the optimizer (grad_factor = 0 is not freezing). store_output =
    false: ``doc._.entangle`` is dropped once every listener has read it."""
    return Entangle(nlp.vocab, model, name, frozen=frozen, store_output=store_output)


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
    ):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg = {"frozen": frozen, "store_output": store_output}
        self.listener_map: Dict[str, List[EntangleListener]] = {}
        install_extensions()

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
        self._update_sides()

    def remove_listener(self, listener: EntangleListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
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
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], outputs: List[EntangleData]) -> None:
        readers = 0 if self.cfg.get("store_output", True) else len(self.listeners)
        for doc, data in zip(docs, outputs):
            data.readers_left = readers
            doc._.entangle = data

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
        listener's backprop call runs the one backward pass (and the optimizer)."""
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
        set_dropout_rate(self.model, drop)
        outputs, bp_outputs = self.model.begin_update(docs)
        d_outputs: List[Optional[EntangleData]] = [None] * len(outputs)

        def accumulate_gradient(grads: List[EntangleData]) -> List[Doc]:
            for i, g in enumerate(grads):
                for side in SIDES:
                    d = getattr(g, side)
                    if d is None:
                        continue
                    losses[self.name] += float((d**2).sum())
                    if d_outputs[i] is None:
                        d_outputs[i] = EntangleData(None, None, g.align)
                    current = getattr(d_outputs[i], side)
                    setattr(d_outputs[i], side, d if current is None else current + d)
            return []

        def backprop(grads: List[EntangleData]) -> List[Doc]:
            accumulate_gradient(grads)
            full = [
                g if g is not None else EntangleData(None, None, out.align)
                for g, out in zip(d_outputs, outputs)
            ]
            bp_outputs(full)
            if sgd is not None:
                self.finish_update(sgd)
            return []

        listeners = self.listeners
        for listener in listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient)
        if listeners:
            listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        if not self.frozen:
            self.model.finish_update(sgd)

    def get_loss(self, examples, scores):  # pragma: no cover - no loss of its own
        return 0.0, None

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """Load both backbones (by name or local path) and size the listeners."""
        self.model.initialize()
        if nlp is not None:
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

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Entangle":
        def load_model(p: Path) -> None:
            with Path(p).open("rb") as file_:
                self.model.from_bytes(file_.read())

        deserialize = {
            "cfg": lambda p: self.cfg.update(srsly.read_json(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
        }
        util.from_disk(path, deserialize, exclude)
        return self
