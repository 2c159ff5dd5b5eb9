"""The grown character encoder's config (modeling/grown.py holds the model), apart so that
registering it with ``AutoConfig`` imports nothing but ``transformers.configuration_utils``
(see auto_classes.py: transformers imports its auto config module halfway through loading
its model classes)."""

from typing import Any, Dict, Optional

from transformers.configuration_utils import PretrainedConfig

from .char_designs import GROWN_MODEL_TYPE

MODEL_TYPE = GROWN_MODEL_TYPE


class GrownCharConfig(PretrainedConfig):
    """``word_encoder``: the subword encoder's config dict (with its model_type) cut to
    ``num_hidden_layers = k`` and a one-row vocabulary (words come from the front end)."""

    model_type = MODEL_TYPE

    def __init__(
        self,
        word_encoder: Optional[Dict[str, Any]] = None,
        char_width: int = 256,
        char_heads: int = 4,
        char_layers: int = 1,
        char_ffn_width: Optional[int] = None,
        hash_buckets: int = 16384,
        hash_functions: int = 2,
        max_word_chars: int = 24,
        max_words: int = 512,
        dropout: float = 0.1,
        grown_from: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        self.word_encoder = dict(word_encoder or {})
        self.hidden_size = int(self.word_encoder.get("hidden_size", 384))
        self.num_hidden_layers = int(self.word_encoder.get("num_hidden_layers", 0))
        self.char_width = char_width
        self.char_heads = char_heads
        self.char_layers = char_layers
        self.char_ffn_width = char_ffn_width or 4 * char_width
        self.hash_buckets = hash_buckets
        self.hash_functions = hash_functions
        self.max_word_chars = max_word_chars
        self.max_words = max_words
        self.dropout = dropout
        self.grown_from = grown_from
        kwargs.setdefault("pad_token_id", 0)
        super().__init__(**kwargs)
