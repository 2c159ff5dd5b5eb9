"""The loss curve of `pretrain-chars` as a PNG (training and held-out losses per objective).

    python scripts/plot_pretrain.py BACKBONE/pretrain_log.jsonl metrics/pretrain_chars.png
"""
import argparse
import json
import sys
from pathlib import Path

SERIES = [
    ("mlm_loss", "masked spans (train)", "-"),
    ("dev_mlm_loss", "masked spans (held out)", "o--"),
    ("noisy_loss", "noisy words (train)", "-"),
    ("dev_noisy_loss", "noisy words (held out)", "o--"),
]


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path)
    p.add_argument("output", type=Path)
    args = p.parse_args(argv)
    if not args.log.exists():
        print(f"✘ {args.log} not found: run `pretrain-chars` first", file=sys.stderr)
        return 1
    entries = [json.loads(line) for line in args.log.read_text(encoding="utf-8").splitlines() if line.strip()]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label, style in SERIES:
        points = [(e["step"], e[key]) for e in entries if key in e]
        if points:
            ax.plot(*zip(*points), style, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title("pretrain-chars: character encoder loss")
    ax.grid(alpha=0.3)
    ax.legend()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    last = entries[-1] if entries else {}
    print(f"✔ {args.output}: {len(entries)} log entries, last step {last.get('step', 0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
