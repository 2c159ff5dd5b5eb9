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
from thinc.api import Model, Ragged
from thinc.types import Floats2d

from ..data import SIDES, EntangleData
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


# -- token pooling -----------------------------------------------------------------


def entangle_pool(side: str, pooling: Model[Ragged, Floats2d], grad_factor: float = 1.0) -> Model[List[EntangleData], List[Floats2d]]:
    """One vector per token: the token's rows on ``side`` reduced by ``pooling``
    (the paper: the first piece / first character). side="both" concatenates."""
    sides = side_names(side)
    return Model(
        "entangle-pool",
        pool_forward,
        layers=[pooling],
        attrs={"sides": sides, "grad_factor": grad_factor},
        dims={"nO": None},
        init=pool_init,
    )


def side_names(side: str) -> Tuple[str, ...]:
    if side == "both":
        return SIDES
    if side not in SIDES:
        raise ValueError(f"side must be 'subword', 'char' or 'both', got {side!r}")
    return (side,)


def pool_init(model: Model, X: Any = None, Y: Any = None) -> None:
    if X:
        for data in X:
            width = data.side(model.attrs["sides"][0]).shape[1]
            model.set_dim("nO", width * len(model.attrs["sides"]), force=True)
            break


def pool_forward(model: Model, datas: List[EntangleData], is_train: bool):
    ops = model.ops
    pooling = model.layers[0]
    grad_factor = model.attrs["grad_factor"]
    n_tokens = [len(d.align.subword_lengths) for d in datas]
    per_side = []
    callbacks = []
    for side in model.attrs["sides"]:
        Xs = [d.side(side) for d in datas]
        rows = [getattr(d.align, f"{side}_rows") for d in datas]
        lengths = [getattr(d.align, f"{side}_lengths") for d in datas]
        width = Xs[0].shape[1] if Xs else 0
        gathered = [X[ops.asarray(r, dtype="int32")] for X, r in zip(Xs, rows)]
        flat = ops.xp.concatenate(gathered, axis=0) if gathered else ops.alloc2f(0, width)
        all_lengths = ops.asarray1i(ops.xp.concatenate([ops.asarray1i(l) for l in lengths])) if lengths else ops.alloc1i(0)
        if flat.shape[0] == 0:
            Y = ops.alloc2f(0, width)
            bp_pool = None
        else:
            Y, bp_pool = pooling(Ragged(flat, all_lengths), is_train)
        per_side.append(Y)
        callbacks.append((side, Xs, rows, bp_pool, width))
    Y = per_side[0] if len(per_side) == 1 else ops.xp.hstack(per_side)
    outputs = _split(ops, Y, n_tokens)

    def backprop(dYs: List[Floats2d]) -> List[EntangleData]:
        dY = ops.xp.concatenate(dYs, axis=0) if dYs else ops.alloc2f(0, Y.shape[1])
        grads = [EntangleData(subword=None, char=None, align=d.align) for d in datas]
        col = 0
        for side, Xs, rows, bp_pool, width in callbacks:
            d_side = dY[:, col : col + width]
            col += width
            if bp_pool is None:
                continue
            d_flat = bp_pool(ops.xp.ascontiguousarray(d_side)).dataXd
            if grad_factor != 1.0:
                d_flat = d_flat * grad_factor
            start = 0
            for g, X, r in zip(grads, Xs, rows):
                dX = ops.alloc2f(*X.shape)
                n = len(r)
                if n:
                    ops.scatter_add(dX, ops.asarray1i(r), d_flat[start : start + n])
                start += n
                setattr(g, side, dX)
        return grads

    return outputs, backprop


def _split(ops, Y, sizes: List[int]) -> List[Floats2d]:
    out, start = [], 0
    for n in sizes:
        out.append(Y[start : start + n])
        start += n
    return out


# -- replace_listeners support ------------------------------------------------------


def replace_listener(model: Model, listener: Model, component: Any) -> Model:
    """`nlp.replace_listeners`: the copied EntangleModel takes the listener's place
    (it emits the same List[EntangleData]) and computes what that listener reads."""
    model.attrs["sides"] = tuple(listener.attrs.get("sides", SIDES))
    return model


def replace_listener_cfg(tok2vec_model_cfg, listener_model_cfg):
    """The config of the standalone replacement: EntangleModel's settings plus the
    listener's side / pooling / grad_factor, as `spacy-entangle.EntangleTok2Vec.v1`."""
    result = dict(tok2vec_model_cfg)
    if "EntangleListener" in listener_model_cfg.get("@architectures", ""):
        result["@architectures"] = "spacy-entangle.EntangleTok2Vec.v1"
        for key in ("side", "pooling", "grad_factor"):
            if key in listener_model_cfg:
                result[key] = listener_model_cfg[key]
    return result
