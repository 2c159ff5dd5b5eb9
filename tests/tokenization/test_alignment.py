"""Windows and token alignment on hard text, with real fast tokenizers."""

import numpy
import pytest
import spacy
from _pipelines import build, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoConfig, AutoTokenizer

from spacy_entangle.tokenization import CharSpec, SubwordSpec, configure_windows, prepare_docs
from spacy_entangle.tokenization.windows import greedy_windows, home_windows

HARD_TEXTS = [
    "Hello world",
    "👩‍👩‍👧‍👦 family emoji and 🇺🇸 flags",
    "e\u0301le\u0300ve combining marks",
    "see https://t.co/xYz?q=1&b=2 now",
    "@john_doe #hashtag RT: wow!!!",
    "a" * 300 + " long token",
    "two  spaces\tand\ttabs\n\nnewlines",
    "ctrl\x00chars\x07here",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 outside BMP 𠜎",
    "   ",
    "",
]


@pytest.fixture(scope="module")
def specs(bert_dir, roberta_dir, canine_dir):
    chars = CharSpec.from_config(AutoConfig.from_pretrained(canine_dir))
    out = {}
    for name, path in (("bert", bert_dir), ("roberta", roberta_dir)):
        out[name] = SubwordSpec.from_tokenizer(AutoTokenizer.from_pretrained(path), AutoConfig.from_pretrained(path))
    return out, chars


def _check(doc, windows, align, sub, chars):
    n = len(doc)
    assert len(align.subword_lengths) == n and len(align.char_lengths) == n
    if n == 0:
        assert windows == [] and align.n_subword_rows == 0
        return
    assert (align.subword_lengths >= 1).all(), "every token gets a subword row"
    assert (align.char_lengths >= 1).all(), "every token gets a char row"
    _check_subword_rows(doc, windows, align, sub)
    assert align.n_subword_rows == sum(len(w.sub_ids) for w in windows)
    assert align.n_char_rows == sum(len(w.char_ids) for w in windows)
    assert align.subword_rows.max() < align.n_subword_rows
    assert align.char_rows.max() < align.n_char_rows
    for w in windows:
        assert len(w.sub_ids) <= sub.max_length
        assert len(w.char_ids) <= chars.max_length
    # char rows point at the token's own codepoints
    flat = numpy.concatenate([w.char_ids for w in windows])
    start = 0
    for token, length in zip(doc, align.char_lengths):
        rows = align.char_rows[start : start + length]
        start += length
        got = "".join(chr(c) for c in flat[rows])
        assert token.text.startswith(got)


def _check_subword_rows(doc, windows, align, sub):
    """Which rows each token reads, not only that it reads some: the pieces that overlap it,
    or, with none of its own, the nearest piece before it in that window (else [CLS])."""
    rows = _row_offsets(windows, sub)  # (n_subword_rows, 2), specials (-1, -1)
    window_of = numpy.repeat(numpy.arange(len(windows)), [len(w.sub_ids) for w in windows])
    starts, ends = rows[:, 0], rows[:, 1]
    real = ends > starts  # zero-width pieces and specials are never aligned to
    first = numpy.cumsum(align.subword_lengths) - align.subword_lengths
    for token, f, n in zip(doc, first, align.subword_lengths):
        t0, t1 = token.idx, token.idx + len(token)
        read = align.subword_rows[f : f + n]
        own = real & (starts < t1) & (ends > t0)
        if own.any():
            assert own[read].all(), f"{token.text!r} reads a piece that is not its own"
            continue
        assert n == 1, f"{token.text!r} has no piece of its own: it reads one fallback row"
        window = window_of[read[0]]
        before = numpy.flatnonzero(real & (window_of == window) & (starts < t0))
        cls = numpy.flatnonzero(window_of == window)[0]
        expected = before[-1] if len(before) else cls
        assert read[0] == expected, f"{token.text!r} reads row {read[0]}, not the nearest piece before it ({expected})"


@pytest.mark.parametrize("tok_name", ["bert", "roberta"])
@pytest.mark.parametrize("text", HARD_TEXTS)
def test_alignment_hard_text(specs, tok_name, text):
    subs, chars = specs
    sub = subs[tok_name]
    nlp = spacy.blank("en")
    doc = nlp(text)
    windows, aligns = prepare_docs([doc], sub, chars, configure_windows())
    _check(doc, windows, aligns[0], sub, chars)


def test_subword_rows_are_the_tokens_pieces(specs):
    subs, chars = specs
    sub = subs["bert"]
    doc = spacy.blank("en")("Unbelievable tokenization")
    windows, (align,) = prepare_docs([doc], sub, chars, configure_windows())
    pieces = sub.tokenizer.convert_ids_to_tokens(windows[0].sub_ids.tolist())
    first_rows = align.subword_rows[numpy.cumsum(align.subword_lengths) - align.subword_lengths]
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    # MiniLM's uncased WordPiece vocabulary (the bert fixture's): each token reads exactly its pieces
    starts = numpy.cumsum(align.subword_lengths) - align.subword_lengths
    read = [[pieces[r] for r in align.subword_rows[s : s + n]] for s, n in zip(starts, align.subword_lengths)]
    assert read == [["unbelievable"], ["token", "##ization"]]
    assert pieces[first_rows[0]] == "unbelievable"
    assert all(p != "[CLS]" for p in numpy.array(pieces)[align.subword_rows])


@pytest.mark.parametrize("tok_name,before", [("bert", "hello"), ("roberta", "lo")])
def test_whitespace_token_falls_back_to_the_nearest_piece_before(specs, tok_name, before):
    """The space token has no piece of its own (RoBERTa's lone ``Ġ`` pieces are zero-width):
    it reads the last piece of "hello", the nearest real piece before it."""
    subs, chars = specs
    sub = subs[tok_name]
    doc = spacy.blank("en")("hello   world")
    assert any(t.is_space for t in doc)
    windows, (align,) = prepare_docs([doc], sub, chars, configure_windows())
    space = [i for i, t in enumerate(doc) if t.is_space][0]
    assert align.subword_lengths[space] == 1
    row = align.subword_rows[int(numpy.sum(align.subword_lengths[:space]))]
    pieces = sub.tokenizer.convert_ids_to_tokens(windows[0].sub_ids.tolist())
    assert pieces[row] == before
    assert windows[0].piece_offsets[row - sub.prefix][1] == len("hello")


def test_long_doc_windows_respect_both_limits(specs):
    subs, chars = specs
    sub = subs["bert"]
    text = " ".join(f"word{i} 😀 tokenization" for i in range(400))
    doc = spacy.blank("en")(text)
    getter = configure_windows(max_pieces=64, max_chars=200, overlap=0.25)
    windows, (align,) = prepare_docs([doc], sub, chars, getter)
    assert len(windows) > 10
    assert max(len(w.sub_ids) for w in windows) <= 64
    assert max(len(w.char_ids) for w in windows) <= 200
    _check(doc, windows, align, sub, chars)


def test_greedy_windows_overlap_and_home():
    starts = numpy.arange(0, 100, 5)
    ends = starts + 4
    pieces = numpy.ones(20, dtype=int)
    spans = greedy_windows(starts, ends, pieces, max_pieces=6, max_chars=1000, overlap=0.5)
    assert spans[0] == (0, 6) and spans[-1][1] == 20
    assert all(t1 - t0 <= 6 for t0, t1 in spans)
    home = home_windows(20, spans)
    for i, w in enumerate(home):
        t0, t1 = spans[w]
        assert t0 <= i < t1


def test_bad_window_overlap():
    with pytest.raises(ValueError, match="overlap"):
        configure_windows(overlap=1.0)


def test_char_spec_rejects_non_canine(bert_dir):
    with pytest.raises(ValueError, match="CANINE"):
        CharSpec.from_config(AutoConfig.from_pretrained(bert_dir))


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80))
def test_alignment_random_unicode(specs, text):
    subs, chars = specs
    doc = spacy.blank("en")(text)
    for sub in subs.values():
        windows, (align,) = prepare_docs([doc], sub, chars, configure_windows(max_pieces=16, max_chars=24))
        _check(doc, windows, align, sub, chars)


# -- tokens whose pieces lie in a neighbouring window ----------------------


def _row_offsets(windows, sub):
    """The doc character offsets of every subword row; (-1, -1) for the specials."""
    special = numpy.full((1, 2), -1)
    blocks = []
    for w in windows:
        blocks += [special] * sub.prefix + [w.piece_offsets] + [special] * (sub.n_special - sub.prefix)
    return numpy.concatenate(blocks)


def _assert_tokens_read_their_own_pieces(doc, windows, align, sub):
    """Every token that shares a character with a piece of some window reads only pieces
    it overlaps (a piece in no window was clipped with a token longer than a window)."""
    if not len(doc):
        return
    offsets = _row_offsets(windows, sub)
    starts = numpy.cumsum(align.subword_lengths) - align.subword_lengths
    for token, start, n in zip(doc, starts, align.subword_lengths):
        t0, t1 = token.idx, token.idx + len(token)
        if not ((offsets[:, 0] < t1) & (offsets[:, 1] > t0) & (offsets[:, 1] > offsets[:, 0])).any():
            continue  # no piece of its own: the documented fallback
        for s, e in offsets[align.subword_rows[start : start + n]]:
            assert s < t1 and e > t0, f"token {token.text!r} ({t0}, {t1}) reads row ({s}, {e})"


@pytest.mark.parametrize("tok_name", ["bert", "roberta"])
@pytest.mark.parametrize("overlap", [0.0, 0.25, 0.5])
def test_zwj_emoji_tokens_read_their_piece_in_the_neighbouring_window(specs, tok_name, overlap):
    """One piece covers the whole ZWJ family emoji, which spaCy splits into 7 tokens: the
    tokens whose home is the next window read that piece where it lies, not [CLS]."""
    subs, chars = specs
    sub = subs[tok_name]
    doc = spacy.blank("en")("hi 👩‍👩‍👧‍👦 ok")
    assert len(doc) == 9
    windows, (align,) = prepare_docs([doc], sub, chars, configure_windows(max_pieces=5, max_chars=12, overlap=overlap))
    assert len(windows) == 2
    _check(doc, windows, align, sub, chars)
    _assert_tokens_read_their_own_pieces(doc, windows, align, sub)
    assert (_row_offsets(windows, sub)[align.subword_rows] >= 0).all(), "no token reads a special"


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "bc", " ", "  ", "👩", "\u200d", "🇺🇸", "é", "!"]), max_size=30).map("".join))
def test_tokens_read_only_their_own_pieces_across_windows(specs, text):
    """Hard text (ZWJ joins, flags, spaces) cut into small windows, with and without overlap."""
    subs, chars = specs
    doc = spacy.blank("en")(text)
    for sub in subs.values():
        for overlap in (0.0, 0.5):
            windows, (align,) = prepare_docs(
                [doc], sub, chars, configure_windows(max_pieces=6, max_chars=10, overlap=overlap)
            )
            _check(doc, windows, align, sub, chars)
            _assert_tokens_read_their_own_pieces(doc, windows, align, sub)


# -- specials from the tokenizer's post-processor (transformers 5 has no build_inputs_with_special_tokens) ---------


def _generic_fast_tokenizers(roberta_dir):
    """Tokenizers loaded from a bare tokenizer.json (class PreTrainedTokenizerFast, as many hub
    models ship): one with RoBERTa's template, one that puts both specials after the text."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    plain = PreTrainedTokenizerFast(tokenizer_file=str(roberta_dir / "tokenizer.json"), pad_token="<pad>")
    raw = Tokenizer.from_file(str(roberta_dir / "tokenizer.json"))
    raw.post_processor = TemplateProcessing(single="$A </s> <s>", special_tokens=[("</s>", 2), ("<s>", 0)])
    at_end = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>")
    return {"roberta_template": (plain, 1), "specials_at_the_end": (at_end, 0)}


@pytest.mark.parametrize("name", ["roberta_template", "specials_at_the_end"])
def test_windows_get_the_specials_the_tokenizer_itself_adds(roberta_dir, canine_dir, name):
    """Every window is encoded as ``tokenizer(text)`` would encode it: the specials come from the
    tokenizer's post-processor (transformers 5 has no build_inputs_with_special_tokens, and
    4.x's generic PreTrainedTokenizerFast returned the ids without any specials)."""
    tokenizer, prefix = _generic_fast_tokenizers(roberta_dir)[name]
    sub = SubwordSpec.from_tokenizer(tokenizer, AutoConfig.from_pretrained(roberta_dir))
    chars = CharSpec.from_config(AutoConfig.from_pretrained(canine_dir))
    assert (sub.prefix, sub.n_special) == (prefix, 2)
    for text in ["Hello world 😀", "a", ""]:
        bare = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert sub.with_specials(numpy.asarray(bare, dtype="int64")).tolist() == tokenizer(text)["input_ids"]
    doc = spacy.blank("en")("@john_doe Café 👩‍💻")
    windows, (align,) = prepare_docs([doc], sub, chars, configure_windows())
    assert windows[0].sub_ids.tolist() == tokenizer(doc.text)["input_ids"]
    _check(doc, windows, align, sub, chars)


def _specs(tok_dir, canine_dir):
    tok = AutoTokenizer.from_pretrained(tok_dir)
    sub = SubwordSpec.from_tokenizer(tok, AutoConfig.from_pretrained(tok_dir))
    return sub, CharSpec.from_config(AutoConfig.from_pretrained(canine_dir))


@pytest.mark.issue(12)
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


@pytest.mark.issue(12)
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
            i
            for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"])
            if e > s and s < token.idx + len(token) and e > token.idx
        ][0]
        assert flat[align.subword_rows[first]] == expected, token.text
    for w in windows:
        assert len(w.sub_ids) <= 16
    # no overlap: the windows hold every piece of the text exactly once, in order
    content = [w.sub_ids[sub.prefix : len(w.sub_ids) - (sub.n_special - sub.prefix)] for w in windows]
    assert numpy.concatenate(content).tolist() == enc["input_ids"]


@pytest.mark.issue(12)
def test_whitespace_only_doc_with_trimmed_offsets(roberta_trim, canine_dir):
    out, _ = roberta_trim
    nlp = build(canine_dir, out, components=("ner",))
    nlp.initialize(lambda: examples(nlp))
    for text in ("   ", "  \n ", "\t"):
        doc = nlp(text)
        assert doc._.entangle.subword.shape[0] >= 2
        assert (doc._.entangle.align.subword_lengths >= 1).all()
