"""Run by test_pretrain_ddp.py under `torchrun --nproc_per_node 2`: several `pretrain_chars`
calls in one launch (each launch costs two processes' imports), inside a gloo process group
this script holds, as a program embedding the pretraining would (pretrain_chars joins a
group it finds and leaves it open).

    torchrun --standalone --nproc_per_node 2 tests/pretraining/_ddp_runs.py RUNS.json

RUNS.json: a list of {"texts": [...], "out": ..., "settings": {...}, "config": ..., "resume": bool}.
"""

import json
import sys
from pathlib import Path

import torch.distributed as dist

from spacy_entangle.pretraining import PretrainSettings, pretrain_chars


def main(spec: Path) -> None:
    dist.init_process_group("gloo")
    try:
        for run in json.loads(spec.read_text(encoding="utf8")):
            pretrain_chars(
                [Path(text) for text in run["texts"]],
                Path(run["out"]),
                PretrainSettings(**run["settings"]),
                config=run.get("config", "canine-small"),
                resume=run["resume"],
                progress=False,
            )
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
