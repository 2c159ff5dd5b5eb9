"""CANINE's facts that spacy-entangle relies on, in one place (google/canine-s's values;
the offline CANINE-style encoders keep them): special codepoints, hashing, downsampling,
the local-attention block and the position table.

A top-level module (not in modeling/ or tokenization/) because both read it, and so do
pretraining/ and the CLI: modeling (backbone configs) and tokenization (char ids, padding)
stay independent of each other, and this module imports nothing."""

CLS = 0xE000  # the [CLS] codepoint (57344)
SEP = 0xE001  # the [SEP] codepoint (57345)
MASK = 0xE003  # the [MASK] codepoint (57347) of masked-character pretraining
HASH_FUNCTIONS = 8  # CanineConfig.num_hash_functions: the width is split into 8 shards
HASH_BUCKETS = 16384  # CanineConfig.num_hash_buckets of canine-s
DOWNSAMPLING = 4  # CanineConfig.downsampling_rate
BLOCK = 128  # CanineConfig.local_transformer_stride: local attention in blocks of 128
MAX_CHARS = 2048  # CanineConfig.max_position_embeddings: characters per window
