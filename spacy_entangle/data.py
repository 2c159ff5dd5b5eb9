"""What the `entangle` component stores per doc (``doc._.entangle``) and sends to listeners."""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple

import numpy
import srsly
from thinc.types import Floats2d

from .tokenization.alignment import DocAlignment

SIDES = ("subword", "char")
# what a listener reads: one side, or both concatenated (subword ‖ char)
Side = Literal["subword", "char", "both"]
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
    """

    subword: Optional[Floats2d]
    char: Optional[Floats2d]
    align: DocAlignment
    # the `entangle` component that computed it: a listener reads only its own upstream's
    source: Optional[str] = None
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
        from .layers.pooling import pooled_token_vectors

        return pooled_token_vectors([self], side, pooling)[0]

    def to_dict(self) -> Dict[str, Any]:
        """Plain numpy arrays (for msgpack, Doc.to_bytes, DocBin)."""
        from thinc.api import to_numpy

        def np(x: Optional[Floats2d]) -> Optional[numpy.ndarray]:
            return None if x is None else to_numpy(x)

        a = self.align
        return {
            "source": self.source,
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
            },
        }

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "EntangleData":
        a = dict(msg["align"])
        a["window_rows"] = [tuple(w) for w in a["window_rows"]]
        for key in ("subword_lengths", "subword_rows", "char_lengths", "char_rows"):
            a[key] = numpy.asarray(a[key], dtype="int32")
        return cls(subword=msg["subword"], char=msg["char"], align=DocAlignment(**a), source=msg.get("source"))


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
