"""store_attention and `explain`: the co-attention maps are real softmax rows over the other
side's real positions, independent of how a batch pads them, off by default, and drawn."""
import numpy
import pytest
from typer.testing import CliRunner

from spacy_entangle.cli import app

from _pipelines import build, train

SHORT = "Paris!!! 😀 #lol"
LONG = "@john went to Paris with Apple people and a U.K. startup, tmrw maybe"


@pytest.fixture(scope="module")
def nlp(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",))
    train(nlp, n_steps=2)
    return nlp


def test_off_by_default(nlp):
    assert nlp.get_pipe("entangle").store_attention is False
    assert nlp(SHORT)._.entangle_attention is None


def test_maps_are_softmax_rows_over_real_positions(nlp):
    entangle = nlp.get_pipe("entangle")
    entangle.store_attention = True
    try:
        alone = nlp(SHORT)._.entangle_attention
        batched = [d._.entangle_attention for d in nlp.pipe([LONG, SHORT, LONG + " " + LONG])][1]
    finally:
        entangle.store_attention = False
    (window,) = alone
    n_pieces, n_chars = len(window["pieces"]), len(window["chars"])
    assert window["pieces"][0] == "[CLS]" and window["chars"][0] == "[CLS]" and window["chars"][-1] == "[SEP]"
    assert "".join(window["chars"][1:-1]) == SHORT
    assert len(window["sub2char"]) == len(window["char2sub"]) == 2  # n_coattention = 2
    for s2c, c2s in zip(window["sub2char"], window["char2sub"]):
        assert s2c.shape == (n_pieces, n_chars) and c2s.shape == (n_chars, n_pieces)
        numpy.testing.assert_allclose(s2c.sum(axis=1), 1.0, atol=1e-5)
        numpy.testing.assert_allclose(c2s.sum(axis=1), 1.0, atol=1e-5)
    # batched with longer docs (padded to their length): the same maps, its own size only
    (other,) = batched
    assert other["pieces"] == window["pieces"] and other["chars"] == window["chars"]
    for a, b in zip(window["sub2char"] + window["char2sub"], other["sub2char"] + other["char2sub"]):
        assert a.shape == b.shape
        numpy.testing.assert_allclose(a, b, atol=1e-5)


def test_a_long_doc_warns(nlp):
    entangle = nlp.get_pipe("entangle")
    entangle.store_attention = True
    try:
        with pytest.warns(UserWarning, match="store_attention keeps"):
            doc = nlp("word " * 300)
    finally:
        entangle.store_attention = False
    assert len(doc._.entangle_attention) >= 1


def test_explain_writes_png_and_html(nlp, tmp_path):
    path = tmp_path / "pipeline"
    nlp.to_disk(path)
    for name in ("maps.png", "maps.html"):
        result = CliRunner().invoke(app, ["explain", str(path), SHORT, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        assert "2 co-attention module(s)" in result.output
    assert (tmp_path / "maps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "maps.html").read_text(encoding="utf8")
    assert page.count("<table>") == 4 and "module 2: character → subwords" in page and "<th>#</th>" in page
    # bad input: one clear line, exit code 1
    for args, message in [
        ([str(path), SHORT, "--out", str(tmp_path / "maps.svg")], "--out must end in .png or .html"),
        ([str(path), "   ", "--out", str(tmp_path / "x.png")], "the text is empty"),
        ([str(tmp_path / "nowhere"), SHORT, "--out", str(tmp_path / "x.png")], "explain failed"),
    ]:
        result = CliRunner().invoke(app, ["explain", *args])
        assert result.exit_code == 1 and message in result.output, result.output


def test_explain_needs_an_entangle_component(tmp_path):
    import spacy

    blank = spacy.blank("en")
    blank.add_pipe("sentencizer")
    blank.to_disk(tmp_path / "blank")
    result = CliRunner().invoke(app, ["explain", str(tmp_path / "blank"), SHORT, "--out", str(tmp_path / "x.html")])
    assert result.exit_code == 1 and "has no `entangle` component" in result.output
