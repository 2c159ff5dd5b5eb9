"""`explain`: draw the co-attention maps of a trained pipeline on one text (which
characters each subword piece reads, and which pieces each character reads), per module,
head-averaged, as a PNG (matplotlib) or a self-contained HTML page."""

import html
from pathlib import Path
from typing import Any, Dict, List

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


def write_png(maps: List[Dict[str, Any]], out: Path, title: str) -> None:
    try:
        import matplotlib
    except ImportError as err:  # matplotlib is in the test/project extras only
        raise ValueError("a PNG needs matplotlib (pip install matplotlib), or write .html") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw_maps(maps, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def draw_maps(maps: List[Dict[str, Any]], title: str) -> Any:
    """The first window's maps as a matplotlib figure: per module, two heat maps, each with
    its colour scale (weights are probabilities; each panel is scaled to its own peak)."""
    import matplotlib.pyplot as plt

    window = maps[0]
    n_modules = len(window["sub2char"])
    pieces, chars = window["pieces"], [c if c.strip() else "␣" for c in window["chars"]]
    fig, axes = plt.subplots(
        n_modules,
        2,
        squeeze=False,
        figsize=(
            max(8.0, 0.18 * len(chars) + 0.18 * len(pieces) + 4),
            max(3.0, n_modules * (0.2 * max(len(pieces), 12) + 1.2)),
        ),
    )
    for m in range(n_modules):
        for col, (key, rows, cols, label) in enumerate(
            (
                ("sub2char", pieces, chars, "subword → characters"),
                ("char2sub", chars, pieces, "character → subwords"),
            )
        ):
            ax = axes[m][col]
            weights = window[key][m]
            if key == "char2sub":  # characters along x, like the left panel
                weights, rows, cols = weights.T, cols, rows
            image = ax.imshow(weights, aspect="auto", cmap="viridis", interpolation="nearest")
            scale = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
            scale.set_label("attention weight", fontsize=7)
            scale.ax.tick_params(labelsize=6)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels(rows, fontsize=6)
            ax.set_xticks(range(len(cols)))
            ax.set_xticklabels(cols, fontsize=6, rotation=0 if key == "sub2char" else 90)
            ax.set_title(f"module {m + 1}: {label}" + (" (columns sum to 1)" if key == "char2sub" else ""), fontsize=8)
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
        nlp = load_pipeline(pipeline)
        maps = explain_text(nlp, text)
        title = f"{pipeline}: {text if len(text) <= 80 else text[:77] + '...'}"
        (write_png if out.suffix.lower() == ".png" else write_html)(maps, out, title)
    more = f" (the first of {len(maps)} windows)" if len(maps) > 1 and out.suffix.lower() == ".png" else ""
    typer.echo(f"✔ Wrote {out}: {len(maps[0]['sub2char'])} co-attention module(s){more}")
