"""The listener: downstream components (ner, tagger, textcat, ...) read the
`entangle` component's output through it, one row per spaCy token.

At prediction a listener reads its own upstream component's :class:`OutputStore`
(keyed by component: with two `entangle` components each listener reads the one it
names, as in training), and otherwise what that same component kept on the doc
(``store_output = true``: ``doc._.entangle``, or ``doc._.entangle_others`` when another
`entangle` component ran after it), so a processed doc can be read again.

Unlike spacy-transformers' listener, a missing upstream output is an error, not a
matrix of zeros (that silently ruins predictions when the upstream component is
disabled). Zeros are only produced for the very docs that the listening
component's ``initialize`` infers shapes on (before the upstream component has
run on them); that state is a plain attribute of weak references, so it is
never serialised and cannot outlive ``nlp.initialize``. The one other case is spaCy's
``debug model`` command, which runs a listening component alone on docs no upstream
component has seen: while (and only while) its ``debug_model`` function is on the call
stack, a listener asks its upstream component to compute them.

States are read by token position, so a listener reads only the states of the doc as it is
now, from its own upstream: the states record the tokens they were computed for and the
model that computed them (``EntangleData.mismatch``). States of a doc retokenized since
(``merge_entities`` between `entangle` and the listener), or made by another pipeline's
component of the same name (``store_output = true``, docs passed between pipelines), are
recomputed by the upstream component while it is in its pipeline (with a warning: the
encoder runs again), and are otherwise a clear error naming the component that retokenized;
never rows shifted onto other tokens.
"""

import sys
import warnings
import weakref
from collections import Counter
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, cast

from spacy.tokens import Doc
from thinc.api import Model

from ..data import EntangleData, kept_output
from ..tokenization.alignment import DocAlignment
from .contract import get_sides, set_sides


class _InitDocs:
    """The docs a listening component's initialize infers shapes on: weak
    references (gone with the docs), and left behind by pickle and deepcopy."""

    def __init__(self, docs: Iterable[Doc] = ()):
        self._docs: weakref.WeakSet[Doc] = weakref.WeakSet(docs)

    def __contains__(self, doc: Doc) -> bool:
        return doc in self._docs

    def clear(self) -> None:
        self._docs.clear()

    def __reduce__(self) -> Tuple[type, tuple]:
        return (_InitDocs, ())


def no_backprop(d_outputs: Any) -> List[Doc]:
    """The backprop of an output no gradient flows from (prediction, a frozen upstream):
    a named function, not a lambda, so a model holding it still pickles (as spaCy does)."""
    return []


class OutputStore:
    """One `entangle` component's per-doc outputs at prediction, for its listeners.

    Weakly keyed by doc and never in the doc: what nobody reads is never serialised,
    pickled, sent to another process or kept alive by a kept doc. Each entry is dropped
    once every listener expected to read it has; a batch no listener reads keeps nothing.
    A copy or pickle is empty (the states belong to the docs of this process)."""

    def __init__(self, component: Any = None) -> None:
        self._entries: weakref.WeakKeyDictionary[Doc, Tuple[EntangleData, Counter[int]]] = weakref.WeakKeyDictionary()
        # the `entangle` component it belongs to (weakly), for spaCy's `debug model` only
        self._component = weakref.ref(component) if component is not None else None

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, doc: Doc) -> bool:
        return doc in self._entries

    def put(self, doc: Doc, data: EntangleData, readers: Iterable[Model], times: int = 1) -> None:
        """Keep ``data`` for each of ``readers``, ``times`` reads each (a doc that occurs
        ``times`` times in the batch is read that often); replaces an earlier entry."""
        waiting = Counter({id(reader): times for reader in readers})
        if waiting and times > 0:
            self._entries[doc] = (data, waiting)
        else:
            self._entries.pop(doc, None)

    def read(self, doc: Doc, reader: Model) -> Optional[EntangleData]:
        """The doc's output; the last expected read drops it."""
        entry = self._entries.get(doc)
        if entry is None:
            return None
        data, waiting = entry
        key = id(reader)
        if key in waiting:
            waiting[key] -= 1
            if waiting[key] <= 0:
                del waiting[key]
        if not waiting:
            del self._entries[doc]
        return data

    def drop(self, docs: Iterable[Doc]) -> None:
        for doc in docs:
            self._entries.pop(doc, None)

    def compute(self, docs: List[Doc]) -> Optional[List[EntangleData]]:
        """The component's prediction on ``docs`` (None when it is gone)."""
        component = self.owner()
        return None if component is None else component.predict(docs)

    def bind(self, component: Any) -> None:
        """Belong to ``component`` when the store knows none (a copy or pickle is made empty)."""
        if self.owner() is None:
            self._component = weakref.ref(component)

    def owner(self) -> Any:
        """The `entangle` component this store belongs to (None: gone, or a copy's store)."""
        return self._component() if self._component is not None else None

    def refresh(self, doc: Doc, data: EntangleData) -> None:
        """Put recomputed states in place of a doc's entry that listeners still wait for."""
        entry = self._entries.get(doc)
        if entry is not None:
            self._entries[doc] = (data, entry[1])

    def __reduce__(self) -> Tuple[type, tuple]:
        return (OutputStore, ())


class EntangleListener(Model):
    """Receives the upstream component's batch output during training and reads
    its upstream's :class:`OutputStore` at prediction time."""

    name = "entangle-listener"

    def __init__(self, upstream_name: str, sides: Sequence[str]):
        Model.__init__(self, name=self.name, forward=listener_forward, init=listener_init, dims={"nO": None})
        self.upstream_name = upstream_name
        set_sides(self, sides)
        # the `entangle` component that feeds this listener and its outputs at
        # prediction (set by its add_listener)
        self.connected_to: Optional[str] = None
        self._store: Optional[OutputStore] = None
        self._pipeline: Optional[Callable[[], Any]] = None
        # the docs the component's initialize infers shapes on: only they may read zeros
        self._init_docs = _InitDocs()
        self._noted_debug_model = False
        self._noted_recompute = False
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

    def connect(
        self,
        component_name: Optional[str],
        store: Optional[OutputStore] = None,
        pipeline: Optional[Callable[[], Any]] = None,
    ) -> None:
        """Called by the `entangle` component that (dis)connects this listener; a
        (re)connection also ends any shape inference (``nlp.initialize`` re-links
        every listener when it is done). ``pipeline``: a weak reference to the pipeline they
        run in (its errors name the components around them)."""
        self.connected_to = component_name
        self._store = store
        self._pipeline = pipeline
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


def listener_forward(
    model: EntangleListener, docs: List[Doc], is_train: bool
) -> Tuple[List[EntangleData], Callable[[Any], List[Doc]]]:
    # receive() sets the batch id and its outputs together
    if is_train and model._batch_id is not None and model._outputs is not None:
        batch_id = model.get_batch_id(docs)
        if batch_id != model._batch_id:
            raise ValueError(
                f"EntangleListener received the output of another batch ({model._batch_id} vs "
                f"{batch_id}): the `{model.source_name}` component must run on the same docs"
            )
        return model._outputs, model.backprop_and_clear
    outputs: List[Optional[EntangleData]] = []
    read: List[int] = []  # the outputs read from the upstream (not shape inference's zeros)
    for i, doc in enumerate(docs):
        data = _read(model, doc)
        if data is None and doc in model._init_docs:
            data = _zeros(model, doc)
        elif data is not None:
            model._init_docs.clear()
            read.append(i)
        outputs.append(data)
    _replace_stale(model, docs, outputs, read)
    missing = [i for i, data in enumerate(outputs) if data is None]
    if missing:
        computed = _debug_model_outputs(model, [docs[i] for i in missing])
        if computed is None:
            raise ValueError(
                f"No output from the upstream component '{model.source_name}' on this doc. Is it "
                "disabled, excluded from nlp.update (or frozen and not in [training] "
                "annotating_components), or after this component in the pipeline? Or was this doc "
                "read before (its states are dropped once every listener has read them unless the "
                "component has store_output = true)? A listener never substitutes zeros."
            )
        for i, data in zip(missing, computed):
            outputs[i] = data
    return cast(List[EntangleData], outputs), no_backprop  # no None is left


def _replace_stale(
    model: EntangleListener, docs: List[Doc], outputs: List[Optional[EntangleData]], read: List[int]
) -> None:
    """Replace, in place, each output of ``read`` that is not its doc's states now
    (``EntangleData.mismatch``) by the upstream component's states recomputed on those docs;
    an error when the upstream cannot recompute them (gone, or removed from its pipeline)."""
    store = model._store
    owner = store.owner() if store is not None else None
    made_by = owner.made_by if owner is not None else None
    sides = get_sides(model)
    stale = [(i, found) for i in read if (found := cast(EntangleData, outputs[i]).mismatch(docs[i], made_by, sides))]
    if not stale:
        return
    nlp = model._pipeline() if model._pipeline is not None else None
    reader, first = _reader(nlp, model), stale[0][1]
    why = f"{first}{_retokenizers(nlp, model, owner, reader) if first.kind == 'tokens' else ''}"
    source, who = f"`{model.source_name}`", f"`{reader}`" if reader else f"A listener of `{model.source_name}`"
    fresh = owner.restate([docs[i] for i, _ in stale]) if owner is not None and owner.can_restate else None
    if fresh is None:
        raise ValueError(
            f"{who} cannot read the states of {source} on this doc: {why}. It reads rows by token position, "
            f"so these rows belong to other tokens, and the {source} component that would recompute them is "
            "not in the pipeline. Run it on the doc again (after any retokenizer), or put the retokenizer "
            "before it or after its listeners."
        )
    if not model._noted_recompute:
        warnings.warn(
            f"spacy-entangle: {why}: {source} recomputes its states for {who} on such docs (its encoder runs "
            "again on them). Put a retokenizer before it or after its listeners, or run this pipeline's "
            f"{source} on the doc, to avoid the cost.",
            UserWarning,
            stacklevel=2,
        )
        model._noted_recompute = True
    for (i, _), data in zip(stale, fresh):
        outputs[i] = data


def _reader(nlp: Any, model: EntangleListener) -> Optional[str]:
    """The name of the component whose model holds this listener (None: not known)."""
    if nlp is None:
        return None
    for name, proc in nlp.components:
        if isinstance(getattr(proc, "model", None), Model) and any(node is model for node in proc.model.walk()):
            return name
    return None


def _retokenizers(nlp: Any, model: EntangleListener, owner: Any, reader: Optional[str]) -> str:
    """A clause naming the components between the upstream ``owner`` (or the pipeline's start,
    when it is gone) and the ``reader`` that declare that they retokenize (spaCy's
    ``retokenizes``), or saying that none does ("" when the pipeline is not known)."""
    if nlp is None:
        return ""
    names = [name for name, _ in nlp.components]
    start = next((k for k, (_, proc) in enumerate(nlp.components) if owner is not None and proc is owner), -1)
    between = names[start + 1 : names.index(reader) if reader in names else len(names)]
    retokenizers = [name for name in between if nlp.get_pipe_meta(name).retokenizes]
    source, target = f"`{model.source_name}`", f"`{reader}`" if reader else "this listener"
    if retokenizers:
        return f" (`{'`, `'.join(retokenizers)}` retokenizes docs between {source} and {target})"
    ran = f": {', '.join(f'`{name}`' for name in between)} ran between them" if between else ""
    return (
        f" (no component between {source} and {target} declares that it retokenizes{ran}; "
        "was `doc.retokenize()` called on the doc?)"
    )


def _debug_model_outputs(model: EntangleListener, docs: List[Doc]) -> Optional[List[EntangleData]]:
    """spaCy's `debug model` initializes the pipeline, then updates and predicts with one
    component on fresh docs; it runs the upstream's update first only for tok2vec and
    spacy-transformers listeners (by name), so no upstream output exists. There, and only
    there, the upstream component predicts them (no gradient reaches it); None elsewhere."""
    if model._store is None or not _under_spacy_debug_model():
        return None
    if not model._noted_debug_model:
        from wasabi import msg

        msg.info(
            f"spacy-entangle: the listener computes the '{model.source_name}' component's output "
            "on the docs `debug model` passes it (predicted, no gradient to that component)"
        )
        model._noted_debug_model = True
    return model._store.compute(docs)


def _under_spacy_debug_model() -> bool:
    """Whether spaCy's ``debug_model`` (spacy/cli/debug_model.py) is on the call stack."""
    module = sys.modules.get("spacy.cli.debug_model")
    target = getattr(getattr(module, "debug_model", None), "__code__", None)
    frame = sys._getframe(1) if target is not None else None
    while frame is not None:
        if frame.f_code is target:
            return True
        frame = frame.f_back
    return False


def _read(model: EntangleListener, doc: Doc) -> Optional[EntangleData]:
    """The upstream component's output on ``doc``: from its store, else what that same
    component kept on the doc with store_output = true (another component's states are
    not ours)."""
    data = model._store.read(doc, model) if model._store is not None else None
    if data is not None:
        return data
    return kept_output(doc, model.connected_to or (None if model.upstream_name == "*" else model.upstream_name))


def _zeros(model: EntangleListener, doc: Doc) -> EntangleData:
    import numpy

    width = model.get_dim("nO") if model.has_dim("nO") else 1
    n = len(doc)
    ones = numpy.ones(n, dtype="int32")
    zeros_idx = numpy.zeros(n, dtype="int32")
    align = DocAlignment(1, 1, ones, zeros_idx, ones.copy(), zeros_idx.copy(), [(0, 0)])
    return EntangleData(model.ops.alloc2f(1, width), model.ops.alloc2f(1, width), align)
