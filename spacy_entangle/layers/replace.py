"""`nlp.replace_listeners` support: what the EntangleModel hands spaCy (as its attrs
``replace_listener`` / ``replace_listener_cfg``) so a listener can be swapped for a copy of
the encoder, as spacy-transformers' TransformerModel does."""
from typing import Any

from thinc.api import Model

from ..data import SIDES


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
