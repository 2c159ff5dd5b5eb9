"""The loss curves of `pretrain-chars` as a PNG (training and held-out losses per objective).

Character objectives (cross-entropy, nats per character) on the left; the teacher
distillation (MSE of layer-normalised word states = 2·(1 − correlation)), when the run had a
teacher, on a panel of its own on the right: the units differ.

    python scripts/plot_pretrain.py BACKBONE/pretrain_log.jsonl metrics/pretrain_chars.png
"""

import json
import sys
from pathlib import Path

import typer

SERIES = [
    ("mlm_loss", "masked spans (train)", "-"),
    ("dev_mlm_loss", "masked spans (held out)", "o--"),
    ("noisy_loss", "noisy words (train)", "-"),
    ("dev_noisy_loss", "noisy words (held out)", "o--"),
]
DISTILL = [
    ("distill_loss", "teacher distillation (train)", "-"),
    ("dev_distill_loss", "teacher distillation (held out)", "o--"),
]


def _draw(ax, entries, series) -> None:
    for key, label, style in series:
        points = [(e["step"], e[key]) for e in entries if key in e]
        if points:
            ax.plot(*zip(*points), style, label=label)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()


def main(
    log: Path = typer.Argument(..., help="pretrain_log.jsonl of a `pretrain-chars` run"),
    output: Path = typer.Argument(..., help="the PNG"),
) -> None:
    """The loss curves of `pretrain-chars` as a PNG (training and held-out losses per objective)."""
    if not log.exists():
        print(f"✘ {log} not found: run `pretrain-chars` first", file=sys.stderr)
        raise typer.Exit(code=1)
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    distilled = any("distill_loss" in e for e in entries)
    fig, axes = plt.subplots(1, 2 if distilled else 1, figsize=(12 if distilled else 7, 4), squeeze=False)
    ax = axes[0][0]
    _draw(ax, entries, SERIES)
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title("pretrain-chars: character objectives")
    if distilled:
        _draw(axes[0][1], entries, DISTILL)
        axes[0][1].set_ylabel("MSE of layer-normalised word states")
        axes[0][1].set_title("pretrain-chars: teacher distillation")
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    last = entries[-1] if entries else {}
    print(f"✔ {output}: {len(entries)} log entries, last step {last.get('step', 0)}")


if __name__ == "__main__":
    typer.run(main)
