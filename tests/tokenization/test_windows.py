"""Windows (tokenization/windows.py): sizes refused or defaulted, and long hostile docs cut
within both encoders' limits."""

import pytest
from _pipelines import build, examples, train

from spacy_entangle.tokenization import configure_windows

PROSE = (
    "The committee met on Tuesday to discuss the proposal, which had been circulated "
    "among the members two weeks earlier; several of them raised concerns about its cost. "
)


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


@pytest.mark.issue(12)
def test_hostile_long_docs_with_default_windows(canine_128, canine_dir, bert_dir):
    """Default windows (the encoders' own limits) on docs of 2,040-9,000 characters."""
    for char_dir in (canine_128, canine_dir):
        nlp = build(char_dir, bert_dir, components=("ner",))
        nlp.initialize(lambda nlp=nlp: examples(nlp))
        spec = nlp.get_pipe("entangle").model.shims[0].chars
        for doc in nlp.pipe(HOSTILE, batch_size=4):
            data = doc._.entangle
            assert data.subword.shape[0] == data.align.n_subword_rows
            assert len(data.align.char_lengths) == len(doc)
            assert (data.align.subword_lengths >= 1).all()
            starts = [c for _, c in data.align.window_rows] + [data.align.n_char_rows]
            assert max(b - a for a, b in zip(starts, starts[1:])) <= spec.max_length


@pytest.mark.issue(12)
@pytest.mark.parametrize("key", ["max_pieces", "max_chars"])
@pytest.mark.parametrize("value", [0, -4])
def test_zero_or_negative_window_sizes_are_refused(key, value):
    with pytest.raises(ValueError, match=f"{key} must be a positive integer or null"):
        configure_windows(**{key: value})


@pytest.mark.issue(12)
def test_null_window_sizes_mean_the_encoders_limits(canine_dir, bert_dir):
    nlp = build(
        canine_dir,
        bert_dir,
        components=("ner",),
        window_getter={"@misc": "spacy-entangle.windows.v1", "max_pieces": None, "max_chars": None},
    )
    train(nlp, n_steps=1)
    doc = nlp("Emoji 😀 in a doc. " * 200)
    assert len(doc._.entangle.align.window_rows) >= 2
