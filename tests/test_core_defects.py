"""Core correctness under every setting (issue 12): mixed precision over several
chunks, CANINE's position table, the window piece budget, zero-width pieces, per-doc
copies, minimal char padding and the opt-in inference modes."""
import shutil

import numpy
import pytest
import spacy
from spacy.util import fix_random_seed
import torch
from thinc.api import SGD
from thinc.shims.pytorch_grad_scaler import PyTorchGradScaler
from tokenizers.processors import RobertaProcessing
from transformers import AutoConfig, AutoTokenizer, CanineModel

from _pipelines import TEXTS, build, entangle_cfg, examples, train
from spacy_entangle.modeling.offline import make_random_canine
from spacy_entangle.tokenization import CharSpec, SubwordSpec, configure_windows, prepare_docs

PROSE = (
    "The committee met on Tuesday to discuss the proposal, which had been circulated "
    "among the members two weeks earlier; several of them raised concerns about its cost. "
)


class CPUGradScaler(PyTorchGradScaler):
    """thinc's scaler refuses CPU tensors; the arithmetic is the same on CPU, so this
    runs the real scale / unscale / update path in a CPU test."""

    def _scale_tensor(self, tensor, scale_per_device, inplace):
        scale = self._scale.to(tensor.device)
        return tensor.mul_(scale) if inplace else tensor * scale


def _entangle_params(nlp):
    model = nlp.get_pipe("entangle").model.shims[0]._model
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def test_mixed_precision_scales_gradients_once_over_several_chunks(canine_dir, bert_dir):
    """Docs in separate chunks (max_batch_chars below two windows): with the grad
    scaler on, SGD steps must equal the steps without it."""
    base = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
    base.initialize(lambda: examples(base))
    payload = base.to_bytes()
    results = []
    for scaled in (False, True):
        nlp = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
        nlp.initialize(lambda: examples(nlp))
        nlp.from_bytes(payload)
        shim = nlp.get_pipe("entangle").model.shims[0]
        if scaled:
            shim._grad_scaler = CPUGradScaler(enabled=True, init_scale=2.0**10)
        before = _entangle_params(nlp)
        fix_random_seed(0)  # the encoders' own dropout is random
        # the ner's output layer starts at zero: its first update sends no gradient back
        for _ in range(3):
            nlp.update(examples(nlp), sgd=SGD(0.1), drop=0.0)
        after = _entangle_params(nlp)
        results.append({k: after[k] - before[k] for k in before})
    plain, scaled = results
    moved = [k for k in plain if plain[k].abs().max() > 0]
    assert moved, "the update must move the entangle weights"
    for k in moved:
        torch.testing.assert_close(scaled[k], plain[k], rtol=1e-3, atol=1e-7, msg=k)


def test_a_batch_of_several_chunks_runs_one_backward(canine_dir, bert_dir, monkeypatch):
    nlp = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
    nlp.initialize(lambda: examples(nlp))
    calls = []
    real = torch.autograd.backward
    monkeypatch.setattr(torch.autograd, "backward", lambda *a, **k: (calls.append(1), real(*a, **k)))
    nlp.update(examples(nlp), sgd=SGD(0.01))
    assert len(calls) == 1


@pytest.fixture(scope="module")
def canine_128(tmp_path_factory):
    """CANINE with its real local-attention stride (128) and a 2048-position table."""
    return make_random_canine(
        tmp_path_factory.mktemp("canine128"), layers=1, width=32, heads=2, local_stride=128,
        hash_buckets=2048, max_chars=2048,
    )


def test_padded_length_never_exceeds_the_position_table(canine_dir, canine_128):
    for path in (canine_dir, canine_128):
        config = AutoConfig.from_pretrained(path)
        spec = CharSpec.from_config(config)
        table = min(config.max_position_embeddings, config.num_hash_buckets)
        for n in range(1, spec.max_length + 1):
            assert n + spec.min_tail <= spec.padded_length(n) <= table
            assert spec.padded_length(n) % spec.pad_multiple == 0


@pytest.mark.parametrize("which", ["stride128", "stride16"])
def test_minimal_char_padding_gives_the_same_outputs(canine_128, canine_dir, which):
    """Padding to padded_length (the downsampling rate + tail, or a whole block when a
    block of padding only would start in the tail) instead of always to the block
    stride: the real characters' states do not change, whatever further padding a
    batch adds. Every window length across block boundaries is checked."""
    model = CanineModel.from_pretrained(canine_128 if which == "stride128" else canine_dir).eval()
    spec = CharSpec.from_config(model.config)
    rng = numpy.random.default_rng(0)

    def states(ids, length):
        padded = numpy.zeros((1, length), dtype="int64")
        padded[0, : len(ids)] = ids
        mask = (numpy.arange(length) < len(ids)).astype("int64")[None]
        with torch.no_grad():
            out = model(input_ids=torch.from_numpy(padded), attention_mask=torch.from_numpy(mask))
        return out.last_hidden_state[0, : len(ids)]

    saved = 0
    for n in range(3, 2 * spec.block + 20):
        ids = rng.integers(32, 0x1F600, n)
        ids[0], ids[-1] = spec.cls_id, spec.sep_id
        length = spec.padded_length(n)
        saved += -(-(n + spec.min_tail) // spec.block) * spec.block - length
        alone = states(ids, length)
        for extra in (spec.pad_multiple, spec.block + spec.pad_multiple, 3 * spec.block):
            torch.testing.assert_close(states(ids, length + extra), alone, atol=2e-5, rtol=0, msg=f"n={n}")
    if which == "stride128":
        assert saved > 0, "padding to the block stride is what the minimal padding avoids"


HOSTILE = [
    PROSE * 14,  # ~2,400 chars of ordinary prose: the char limit binds before the piece limit
    (PROSE * 60)[:2040],
    (PROSE * 60)[:2047],
    (PROSE * 60)[:2049],
    (PROSE * 60)[:9000],
    "x" * 5000,
    "😀" * 2100,
    ("word " * 1000) + "   " + ("ünïcödé " * 200),
    "short one",
]


def test_hostile_long_docs_with_default_windows(canine_128, canine_dir, bert_dir):
    """Default windows (the encoders' own limits) on docs of 2,040-9,000 characters."""
    for char_dir in (canine_128, canine_dir):
        nlp = build(char_dir, bert_dir, components=("ner",))
        nlp.initialize(lambda: examples(nlp))
        spec = nlp.get_pipe("entangle").model.shims[0].chars
        for doc in nlp.pipe(HOSTILE, batch_size=4):
            data = doc._.entangle
            assert data.subword.shape[0] == data.align.n_subword_rows
            assert len(data.align.char_lengths) == len(doc)
            assert (data.align.subword_lengths >= 1).all()
            starts = [c for _, c in data.align.window_rows] + [data.align.n_char_rows]
            assert max(b - a for a, b in zip(starts, starts[1:])) <= spec.max_length


@pytest.fixture(scope="module", params=[True, False], ids=["trim_offsets", "untrimmed"])
def roberta_trim(request, roberta_dir, tmp_path_factory):
    """The fixture RoBERTa with roberta-base's post-processor (trim_offsets=True: a
    lone space piece gets zero width) or without trimming (it covers the space, which
    belongs to no spaCy token)."""
    tok = AutoTokenizer.from_pretrained(roberta_dir)
    tok.backend_tokenizer.post_processor = RobertaProcessing(
        ("</s>", tok.sep_token_id), ("<s>", tok.cls_token_id), trim_offsets=request.param, add_prefix_space=False
    )
    out = tmp_path_factory.mktemp("roberta_trim") / "backbone"
    shutil.copytree(roberta_dir, out)
    tok.save_pretrained(out)
    return out, tok


def _specs(tok_dir, canine_dir):
    tok = AutoTokenizer.from_pretrained(tok_dir)
    sub = SubwordSpec.from_tokenizer(tok, AutoConfig.from_pretrained(tok_dir))
    return sub, CharSpec.from_config(AutoConfig.from_pretrained(canine_dir))


def test_zero_width_pieces_stay_in_the_encoder_input(roberta_trim, canine_dir):
    out, tok = roberta_trim
    sub, chars = _specs(out, canine_dir)
    nlp = spacy.blank("en")
    for text in ("two  spaces", "a   b  c", "   "):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        windows, (align,) = prepare_docs([nlp.make_doc(text)], sub, chars, configure_windows())
        assert len(windows) == 1
        assert windows[0].sub_ids.tolist() == sub.with_specials(numpy.asarray(ids)).tolist()
        assert (align.subword_lengths >= 1).all()


def test_window_budget_counts_whitespace_pieces(roberta_trim, canine_dir):
    """Space pieces between tokens count against the window budget: a window must
    still hold every piece of its tokens (no token falls back on a neighbour's piece
    or <s>) and never more pieces than its budget."""
    out, tok = roberta_trim
    sub, chars = _specs(out, canine_dir)
    # "a  .  b": the lone space pieces before and after "." overlap no spaCy token
    text = "  .  ".join(["hello", "world", "noisy", "tweets", "here"] * 12)
    doc = spacy.blank("en").make_doc(text)
    getter = configure_windows(max_pieces=16, overlap=0.0)  # each token has one window
    windows, (align,) = prepare_docs([doc], sub, chars, getter)
    assert len(windows) > 3
    flat = numpy.concatenate([w.sub_ids for w in windows])
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    starts = numpy.cumsum(align.subword_lengths) - align.subword_lengths
    for token, first in zip(doc, starts):
        if token.is_space:
            continue
        expected = [
            i for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"])
            if e > s and s < token.idx + len(token) and e > token.idx
        ][0]
        assert flat[align.subword_rows[first]] == expected, token.text
    for w in windows:
        assert len(w.sub_ids) <= 16
    # no overlap: the windows hold every piece of the text exactly once, in order
    content = [w.sub_ids[sub.prefix : len(w.sub_ids) - (sub.n_special - sub.prefix)] for w in windows]
    assert numpy.concatenate(content).tolist() == enc["input_ids"]


def test_whitespace_only_doc_with_trimmed_offsets(roberta_trim, canine_dir):
    out, _ = roberta_trim
    nlp = build(canine_dir, out, components=("ner",))
    nlp.initialize(lambda: examples(nlp))
    for text in ("   ", "  \n ", "\t"):
        doc = nlp(text)
        assert doc._.entangle.subword.shape[0] >= 2
        assert (doc._.entangle.align.subword_lengths >= 1).all()


def test_each_doc_owns_its_rows(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", max_batch_chars=100_000)
    nlp.initialize(lambda: examples(nlp))
    docs = list(nlp.pipe(["one short doc", "another short doc with more words", "x"]))
    for doc in docs:
        for side in (doc._.entangle.subword, doc._.entangle.char):
            assert side.base is None, "a view keeps the whole padded chunk alive"


@pytest.fixture(scope="module")
def trained_ner(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",))
    train(nlp, n_steps=10)
    return nlp


@pytest.mark.parametrize("mode,atol", [("int8", 0.3), ("bf16", 0.1)])
def test_inference_modes_are_close_to_fp32(trained_ner, tmp_path, mode, atol):
    nlp = trained_ner
    nlp.to_disk(tmp_path / "p")
    fast = spacy.load(tmp_path / "p", config={"components": {"entangle": {"inference": mode}}})
    assert fast.get_pipe("entangle").model.shims[0].inference == mode
    texts = [text for text, _, _ in TEXTS]
    exact = [d._.entangle.subword for d in nlp.pipe(texts)]
    approx = [d._.entangle.subword for d in fast.pipe(texts)]
    for a, b in zip(exact, approx):
        assert a.shape == b.shape
        assert numpy.abs(a - b).max() < atol
    # training still runs on the exact weights; the fast copy follows them
    fast.update(examples(fast), sgd=SGD(0.01))
    list(fast.pipe(texts))


def test_unknown_inference_mode_is_a_clear_error(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="inference must be one of"):
        nlp.add_pipe("entangle", config={"inference": "int4", "model": entangle_cfg(canine_dir, bert_dir)})


def test_chunks_group_windows_of_similar_length():
    from spacy_entangle.layers.entangle_model import CHUNK_SPREAD, _chunks
    from spacy_entangle.tokenization import WindowInput

    rng = numpy.random.default_rng(0)
    lengths = rng.integers(10, 300, 200)
    windows = [WindowInput(0, numpy.zeros(3, dtype="int64"), numpy.zeros(n, dtype="int64")) for n in lengths]
    chunks = _chunks(windows, 4096, lambda n: n)
    assert sorted(i for c in chunks for i in c) == list(range(len(windows)))
    for chunk in chunks:
        sizes = [lengths[i] for i in chunk]
        assert max(sizes) * len(chunk) <= 4096 or len(chunk) == 1
        assert max(sizes) <= CHUNK_SPREAD * min(sizes) + 16


def test_mixed_precision_setting_trains_on_cpu(canine_dir, bert_dir):
    """mixed_precision = true (the paper presets) is a CUDA setting: on the CPU the
    model trains in fp32 instead of crashing in thinc's grad scaler."""
    nlp = build(canine_dir, bert_dir, components=("ner",), mixed_precision=True)
    train(nlp, n_steps=3)
    assert not nlp.get_pipe("entangle").model.shims[0]._grad_scaler._enabled


def test_settings_read_a_cfg_saved_before_they_existed():
    """The shim's cfg of pipelines saved before EntangleSettings (a plain dict, with the
    `max_chars`/`max_pieces` keys nothing read) still builds the same settings."""
    import dataclasses

    from spacy_entangle.layers.settings import EntangleSettings

    old = {"char_backbone": "c", "subword_backbone": "s", "n_coattention": 1, "hidden_width": 32, "n_heads": 2,
           "ffn_width": None, "dropout": 0.2, "backbone_lr_scale": 0.5, "gradient_checkpointing": False,
           "max_chars": 2048, "max_pieces": 512}
    settings = EntangleSettings.from_cfg(old)
    assert (settings.n_coattention, settings.hidden_width, settings.dropout, settings.backbone_lr_scale) == (1, 32, 0.2, 0.5)
    assert settings.max_batch_chars == 16384 and settings.mixed_precision is False  # defaults
    assert EntangleSettings.from_cfg(settings.to_cfg()) == settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.dropout = 0.3  # type: ignore[misc]
    with pytest.raises(ValueError, match="not divisible by n_heads"):
        EntangleSettings.from_cfg(dict(old, n_heads=5))
