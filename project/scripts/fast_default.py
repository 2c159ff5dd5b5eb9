"""Give a trained pipeline the inference default it ships with: its `entangle` components set to
`inference = "auto"` (on a CPU the fastest mode that keeps fp32's accuracy,
`inference.AUTO_CPU_MODE`; on a GPU the model itself), and, when that mode runs ONNX graphs,
the graphs exported now and saved in the pipeline folder, with the sha256 of the weights they
come from, so `spacy.load` reads them instead of exporting on a user's first doc.

    python scripts/fast_default.py training/entangle-aug/seed0/model-scored [--output DIR]

The export runs on this machine's CPU; the graphs run on any CPU (ONNX Runtime picks its
int8 kernels, VNNI or AMX, when it loads them).
"""

from pathlib import Path
from typing import List, Optional

import typer


def entangle_components(model: Path) -> List[str]:
    """The names of the pipeline's components made by the `entangle` factory."""
    from spacy.util import load_config

    components = load_config(model / "config.cfg", interpolate=False).get("components", {})
    return [name for name, block in components.items() if block.get("factory") == "entangle"]


def main(
    model: Path = typer.Argument(..., help="the pipeline folder (changed in place without --output)"),
    output: Optional[Path] = typer.Option(None, "--output", help="where to save it instead"),
    inference: str = typer.Option("auto", "--inference", help="the inference setting it ships with"),
) -> None:
    """Set the shipped inference default and save the graphs it predicts with."""
    import spacy

    names = entangle_components(model)
    if not names:
        typer.echo(f"✘ {model} has no `entangle` component", err=True)
        raise typer.Exit(code=1)
    nlp = spacy.load(model, config={"components": {name: {"inference": inference} for name in names}})
    for name in names:
        entangle = nlp.get_pipe(name)
        graphs = entangle.prepare_inference()
        mode = entangle.model.shims[0].predict_mode
        held = ", ".join(graphs) or "none (this mode runs without ONNX graphs)"
        typer.echo(f"ℹ {name}: inference = {inference!r} predicts in {mode} here; graphs: {held}")
    out = output or model
    nlp.to_disk(out)
    typer.echo(f"✔ {out}: saved with inference = {inference!r}")


if __name__ == "__main__":
    typer.run(main)
