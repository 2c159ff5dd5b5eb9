"""`explain`: draw the co-attention maps of a trained pipeline on one text (which
characters each subword piece reads, and which pieces each character reads), per module,
head-averaged, as a PNG (matplotlib: the `explain` extra; a long text in tiles) or a
self-contained HTML page."""

import html
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy
import typer
from spacy.language import Language

from ._app import app, cli_errors

FORMATS = (".png", ".html")


def entangle_component(nlp: Language) -> Any:
    """The pipeline's first `entangle` component (by factory, whatever its name)."""
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory == "entangle":
            return nlp.get_pipe(name)
    raise ValueError(
        f"the pipeline has no `entangle` component (its components: {', '.join(nlp.pipe_names) or 'none'})"
    )


def load_pipeline(name: str) -> Any:
    """spacy.load, with a pipeline it cannot find or read as one clear error (spaCy's
    message names the pipeline: no output-file prefix)."""
    import spacy

    try:
        return spacy.load(name)
    except OSError as err:
        raise ValueError(str(err)) from None


def explain_text(nlp: Language, text: str) -> List[Dict[str, Any]]:
    """The maps of ``text`` (one dict per window, see ``doc._.entangle_attention``)."""
    if not text.strip():
        raise ValueError("the text is empty")
    component = entangle_component(nlp)
    before = component.store_attention
    component.store_attention = True
    try:
        doc = nlp(text)
    finally:
        component.store_attention = before
    maps = doc._.entangle_attention or []
    if not maps or not maps[0]["sub2char"]:
        raise ValueError("the model has no co-attention module (n_coattention = 0): nothing to draw")
    return maps


MATPLOTLIB_HINT = (
    'a PNG needs matplotlib: pip install matplotlib (or pip install "spacy-entangle[explain]"), or write .html'
)
# the most characters one tile of the PNG shows: a longer window is drawn as several tiles,
# one under the other, so the picture stays readable (and about 1,500 px wide)
TILE_CHARS = 40


def require_matplotlib() -> None:
    """Fail before the model loads (seconds) when a PNG cannot be drawn: matplotlib is not
    a dependency of the library, only of its `explain` extra."""
    from importlib.util import find_spec

    if find_spec("matplotlib") is None:
        raise ValueError(MATPLOTLIB_HINT)


def write_png(maps: List[Dict[str, Any]], out: Path, title: str) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw_maps(maps, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def char_tiles(window: Dict[str, Any], width: int = TILE_CHARS) -> List[Tuple[int, int, List[int]]]:
    """The window's characters cut into stretches of at most ``width`` (at a space where one
    falls in the stretch's second half), each with the pieces whose characters overlap it:
    (first char, end char, piece indices). [CLS] and [SEP] sit on their own characters."""
    n_chars, n_pieces, start = len(window["chars"]), len(window["pieces"]), int(window.get("start", 0))
    offsets = window.get("piece_offsets")
    spans = []
    for p in range(n_pieces):
        a, b = (int(x) for x in offsets[p]) if offsets is not None else (-1, -1)
        if a < 0:  # a special piece: [CLS] first, [SEP] last
            lo = 0 if p == 0 else n_chars - 1
            spans.append((lo, lo + 1))
        else:
            spans.append((a - start + 1, max(b, a + 1) - start + 1))
    tiles, i = [], 0
    while i < n_chars:
        end = min(i + width, n_chars)
        if end < n_chars:
            spaces = [k + 1 for k in range(i + width // 2, end) if not window["chars"][k].strip()]
            end = spaces[-1] if spaces else end
        tiles.append((i, end, [p for p, (lo, hi) in enumerate(spans) if lo < end and hi > i]))
        i = end
    return tiles


def draw_maps(maps: List[Dict[str, Any]], title: str, width: int = TILE_CHARS) -> Any:
    """The first window's maps as a matplotlib figure: per module and stretch of at most
    ``width`` characters (char_tiles), two heat maps side by side, characters along x and the
    stretch's pieces along y; each direction has one colour scale over all its tiles (weights
    are probabilities), so the stretches compare."""
    import matplotlib.pyplot as plt

    window = maps[0]
    n_modules = len(window["sub2char"])
    pieces, chars = window["pieces"], [c if c.strip() else "␣" for c in window["chars"]]
    tiles = char_tiles(window, width)
    rows = [(m, tile) for m in range(n_modules) for tile in tiles]
    heights = [0.2 * max(len(tile[2]), 4) + 1.0 for _, tile in rows]
    widest = max(end - first for first, end, _ in tiles)
    fig, axes = plt.subplots(
        len(rows),
        2,
        squeeze=False,
        figsize=(2 * (0.14 * widest + 1.4), sum(heights) + 0.6),
        gridspec_kw={"height_ratios": heights},
    )
    for r, (m, (first, end, rows_at)) in enumerate(rows):
        where = f", characters {first}–{end - 1}" if len(tiles) > 1 else ""
        for col, (key, label) in enumerate(
            (("sub2char", "subword → characters"), ("char2sub", "character → subwords (columns sum to 1)"))
        ):
            ax = axes[r][col]
            weights = window[key][m] if key == "sub2char" else window[key][m].T  # pieces x characters
            image = ax.imshow(
                weights[rows_at, first:end],
                aspect="auto",
                cmap="viridis",
                interpolation="nearest",
                vmin=0.0,
                vmax=float(weights.max()) or 1.0,
            )
            scale = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
            scale.set_label("attention weight", fontsize=7)
            scale.ax.tick_params(labelsize=6)
            ax.set_yticks(range(len(rows_at)))
            ax.set_yticklabels([pieces[p] for p in rows_at], fontsize=6)
            ax.set_xticks(range(end - first))
            ax.set_xticklabels(chars[first:end], fontsize=6, rotation=90 if key == "char2sub" else 0)
            ax.set_title(f"module {m + 1}{where}: {label}", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def write_html(maps: List[Dict[str, Any]], out: Path, title: str) -> None:
    """Tables with one cell per (row, column) weight, shaded by it (no scripts)."""

    def table(weights: numpy.ndarray, rows: List[str], cols: List[str]) -> str:
        head = "".join(f"<th>{html.escape(c) or '&nbsp;'}</th>" for c in cols)
        body = []
        peak = float(weights.max()) or 1.0
        for r, row in enumerate(rows):
            cells = "".join(
                f'<td title="{float(w):.3f}" style="background:rgba(68,1,84,{float(w) / peak:.3f})"></td>'
                for w in weights[r]
            )
            body.append(f"<tr><th>{html.escape(row)}</th>{cells}</tr>")
        return f"<table><tr><th></th>{head}</tr>{''.join(body)}</table>"

    parts = [f"<h1>{html.escape(title)}</h1>"]
    for w, window in enumerate(maps):
        chars = [c if c.strip() else "␣" for c in window["chars"]]
        for m, (s2c, c2s) in enumerate(zip(window["sub2char"], window["char2sub"])):
            start = int(window.get("start", 0))
            where = f"window {w + 1} (characters {start}–{start + len(chars) - 2}), " if len(maps) > 1 else ""
            parts.append(f"<h2>{where}module {m + 1}: subword → characters (rows sum to 1)</h2>")
            parts.append(table(s2c, window["pieces"], chars))
            parts.append(f"<h2>{where}module {m + 1}: character → subwords (rows sum to 1)</h2>")
            parts.append(table(c2s, chars, window["pieces"]))
    style = (
        "body{font-family:sans-serif}table{border-collapse:collapse;font-size:10px}"
        "td{width:12px;height:12px;border:1px solid #eee}th{font-weight:normal;padding:0 3px}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style>{''.join(parts)}",
        encoding="utf8",
    )


@app.command("explain")
def explain_cli(
    pipeline: str = typer.Argument(
        ..., help="Trained pipeline with an `entangle` component: an installed package name or a folder"
    ),
    text: str = typer.Argument(..., help="The text to explain"),
    out: Path = typer.Option(..., "--out", "-o", help="FILE.png (heat maps, matplotlib) or FILE.html (self-contained)"),
) -> None:
    """Draw the co-attention maps of one text: per module, head-averaged, which characters
    each subword piece reads and which pieces each character reads."""
    with cli_errors("explain", str(out)):
        if out.suffix.lower() not in FORMATS:
            raise ValueError(f"--out must end in {' or '.join(FORMATS)}, got {out.name!r}")
        if out.suffix.lower() == ".png":
            require_matplotlib()  # before the model's seconds of loading
        nlp = load_pipeline(pipeline)
        maps = explain_text(nlp, text)
        title = f"{pipeline}: {text if len(text) <= 80 else text[:77] + '...'}"
        (write_png if out.suffix.lower() == ".png" else write_html)(maps, out, title)
    more = f" (the first of {len(maps)} windows)" if len(maps) > 1 and out.suffix.lower() == ".png" else ""
    typer.echo(f"✔ Wrote {out}: {len(maps[0]['sub2char'])} co-attention module(s){more}")
