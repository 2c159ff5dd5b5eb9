"""What the `entangle` component stores per doc (``doc._.entangle``) and sends to listeners,
and how a token reads its rows of it (pooling, shared by the listeners' layers and
``EntangleData.token_vectors``: this module sits below layers/ and imports nothing from it)."""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, cast

import numpy
import srsly
from spacy.tokens import Doc
from thinc.api import Model, Ops, Ragged, reduce_first, reduce_mean, use_ops
from thinc.backends import get_array_ops
from thinc.types import Floats2d, Ints1d

from .tokenization.alignment import DocAlignment

SIDES = ("subword", "char")
# what a listener reads: one side, or both concatenated (subword ‖ char)
Side = Literal["subword", "char", "both"]
# how side = "both" joins a token's two vectors: concatenated, or mixed by a learned gate
Combine = Literal["concat", "gate"]
# how a token's rows on a side become one vector: its first row (the paper) or their mean
Pooling = Literal["first", "mean"]


def side_names(side: str) -> Tuple[str, ...]:
    """The sides a listener on ``side`` reads (a bad name is a config error)."""
    if side == "both":
        return SIDES
    if side not in SIDES:
        raise ValueError(f"side must be 'subword', 'char' or 'both', got {side!r}")
    return (side,)


@dataclass
class EntangleData:
    """One doc's encoder output.

    subword: (n_subword_rows, width) states of every window's pieces, specials included.
    char: (n_char_rows, width) states of every window's characters, specials included.
    Either is None when no listener reads that side (it was not computed).
    align: where each spaCy token reads its rows on each side.
    A prediction whose output is not kept on the doc (store_output = false) holds only the
    rows its listeners read (each token's rows, or its first row: the entangle model's
    ``keep_rows``), with ``align`` indexing those and no ``window_rows``.
    """

    subword: Optional[Floats2d]
    char: Optional[Floats2d]
    align: DocAlignment
    # the `entangle` component that computed it: a listener reads only its own upstream's
    source: Optional[str] = None
    # which weights and window settings computed it (the component's ``made_by``): states of
    # another pipeline's component of the same name are not this one's (None: not recorded)
    made_by: Optional[str] = None
    # store_attention: the co-attention maps of each window (pipeline.attention.label_window); not saved
    # (layers.entangle_model.WindowAttention as computed, a dict once labelled)
    attention: Optional[List[Any]] = None

    def side(self, name: str) -> Floats2d:
        value = getattr(self, name)
        if value is None:
            raise ValueError(
                f"The '{name}' side of the entangle output was not computed: no listener "
                f"of the upstream `entangle` component asked for it. Listen to side='{name}' "
                "or set the entangle model's `sides` to include it."
            )
        return value

    def token_vectors(self, side: Side = "subword", pooling: Pooling = "mean") -> Floats2d:
        """One vector per spaCy token, (n_tokens, width), or (n_tokens, 2 x width) for
        side="both" (subword ‖ char): the token's rows on ``side`` pooled as a listener
        with that ``pooling`` ("first" | "mean") pools them."""
        return pooled_token_vectors([self], side, pooling)[0]

    def to_dict(self) -> Dict[str, Any]:
        """Plain numpy arrays (for msgpack, Doc.to_bytes, DocBin)."""
        from thinc.api import to_numpy

        def np(x: Optional[Floats2d]) -> Optional[numpy.ndarray]:
            return None if x is None else to_numpy(x)

        a = self.align
        return {
            "source": self.source,
            "made_by": self.made_by,
            "subword": np(self.subword),
            "char": np(self.char),
            "align": {
                "n_subword_rows": a.n_subword_rows,
                "n_char_rows": a.n_char_rows,
                "subword_lengths": a.subword_lengths,
                "subword_rows": a.subword_rows,
                "char_lengths": a.char_lengths,
                "char_rows": a.char_rows,
                "window_rows": [list(w) for w in a.window_rows],
                "tokens": a.tokens,
            },
        }

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "EntangleData":
        a = dict(msg["align"])
        a["window_rows"] = [tuple(w) for w in a["window_rows"]]
        for key in ("subword_lengths", "subword_rows", "char_lengths", "char_rows"):
            a[key] = numpy.asarray(a[key], dtype="int32")
        return cls(
            subword=msg["subword"],
            char=msg["char"],
            align=DocAlignment(**a),
            source=msg.get("source"),
            made_by=msg.get("made_by"),
        )

    def mismatch(self, doc: Doc, made_by: Optional[str], sides: Sequence[str] = ()) -> Optional["Mismatch"]:
        """Why these states are not ``doc``'s as the component whose ``made_by`` is given
        computes them now (None: they are): the doc's tokens changed since (a retokenizer),
        another model or pipeline made them, or a side in ``sides`` was not computed. A reader
        that reads rows by token position must not use them then."""
        align, source = self.align, f"`{self.source}`" if self.source else "the `entangle` component"
        if align.tokens is None or self.made_by is None:
            return Mismatch(
                "unrecorded",
                f"the states {source} kept on the doc record neither the tokens nor the model they were "
                "computed for (kept by an older spacy-entangle)",
            )
        if not align.fits(doc):
            return Mismatch(
                "tokens",
                f"the doc's tokens changed after {source} computed its states ({align.n_tokens} tokens "
                f"then, {len(doc)} now)",
            )
        if made_by is not None and self.made_by != made_by:
            return Mismatch(
                "model",
                f"the states on the doc were computed by another pipeline or model ({source} of another "
                "pipeline, other weights or other window settings)",
            )
        missing = [side for side in sides if getattr(self, side) is None]
        if missing:
            return Mismatch("sides", f"the states on the doc lack the {' and '.join(missing)} side")
        return None


@dataclass(frozen=True)
class Mismatch:
    """Why states are not a doc's own now (``EntangleData.mismatch``): kind "tokens" (the doc
    was retokenized since), "model" (another pipeline's or model's states), "sides" (a side
    not computed) or "unrecorded" (states kept before their identity was recorded)."""

    kind: Literal["tokens", "model", "sides", "unrecorded"]
    text: str

    def __str__(self) -> str:
        return self.text


# the pooling layers by name (token vectors outside a listener: EntangleData.token_vectors, doc.tensor)
POOLERS: Dict[str, Callable[[], Model[Ragged, Floats2d]]] = {"first": reduce_first, "mean": reduce_mean}


# tokens pooled at a time at prediction: a long doc's pooled vectors are written block by
# block into one array (the gathered rows of a 1M-character doc were three copies of its states)
POOL_BLOCK = 16384


def pool_token_rows(
    ops: Ops,
    datas: Sequence[EntangleData],
    sides: Sequence[str],
    reduce: Callable[[str, Ragged], Floats2d],
    block: Optional[int] = None,
) -> List[Floats2d]:
    """One vector per token of each doc: per side, the tokens' rows (tokens in doc order,
    docs in batch order) gathered into a Ragged that ``reduce`` pools, written into the
    side's columns of one array (subword ‖ char); each doc's vectors are a view of it.
    block: pool at most that many tokens per ``reduce`` call (None: each side in one call,
    as a backward pass needs). ``reduce`` is not called for a side with no rows."""
    lengths = {side: [numpy.asarray(getattr(d.align, f"{side}_lengths")) for d in datas] for side in sides}
    n_tokens = [len(d.align.subword_lengths) for d in datas]
    total = sum(n_tokens)
    widths = [datas[0].side(side).shape[1] if datas else 0 for side in sides]
    Y: Optional[Floats2d] = None
    col = 0
    for side, width in zip(sides, widths):
        for start, pieces in _token_blocks(n_tokens, block or max(total, 1)):
            parts = [_token_rows(ops, datas[d], side, lengths[side][d], a, b) for d, a, b in pieces]
            flat = ops.xp.concatenate([rows for rows, _ in parts], axis=0)
            if flat.shape[0] == 0:
                continue
            pooled = reduce(side, Ragged(flat, ops.asarray1i(cast(Ints1d, numpy.concatenate([n for _, n in parts])))))
            if len(sides) == 1 and pooled.shape[0] == total:
                Y = pooled  # one side in one call: its output as it is
                break
            if Y is None:
                Y = ops.alloc2f(total, sum(widths))
            Y[start : start + pooled.shape[0], col : col + width] = pooled
        col += width
    if Y is None:
        Y = ops.alloc2f(total, sum(widths))
    out, start = [], 0
    for n in n_tokens:
        out.append(Y[start : start + n])
        start += n
    return out


def _token_blocks(n_tokens: Sequence[int], block: int) -> Iterator[Tuple[int, List[Tuple[int, int, int]]]]:
    """Blocks of at most ``block`` tokens across the docs: each block's first token (counted
    over the batch) and its (doc, first token, end token) pieces."""
    pieces: List[Tuple[int, int, int]] = []
    start = size = 0
    for d, n in enumerate(n_tokens):
        a = 0
        while a < n:
            b = min(n, a + block - size)
            pieces.append((d, a, b))
            size += b - a
            a = b
            if size == block:
                yield start, pieces
                start, pieces, size = start + size, [], 0
    if pieces:
        yield start, pieces


def _token_rows(
    ops: Ops, data: EntangleData, side: str, lengths: numpy.ndarray, a: int, b: int
) -> Tuple[Floats2d, numpy.ndarray]:
    """The rows tokens a..b of one doc read on ``side`` (gathered), and their lengths."""
    rows = numpy.asarray(getattr(data.align, f"{side}_rows"))
    first = int(lengths[:a].sum())
    last = first + int(lengths[a:b].sum())
    return data.side(side)[ops.asarray(cast(Ints1d, rows[first:last]), dtype="int32")], lengths[a:b]


def pooled_token_vectors(datas: List[EntangleData], side: Side, pooling: Pooling) -> List[Floats2d]:
    """One row per token of each doc, as a listener on ``side`` with ``pooling`` reads it
    (the same thinc layer, predicted: no gradient). The ops follow the states' arrays, so
    states on the CPU pool on the CPU whatever the current device."""
    if pooling not in POOLERS:
        raise ValueError(f"pooling must be one of {', '.join(map(repr, POOLERS))}, got {pooling!r}")
    sides = side_names(side)
    if not datas:
        return []
    ops = get_array_ops(datas[0].side(sides[0]))
    with use_ops(ops.name):
        layer = POOLERS[pooling]()
    return pool_token_rows(ops, datas, sides, lambda _, rows: layer.predict(rows), POOL_BLOCK)


# -- kept on the doc (store_output = true) ---------------------------------------------------


def install_doc_extensions() -> None:
    """``doc._.entangle``: the output of the last `entangle` component (store_output = true)
    that ran on the doc; ``doc._.entangle_others``: the outputs it replaced from other
    `entangle` components, by component name (so each is kept, and saved, once)."""
    for name in ("entangle", "entangle_others"):
        if not Doc.has_extension(name):
            Doc.set_extension(name, default=None)


def keep_output(doc: Doc, data: EntangleData) -> None:
    """Keep ``data`` (computed by ``data.source``) on the doc: in ``doc._.entangle``, where an
    output of another component moves to ``doc._.entangle_others`` (a listener of that
    component still reads it)."""
    install_doc_extensions()
    previous: Optional[EntangleData] = doc._.entangle
    others: Dict[str, EntangleData] = dict(doc._.entangle_others or {})
    if previous is not None and previous.source is not None and previous.source != data.source:
        others[previous.source] = previous
    if data.source is not None:
        others.pop(data.source, None)
    doc._.entangle = data
    doc._.entangle_others = others or None


def kept_output(doc: Doc, source: Optional[str]) -> Optional[EntangleData]:
    """The output the `entangle` component named ``source`` kept on ``doc`` (None: it kept
    none; another component's is never returned). source None (a listener on "*" not
    linked to a component): whatever ``doc._.entangle`` holds. An output that names no
    component (kept before outputs named theirs) is any component's."""
    if not doc.has_extension("entangle"):
        return None
    latest: Optional[EntangleData] = doc._.entangle
    if latest is not None and (source is None or latest.source in (None, source)):
        return latest
    others = doc._.entangle_others if doc.has_extension("entangle_others") else None
    return others.get(source) if others and source is not None else None


def drop_kept_outputs(doc: Doc) -> None:
    """Forget every output kept on ``doc``."""
    for name in ("entangle", "entangle_others"):
        if doc.has_extension(name) and doc._.get(name) is not None:
            doc._.set(name, None)


@srsly.msgpack_encoders("spacy_entangle_data")
def serialize_entangle_data(obj: Any, chain: Optional[Callable] = None) -> Any:
    """Doc.to_bytes / DocBin(store_user_data=True) keep doc._.entangle."""
    if isinstance(obj, EntangleData):
        return {"__spacy_entangle_data__": obj.to_dict()}
    return obj if chain is None else chain(obj)


@srsly.msgpack_decoders("spacy_entangle_data")
def deserialize_entangle_data(obj: Any, chain: Optional[Callable] = None) -> Any:
    if isinstance(obj, dict) and "__spacy_entangle_data__" in obj:
        return EntangleData.from_dict(obj["__spacy_entangle_data__"])
    return obj if chain is None else chain(obj)
