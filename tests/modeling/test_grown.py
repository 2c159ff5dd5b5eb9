"""The grown character encoder (modeling/grown.py): word segmentation, the copied
layers, padding invariance, Hugging Face loading, and use as an entangle char_backbone."""

import os
import shutil

import numpy
import pytest
import spacy
import torch
from _pipelines import check_char_backbone_pipeline
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoConfig, AutoModel, AutoTokenizer

from spacy_entangle.modeling.grown import GrownCharModel, grow_char_encoder, segment
from spacy_entangle.tokenization import CharSpec, SubwordSpec, configure_windows, prepare_docs
from tests.tokenization.test_alignment import HARD_TEXTS, _check


@pytest.fixture(scope="module")
def grown_model(grown_dir):
    return AutoModel.from_pretrained(grown_dir).eval()


def _batch(spec, texts, extra=0):
    ids = [spec.encode(t) for t in texts]
    length = max(len(x) for x in ids) + extra
    arr = numpy.zeros((len(ids), length), dtype="int64")
    mask = numpy.zeros_like(arr)
    for i, x in enumerate(ids):
        arr[i, : len(x)], mask[i, : len(x)] = x, 1
    return torch.from_numpy(arr), torch.from_numpy(mask), [len(x) for x in ids]


def _words(spec, text):
    ids, mask, _ = _batch(spec, [text])
    seg = segment(ids, mask, 24)
    full = "\ue000" + text + "\ue001"
    words = {}
    for j, ch in enumerate(full):
        if int(seg.word[0, j]) >= 0:
            words.setdefault(int(seg.word[0, j]), []).append(ch)
    return ["".join(w) for w in words.values()], seg.context[0].tolist()


def test_words_split_punctuation_keep_zwj_sequences_and_whitespace_reads_the_word_before(grown_dir):
    spec = CharSpec.from_config(AutoConfig.from_pretrained(grown_dir))
    words, context = _words(spec, "Hi, @you 👩‍👩‍👧‍👦 cafe\u0301  東京")
    assert words == ["\ue000", "Hi", ",", "@", "you", "👩‍👩‍👧‍👦", "cafe\u0301", "東", "京", "\ue001"]
    assert context[4] == context[3], "the space after ',' reads ','"
    long_words, _ = _words(spec, "a" * 50)
    assert long_words[1:-1] == ["a" * 24, "a" * 24, "a" * 2]
    assert _words(spec, "   ")[0] == ["\ue000", "\ue001"]


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_copied_layers_equal_the_teachers_bit_for_bit(kind, request, tmp_path):
    sub_dir = request.getfixturevalue(f"{kind}_dir")
    teacher = AutoModel.from_pretrained(sub_dir).state_dict()
    grow_char_encoder(sub_dir, tmp_path, k=1, char_width=32, char_heads=2, hash_buckets=512)
    for model in (
        grow_char_encoder(sub_dir, k=1, char_width=32, char_heads=2, hash_buckets=512),
        AutoModel.from_pretrained(tmp_path),
    ):
        words = model.words.state_dict()
        layer_keys = [k for k in words if k.startswith("encoder.layer.")]
        assert layer_keys and all(torch.equal(words[k], teacher[k]) for k in layer_keys)
        for name in ("embeddings.position_embeddings.weight", "embeddings.LayerNorm.weight"):
            assert torch.equal(words[name], teacher[name])
        tok = AutoTokenizer.from_pretrained(sub_dir)
        assert torch.equal(model.cls_word.data, teacher["embeddings.word_embeddings.weight"][tok.cls_token_id])
    # RoBERTa's positions start after its pad id: 514 entries hold 512 words
    assert CharSpec.from_config(model.config).max_length == 512


def test_k_is_checked(bert_dir):
    with pytest.raises(ValueError, match="k must be"):
        grow_char_encoder(bert_dir, k=3, char_width=32, char_heads=2)


def test_loads_with_automodel_after_import_and_has_a_char_spec(grown_dir):
    model = AutoModel.from_pretrained(grown_dir)
    assert isinstance(model, GrownCharModel)
    assert (grown_dir / "model.safetensors").exists()
    spec = CharSpec.from_config(model.config)
    assert (spec.cls_id, spec.sep_id, spec.pad_id, spec.pad_multiple) == (0xE000, 0xE001, 0, 1)
    assert spec.max_length == 512  # the words run over BERT's 512 positions


def test_outputs_do_not_depend_on_padding(grown_dir):
    model = AutoModel.from_pretrained(grown_dir).eval()
    spec = CharSpec.from_config(model.config)
    texts = ["so sad 😢 #bowie", "a much longer tweet, with punctuation!!! and 👩‍👩‍👧‍👦 " * 4, " ", ""]
    ids, mask, lengths = _batch(spec, texts, extra=7)
    with torch.no_grad():
        batched = model(input_ids=ids, attention_mask=mask).last_hidden_state
        for i, n in enumerate(lengths):
            alone = model(input_ids=ids[i : i + 1, :n], attention_mask=mask[i : i + 1, :n]).last_hidden_state
            assert torch.allclose(alone[0], batched[i, :n], atol=1e-5), texts[i]
    assert batched.shape[-1] == model.config.hidden_size


def test_alignment_rules_hold_for_hard_text(grown_dir, bert_dir):
    chars = CharSpec.from_config(AutoConfig.from_pretrained(grown_dir))
    sub = SubwordSpec.from_tokenizer(AutoTokenizer.from_pretrained(bert_dir), AutoConfig.from_pretrained(bert_dir))
    nlp = spacy.blank("en")
    for text in HARD_TEXTS:
        doc = nlp(text)
        windows, (align,) = prepare_docs([doc], sub, chars, configure_windows(max_pieces=16, max_chars=24))
        _check(doc, windows, align, sub, chars)


def test_plugs_into_a_pipeline_and_loads_offline_without_backbones(tmp_path, bert_dir, grown_dir):
    char_dir, sub_dir = tmp_path / "grown", tmp_path / "bert"
    shutil.copytree(grown_dir, char_dir)
    shutil.copytree(bert_dir, sub_dir)
    check_char_backbone_pipeline(char_dir, sub_dir, tmp_path / "pipeline")


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=60))
def test_any_unicode_gets_one_finite_state_per_character_and_aligns(grown_model, bert_dir, text):
    model = grown_model
    chars = CharSpec.from_config(model.config)
    ids, mask, _ = _batch(chars, [text])
    with torch.no_grad():
        states = model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert states.shape == (1, len(text) + 2, model.config.hidden_size) and torch.isfinite(states).all()
    sub = SubwordSpec.from_tokenizer(AutoTokenizer.from_pretrained(bert_dir), AutoConfig.from_pretrained(bert_dir))
    doc = spacy.blank("en")(text)
    windows, (align,) = prepare_docs([doc], sub, chars, configure_windows(max_pieces=16, max_chars=24))
    _check(doc, windows, align, sub, chars)


@pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated")
def test_int8_keeps_the_copied_layers_in_float(grown_model, bert_dir):
    """inference = "int8" quantizes the grown encoder's own front end and join, but not the
    layers copied from the pretrained subword encoder (quantizing them cost 0.97 F1 on
    WNUT-17 dev): its registered design declares them (int8_keep_float), as MiniLM itself stays float."""
    from spacy_entangle.modeling.entangle import EntangleEncoder
    from spacy_entangle.modeling.inference import float_prefixes, quantize_int8

    model = EntangleEncoder(grown_model, AutoModel.from_pretrained(bert_dir), n_coattention=1, width=32, n_heads=2)
    assert float_prefixes(model) == ("subword_encoder.", "char_encoder.words.")
    quantized = quantize_int8(model.eval())
    linear = {n: type(m) for n, m in quantized.named_modules() if "Linear" in type(m).__name__}
    copied = [n for n in linear if n.startswith("char_encoder.words.")]
    assert copied and all(linear[n] is torch.nn.Linear for n in copied)
    assert linear["char_encoder.join.0"] is not torch.nn.Linear  # the grown encoder's own layer: int8
    assert all(linear[n] is torch.nn.Linear for n in linear if n.startswith("subword_encoder."))


@pytest.mark.parametrize(
    "text,expected",
    [
        ("abc\u200d", ["\ue000", "abc\u200d", "\ue001"]),  # [SEP] after a ZWJ stays [SEP]
        ("\u200dabc", ["\ue000", "\u200dabc", "\ue001"]),  # the first word's spelling is not [CLS]'s
        ("\u0301x", ["\ue000", "\u0301", "x", "\ue001"]),  # a mark after [CLS] joins nothing
        ("\u200d", ["\ue000", "\u200d", "\ue001"]),
    ],
)
def test_specials_are_words_of_their_own_next_to_a_joiner(grown_dir, text, expected):
    spec = CharSpec.from_config(AutoConfig.from_pretrained(grown_dir))
    assert _words(spec, text)[0] == expected


def test_import_spacy_entangle_registers_the_model_type_without_importing_transformers(grown_dir):
    """`import spacy_entangle` is enough for transformers' auto classes to load a grown
    encoder, and it still does not import transformers (spaCy imports the package to find
    its factories)."""
    import subprocess
    import sys

    code = (
        "import sys; import spacy_entangle; assert 'transformers' not in sys.modules; "
        "from transformers import AutoConfig, AutoModel; "
        f"print(type(AutoConfig.from_pretrained({str(grown_dir)!r})).__name__, "
        f"type(AutoModel.from_pretrained({str(grown_dir)!r})).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["GrownCharConfig", "GrownCharModel"]


def test_too_many_words_for_the_position_table_is_a_clear_error(grown_model):
    ids = torch.tensor([[0xE000] + [ord(",")] * 600 + [0xE001]])
    with pytest.raises(ValueError, match="602 words; the copied position table holds 512"):
        grown_model(input_ids=ids)


def test_gradient_checkpointing_of_the_entangle_component_reaches_the_grown_encoder(grown_dir, bert_dir):
    """gradient_checkpointing = true: the char layers and the copied layers run again in the
    backward pass (their activations are not kept), with the same gradients."""
    from spacy_entangle.modeling.entangle import EntangleEncoder

    grads, calls = [], []
    for checkpointing in (False, True):
        torch.manual_seed(0)  # the co-attention modules start random: the same weights in both
        char = AutoModel.from_pretrained(grown_dir)
        model = EntangleEncoder(
            char, AutoModel.from_pretrained(bert_dir), n_coattention=1, width=32, n_heads=2, checkpointing=checkpointing
        ).train()
        count = {"char": 0, "copied": 0}
        # a module inside each layer: whether transformers checkpoints a layer's __call__ or its
        # forward (the char layer runs its submodules itself: its feed-forward's first Linear)
        for name, block in (("char", char.char_layers[0].linear1), ("copied", char.words.encoder.layer[0].attention)):
            block.register_forward_pre_hook(lambda *_, name=name, count=count: count.update({name: count[name] + 1}))
        ids = torch.tensor([[0xE000, ord("h"), ord("i"), ord(" "), ord("!"), 0xE001]])
        torch.manual_seed(0)
        _, states = model(torch.tensor([[101, 7592, 999, 102]]), torch.ones((1, 4)), ids, torch.ones_like(ids))
        # a fixed random readout: the plain sum of LayerNorm'd states is constant (its
        # gradients are rounding noise, which any change of the arithmetic's order moves)
        readout = torch.randn(states.shape, generator=torch.Generator().manual_seed(1))
        (states * readout).sum().backward()
        calls.append(count)
        grads.append(char.char_embed.tables[0].weight.grad.clone())
    assert calls == [{"char": 1, "copied": 1}, {"char": 2, "copied": 2}]
    assert grads[0].abs().max() > 1e-3
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6)


def _char_states_with_a_row_mask(model, ids, pos, word):
    """The char layers as they were first written (the reference): every row runs whole,
    under an (L x L) mask that keeps each character's attention inside its word."""
    x = model.char_norm(model.char_embed(ids) + model.char_pos(pos.clamp(min=0)))
    own = torch.eye(ids.shape[1], dtype=torch.bool)
    allowed = ((word[:, :, None] == word[:, None, :]) & (word[:, None, :] >= 0)) | own
    blocked = (~allowed).repeat_interleave(model.config.char_heads, dim=0)
    for layer in model.char_layers:
        x = layer(x, src_mask=blocked)
    return model.char_out_norm(x)


@pytest.fixture(scope="module")
def two_layer_grown(bert_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("grown2")
    grow_char_encoder(bert_dir, out, k=1, char_width=32, char_heads=4, char_layers=2, hash_buckets=512, seed=1)
    model = AutoModel.from_pretrained(out).eval()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        elif isinstance(module, torch.nn.MultiheadAttention):
            module.dropout = 0.0
    return model


@pytest.mark.parametrize("training", [False, True])
def test_char_layers_inside_words_equal_the_row_mask_formula(two_layer_grown, training):
    """The char layers attend inside words by packing each word's characters, at a cost
    linear in the row length: the states equal those of the quadratic row mask, on words of
    every length up to max_word_chars (and cut beyond), whitespace runs, ZWJ sequences,
    CJK, and rows padded to another row's length."""
    model = two_layer_grown
    spec = CharSpec.from_config(model.config)
    rng = numpy.random.default_rng(0)
    pieces = [
        "a",
        "bc",
        "word",
        "x" * 23,
        "y" * 24,
        "z" * 61,
        " ",
        "   ",
        "\t\n",
        "👩‍👩‍👧‍👦",
        "👍🏽",
        "東京",
        "!!",
        ",",
        "e\u0301",
    ]
    texts = ["".join(rng.choice(pieces, size=n)) for n in (1, 7, 40, 120)] + ["", " ", "Hi, @you 👩‍👩‍👧‍👦 cafe\u0301"]
    ids, mask, _ = _batch(spec, texts, extra=5)
    seg = segment(ids, mask, model.config.max_word_chars)
    model.train(training)  # the fixture has no dropout: training code paths must agree too
    try:
        with torch.no_grad():
            expected = _char_states_with_a_row_mask(model, ids, seg.pos, seg.word)
            got = model.char_states(ids, seg.pos, seg.word)
            real = mask.bool()  # padding skips the layers: compared on the real characters
            got_real = model.char_states(ids, seg.pos, seg.word, real)
    finally:
        model.eval()
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
    assert torch.allclose(got_real[real], expected[real], atol=1e-5)


def _forward_with_a_row_mask(model, ids, mask):
    """The whole encoder as first written (the reference): row-mask char layers, every
    position (padding too) through the join, padding zeroed at the end."""
    seg = segment(ids, mask, model.config.max_word_chars)
    B, L = ids.shape
    local = _char_states_with_a_row_mask(model, ids, seg.pos, seg.word)
    vectors = model.pool(local, seg.word, seg.n_words)
    vectors = torch.where((seg.first_id == 0xE000)[:, None], model.cls_word, vectors)
    vectors = torch.where((seg.first_id == 0xE001)[:, None], model.sep_word, vectors)
    word_in = vectors.new_zeros((B, seg.n_slots, model.config.hidden_size))
    word_mask = mask.new_zeros((B, seg.n_slots))
    word_in[seg.row, seg.slot] = vectors
    word_mask[seg.row, seg.slot] = 1
    ctx_words = model.words(inputs_embeds=word_in, attention_mask=word_mask).last_hidden_state[seg.row, seg.slot]
    has_ctx = seg.context >= 0
    ctx = ctx_words.new_zeros((B, L, model.config.hidden_size))
    ctx[has_ctx] = ctx_words[seg.context[has_ctx]]
    states = model.join_norm(ctx + model.join(torch.cat([local, ctx], dim=-1)))
    return states * mask[..., None].to(states.dtype)


def test_the_encoder_equals_the_row_mask_formula(two_layer_grown):
    """The whole forward (char layers and join on real characters only) gives the states
    of the first formulation, padding included (zeros)."""
    model = two_layer_grown
    spec = CharSpec.from_config(model.config)
    texts = ["so sad 😢 #bowie", "x" * 30 + "  a much longer tweet 👩‍👩‍👧‍👦!!", " ", "东京 e\u0301"]
    ids, mask, _ = _batch(spec, texts, extra=3)
    with torch.no_grad():
        expected = _forward_with_a_row_mask(model, ids, mask)
        got = model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_the_join_split_per_word_equals_the_join_over_each_characters_word_state(two_layer_grown):
    """The join's first layer runs its word half once per word: the states are those of the
    FFN over [local; word state] per character, also once the join has learnt (a grown
    encoder starts with its output layer at zero, where any join gives the same states)."""
    import copy

    model = copy.deepcopy(two_layer_grown)
    torch.nn.init.normal_(model.join[-1].weight, std=0.5)
    torch.nn.init.normal_(model.join[-1].bias, std=0.5)
    spec = CharSpec.from_config(model.config)
    ids, mask, _ = _batch(spec, ["so sad 😢 #bowie", "   a  b ", "东京 e\u0301"], extra=2)
    with torch.no_grad():
        expected = _forward_with_a_row_mask(model, ids, mask)
        got = model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert (expected - _forward_with_a_row_mask(two_layer_grown, ids, mask)).abs().max() > 0.1
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_char_layers_pack_words_by_length_not_by_the_longest_row(two_layer_grown):
    """No L x L mask and no padding of every word to the longest: each block holds words of
    similar length, characters alone (whitespace, one-character words, padding) need none."""
    from spacy_entangle.modeling.grown import pack_words

    spec = CharSpec.from_config(two_layer_grown.config)
    ids, mask, _ = _batch(spec, ["ab cd efgh " * 300 + "x" * 24, "hi"])
    seg = segment(ids, mask, 24)
    blocks = pack_words(seg.word)
    assert [tuple(b.mask.shape) for b in blocks] == [(601, 2), (300, 4), (1, 24)]
    in_blocks = sum(int(b.mask.sum()) for b in blocks)
    assert in_blocks == int(
        ((seg.word >= 0) & (torch.bincount(seg.word[seg.word >= 0])[seg.word.clamp(min=0)] > 1)).sum()
    )


def test_the_front_end_equals_the_row_mask_formula(two_layer_grown):
    """Spellings padded to the longest (the type-level pretraining's input): padding skips
    the char layers, the word vectors stay those of the first formulation."""
    model = two_layer_grown
    spellings = ["a", "word", "x" * 20, "👩‍👩‍👧‍👦", "e\u0301"]
    width = max(len(s) for s in spellings) + 2
    ids = torch.zeros((len(spellings), width), dtype=torch.long)
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for i, s in enumerate(spellings):
        ids[i, : len(s)] = torch.tensor([ord(c) for c in s])
        mask[i, : len(s)] = True
    pos = torch.arange(width).expand_as(ids)
    word = torch.where(mask, torch.arange(len(spellings))[:, None].expand_as(ids), torch.full_like(ids, -1))
    with torch.no_grad():
        expected = model.pool(_char_states_with_a_row_mask(model, ids, pos, word), word, len(spellings))
        got = model.front_end(ids, mask)
    assert torch.allclose(got, expected, atol=1e-5)
