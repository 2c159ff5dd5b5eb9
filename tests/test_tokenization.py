"""Windows and token alignment on hard text, with real fast tokenizers."""
import numpy
import pytest
import spacy
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
    assert pieces[first_rows[0]] == "unbelievable" or pieces[first_rows[0]].startswith("un")
    assert all(p != "[CLS]" for p in numpy.array(pieces)[align.subword_rows])


def test_whitespace_token_falls_back_to_a_piece(specs):
    subs, chars = specs
    doc = spacy.blank("en")("hello   world")
    assert any(t.is_space for t in doc)
    windows, (align,) = prepare_docs([doc], subs["roberta"], chars, configure_windows())
    space = [i for i, t in enumerate(doc) if t.is_space][0]
    assert align.subword_lengths[space] == 1


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
