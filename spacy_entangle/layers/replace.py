"""`nlp.replace_listeners` support: what the EntangleModel hands spaCy (as its attrs
``replace_listener`` / ``replace_listener_cfg``) so a listener can be swapped for a copy of
the encoder, as spacy-transformers' TransformerModel does."""

from typing import Any, Dict

from thinc.api import Model
from thinc.shims import Shim

from .contract import get_sides, set_sides


def replace_listener(model: Model, listener: Model, component: Any) -> Model:
    """`nlp.replace_listeners`: the copied EntangleModel takes the listener's place
    (it emits the same List[EntangleData]), computes what that listener reads and
    has optimizer state of its own."""
    set_sides(model, get_sides(listener))
    for node in model.walk():
        for shim in node.shims:
            _new_shim_id(shim)
    return model


def _new_shim_id(shim: Shim) -> None:
    """A copy keeps its original's shim id (thinc deep-copies shims), and optimizers key
    their state by (shim id, parameter name): the copy would share the original's Adam
    moments and step counts while both train."""
    with Shim.global_id_lock:
        Shim.global_id += 1
        shim.id = Shim.global_id


def replace_listener_cfg(tok2vec_model_cfg: Dict[str, Any], listener_model_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The config of the standalone replacement: EntangleModel's settings plus the
    listener's side / pooling / grad_factor (/ combine), as the EntangleTok2Vec of the
    listener's version (EntangleListener.v1 -> EntangleTok2Vec.v1, .v2 -> .v2)."""
    result = dict(tok2vec_model_cfg)
    name = listener_model_cfg.get("@architectures", "")
    prefix = "spacy-entangle.EntangleListener."
    if name.startswith(prefix):
        result["@architectures"] = "spacy-entangle.EntangleTok2Vec." + name[len(prefix) :]
        for key in ("side", "pooling", "grad_factor", "combine"):
            if key in listener_model_cfg:
                result[key] = listener_model_cfg[key]
    return result
