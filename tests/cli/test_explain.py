"""store_attention and `explain`: the co-attention maps are real softmax rows over the other
side's real positions, independent of how a batch pads them, off by default, and drawn."""

import numpy
import pytest
from _pipelines import build, train
from typer.testing import CliRunner

from spacy_entangle.canine import CLS, SEP
from spacy_entangle.cli import app

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


def test_default_off_computes_no_weights(nlp):
    """Off (the default), torch's attention is asked for no weights (its fused kernel
    runs) and nothing is kept; on, the modules keep nothing once the maps are cut."""
    from spacy_entangle.modeling.coattention import CoAttentionBlock

    encoder = nlp.get_pipe("entangle").model.shims[0]._model
    blocks = [m for m in encoder.modules() if isinstance(m, CoAttentionBlock)]
    asked = []
    for block in blocks:
        original = block.attention.forward

        def spy(*args, _original=original, **kwargs):
            asked.append(kwargs.get("need_weights"))
            return _original(*args, **kwargs)

        block.attention.forward = spy
    try:
        doc = nlp(SHORT)
        assert doc._.entangle_attention is None and doc._.entangle.attention is None
        assert asked and not any(asked)
        assert all(b.last_weights is None for b in blocks)
        assert nlp.get_pipe("entangle").model.shims[0].last_attention is None
        nlp.get_pipe("entangle").store_attention = True
        asked.clear()
        assert nlp(SHORT)._.entangle_attention is not None
        assert asked and all(asked)
        assert all(b.last_weights is None for b in blocks)  # handed over, not kept
        assert nlp.get_pipe("entangle").model.shims[0].last_attention is None
    finally:
        nlp.get_pipe("entangle").store_attention = False
        for block in blocks:
            del block.attention.forward


def test_store_attention_is_a_config_setting(canine_dir, bert_dir):
    import spacy
    from _pipelines import entangle_cfg

    blank = spacy.blank("en")
    blank.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir), "store_attention": True})
    assert blank.get_pipe("entangle").store_attention is True
    assert blank.config["components"]["entangle"]["store_attention"] is True
    nlp2 = spacy.blank("en")
    nlp2.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    assert nlp2.config["components"]["entangle"]["store_attention"] is False


def test_windows_are_placed_in_the_doc(nlp, tmp_path):
    """A doc split into windows keeps one map per window, each with its doc offset and
    its pieces' / characters' doc offsets and tokens."""
    from spacy_entangle.tokenization.windows import configure_windows

    entangle = nlp.get_pipe("entangle")
    model = entangle.model
    before = model.attrs["window_settings"]
    model.attrs["window_settings"] = configure_windows(max_chars=24, overlap=0.25)
    entangle.store_attention = True
    try:
        doc = nlp(LONG)
    finally:
        entangle.store_attention = False
        model.attrs["window_settings"] = before
    maps = doc._.entangle_attention
    assert len(maps) >= 3
    starts = [w["start"] for w in maps]
    assert starts[0] == 0 and starts == sorted(starts)
    covered = set()
    for w in maps:
        n_pieces, n_chars = len(w["pieces"]), len(w["chars"])
        start = w["start"]
        assert "".join(w["chars"][1:-1]) == doc.text[start : start + n_chars - 2]
        covered.update(range(start, start + n_chars - 2))
        assert list(w["char_offsets"][1:-1]) == list(range(start, start + n_chars - 2))
        assert w["char_offsets"][0] == w["char_offsets"][-1] == -1
        for k, t in enumerate(w["char_tokens"]):
            off = w["char_offsets"][k]
            if t >= 0:
                assert doc[t].idx <= off < doc[t].idx + len(doc[t])
            elif off >= 0:
                assert doc.text[off].isspace()
        assert w["piece_offsets"].shape == (n_pieces, 2)
        assert tuple(w["piece_offsets"][0]) == tuple(w["piece_offsets"][-1]) == (-1, -1)  # [CLS], [SEP]
        for piece, (a, b), t in zip(w["pieces"][1:-1], w["piece_offsets"][1:-1], w["piece_tokens"][1:-1]):
            assert start <= a < b <= start + n_chars - 2  # inside its window
            assert piece.lstrip("#") == doc.text[a:b].lower()  # uncased WordPiece
            assert t >= 0 and doc[t].idx <= a < doc[t].idx + len(doc[t])
        for s2c, c2s in zip(w["sub2char"], w["char2sub"]):
            assert s2c.shape == (n_pieces, n_chars) and c2s.shape == (n_chars, n_pieces)
            numpy.testing.assert_allclose(s2c.sum(axis=1), 1.0, atol=1e-5)
            numpy.testing.assert_allclose(c2s.sum(axis=1), 1.0, atol=1e-5)
    assert covered >= {i for i, c in enumerate(doc.text)}  # every character is in some window
    from spacy_entangle.cli.explain import write_html

    write_html(maps, tmp_path / "windows.html", "windows")
    page = (tmp_path / "windows.html").read_text(encoding="utf8")
    assert page.count("<table>") == 4 * len(maps) and f"window 2 (characters {maps[1]['start']}–" in page


def test_padding_columns_get_no_weight(nlp):
    """In the padded batch itself (before the cut): padded keys get exactly 0."""
    import torch

    shim = nlp.get_pipe("entangle").model.shims[0]
    encoder = shim._model
    sub_ids = torch.tensor([[101, 2000, 2001, 102, 0, 0], [101, 2000, 2001, 2002, 2003, 102]])
    sub_mask = (torch.arange(6) < torch.tensor([[4], [6]])).long()
    char_ids = torch.zeros((2, 32), dtype=torch.long)
    char_ids[:, 0], char_ids[0, 1:9], char_ids[0, 9] = CLS, 97, SEP
    char_ids[1, 1:20], char_ids[1, 20] = 98, SEP
    char_mask = (torch.arange(32) < torch.tensor([[10], [21]])).long()
    encoder.eval()
    encoder.keep_attention(True)
    try:
        with torch.inference_mode():
            encoder(sub_ids, sub_mask, char_ids, char_mask)
        maps = encoder.attention_maps(clear=True)
    finally:
        encoder.keep_attention(False)
    for s2c, c2s in maps:
        assert s2c.shape == (2, 6, 32) and c2s.shape == (2, 32, 6)
        assert float(s2c[0, :, 10:].abs().max()) == 0.0 and float(s2c[1, :, 21:].abs().max()) == 0.0
        assert float(c2s[0, :, 4:].abs().max()) == 0.0
        torch.testing.assert_close(s2c[0, :4].sum(-1), torch.ones(4))
        torch.testing.assert_close(c2s[1, :21].sum(-1), torch.ones(21))


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
    pytest.importorskip("matplotlib")  # PNGs need it (the `test` extra); the core suite's venv has none
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


def test_the_png_has_a_colour_scale_per_map(nlp):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spacy_entangle.cli.explain import draw_maps, explain_text

    maps = explain_text(nlp, SHORT)
    fig = draw_maps(maps, "title")
    try:
        scales = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
        assert len(scales) == 2 * len(maps[0]["sub2char"])  # one per heat map
        assert all(ax.get_ylabel() == "attention weight" for ax in scales)
    finally:
        plt.close(fig)


def test_an_unknown_pipeline_is_one_line_naming_it(tmp_path):
    out = tmp_path / "maps.html"
    result = CliRunner().invoke(app, ["explain", "nope_pipe", SHORT, "--out", str(out)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("✘ explain failed: [E050]"), result.output
    assert "'nope_pipe'" in lines[0] and str(out) not in lines[0]


TWEET = (
    "@jon_b watching Star Wars: The Last Jedi at the Odeon in London tmrw w/ the whole crew!!! "
    "can't wait 😀 #StarWars #TheLastJedi http://t.co/abc123 who else is going?? lol"
)


def _png_size(path):
    """(width, height) from the PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_a_tweet_is_drawn_in_readable_tiles(nlp, tmp_path):
    """A tweet's maps are cut into stretches of at most TILE_CHARS characters, one under the
    other, each with the pieces of its stretch: the PNG stays about 1,500 px wide (it was 4,241
    before), and every character and piece is drawn."""
    pytest.importorskip("matplotlib")
    from spacy_entangle.cli.explain import TILE_CHARS, char_tiles, draw_maps, explain_text, write_png

    maps = explain_text(nlp, TWEET)
    window = maps[0]
    tiles = char_tiles(window)
    assert len(tiles) >= 4 and all(end - first <= TILE_CHARS for first, end, _ in tiles)
    assert [t[0] for t in tiles[1:]] == [t[1] for t in tiles[:-1]] and tiles[-1][1] == len(window["chars"])
    assert all(window["chars"][end - 1] == " " for _, end, _ in tiles[:-1])  # cut after a space here
    drawn = {p for _, _, pieces in tiles for p in pieces}
    assert drawn == set(range(len(window["pieces"])))
    assert tiles[0][2][0] == 0 and tiles[-1][2][-1] == len(window["pieces"]) - 1  # [CLS], [SEP]
    fig = draw_maps(maps, "tweet")
    heat_maps = [ax for ax in fig.axes if ax.get_title()]
    assert len(heat_maps) == 2 * 2 * len(tiles)  # 2 modules x 2 directions per tile
    assert any("characters 0–" in ax.get_title() for ax in heat_maps)
    write_png(maps, tmp_path / "tweet.png", "tweet")
    width, height = _png_size(tmp_path / "tweet.png")
    assert width <= 1600 and height > width, (width, height)


def test_a_png_without_matplotlib_fails_before_loading_the_model(tmp_path, monkeypatch):
    """No matplotlib (a plain install): one line naming the fix, before the model is even
    looked for (the pipeline here does not exist: loading it would fail differently)."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    out = tmp_path / "maps.png"
    result = CliRunner().invoke(app, ["explain", str(tmp_path / "no-such-pipeline"), SHORT, "--out", str(out)])
    assert result.exit_code == 1
    assert "pip install matplotlib" in result.output and "spacy-entangle[explain]" in result.output
    assert "no-such-pipeline" not in result.output and not out.exists()
