"""The listener: downstream components (ner, tagger, textcat, ...) read the
`entangle` component's output through it, one row per spaCy token.

Unlike spacy-transformers' listener, a missing upstream output is an error, not a
matrix of zeros (that silently ruins predictions when the upstream component is
disabled). Zeros are only produced for the very docs that the listening
component's ``initialize`` infers shapes on (before the upstream component has
run on them); that state is a plain attribute of weak references, so it is
never serialised and cannot outlive ``nlp.initialize``.
"""
import weakref
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from thinc.api import Model

from ..data import EntangleData
from ..tokenization.batch import DocAlignment


class _InitDocs:
    """The docs a listening component's initialize infers shapes on: weak
    references (gone with the docs), and left behind by pickle and deepcopy."""

    def __init__(self, docs: Iterable[Doc] = ()):
        self._docs: "weakref.WeakSet[Doc]" = weakref.WeakSet(docs)

    def __contains__(self, doc: Doc) -> bool:
        return doc in self._docs

    def clear(self) -> None:
        self._docs.clear()

    def __reduce__(self) -> Tuple[type, tuple]:
        return (_InitDocs, ())


class EntangleListener(Model):
    """Receives the upstream component's batch output during training and reads
    ``doc._.entangle`` at prediction time."""

    name = "entangle-listener"

    def __init__(self, upstream_name: str, sides: Sequence[str]):
        Model.__init__(self, name=self.name, forward=listener_forward, init=listener_init, dims={"nO": None})
        self.upstream_name = upstream_name
        self.attrs["sides"] = tuple(sides)
        # the `entangle` component that feeds this listener (set by its add_listener)
        self.connected_to: Optional[str] = None
        # the docs the component's initialize infers shapes on: only they may read zeros
        self._init_docs = _InitDocs()
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[EntangleData]] = None
        self._backprop: Optional[Callable] = None

    @property
    def source_name(self) -> str:
        """The upstream component's name, for error messages ("*" resolved when known)."""
        return self.connected_to or self.upstream_name

    @classmethod
    def get_batch_id(cls, docs: List[Doc]) -> int:
        return sum(sum(token.orth for token in doc) for doc in docs)

    def connect(self, component_name: Optional[str]) -> None:
        """Called by the `entangle` component that (dis)connects this listener; a
        (re)connection also ends any shape inference (``nlp.initialize`` re-links
        every listener when it is done)."""
        self.connected_to = component_name
        self._init_docs.clear()

    def receive(self, batch_id: int, outputs: List[EntangleData], backprop: Callable) -> None:
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop
        self._init_docs.clear()

    def holds(self, outputs: List[EntangleData]) -> bool:
        """Whether this listener still holds (has not consumed) these outputs."""
        return self._outputs is outputs

    def clear(self) -> None:
        """Drop the received batch (and the graph it keeps alive)."""
        self._batch_id = None
        self._outputs = None
        self._backprop = None

    def backprop_and_clear(self, d_outputs: List[EntangleData]) -> Any:
        result = self._backprop(d_outputs) if self._backprop is not None else None
        self.clear()
        return result


def listener_init(model: EntangleListener, X: Optional[List[Doc]] = None, Y: Any = None) -> None:
    """Shape inference by nlp.initialize runs before the upstream component has
    produced anything: remember these docs, the only ones that may read zeros. A
    listener no `entangle` component ever connected is a configuration error."""
    if model.connected_to is None:
        raise ValueError(
            f"This EntangleListener (upstream = {model.upstream_name!r}) is not connected to an "
            "`entangle` component: the pipeline needs an `entangle` component named "
            f"{model.upstream_name!r} (or any, for '*') BEFORE the component that listens to it."
        )
    model._init_docs = _InitDocs(X or [])


def listener_forward(model: EntangleListener, docs: List[Doc], is_train: bool):
    if is_train and model._batch_id is not None:
        batch_id = model.get_batch_id(docs)
        if batch_id != model._batch_id:
            raise ValueError(
                f"EntangleListener received the output of another batch ({model._batch_id} vs "
                f"{batch_id}): the `{model.source_name}` component must run on the same docs"
            )
        return model._outputs, model.backprop_and_clear
    outputs = []
    for doc in docs:
        data = doc._.entangle if doc.has_extension("entangle") else None
        if data is None:
            if doc in model._init_docs:
                outputs.append(_zeros(model, doc))
                continue
            raise ValueError(
                f"No output from the upstream component '{model.source_name}' on this doc "
                "(doc._.entangle is None). Is it disabled, excluded from nlp.update (or frozen "
                "and not in [training] annotating_components), or after this component in the "
                "pipeline? A listener never substitutes zeros."
            )
        model._init_docs.clear()
        outputs.append(data)
        if data.readers_left > 0:
            data.readers_left -= 1
            if data.readers_left == 0:
                doc._.entangle = None
    return outputs, lambda d: []


def _zeros(model: EntangleListener, doc: Doc) -> EntangleData:
    import numpy

    width = model.get_dim("nO") if model.has_dim("nO") else 1
    n = len(doc)
    ones = numpy.ones(n, dtype="int32")
    zeros_idx = numpy.zeros(n, dtype="int32")
    align = DocAlignment(1, 1, ones, zeros_idx, ones.copy(), zeros_idx.copy(), [(0, 0)])
    return EntangleData(model.ops.alloc2f(1, width), model.ops.alloc2f(1, width), align)
