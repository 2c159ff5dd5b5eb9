"""Train, evaluate and compare the variants of a variants.yml (WNUT-17's; each task project has its own).

    python scripts/variants.py train NAME [NAME ...] [--seeds 0,1,2] [--char-encoder grown]
        [--max-steps 600] [--eval-frequency 200] [--noisy corpus/dev_noise0.5.spacy ...]
        [--gpu-id -1] [--threads N] [--dry-run] [-- EXTRA spacy train ARGS]
    python scripts/variants.py evaluate NAME [NAME ...] [--seeds ...] [--noisy ...]
    python scripts/variants.py compare [NAME ...] [--output metrics/compare.md] [--plot metrics/compare.png]
    python scripts/variants.py select NAME [NAME ...] [--prior meta/selection.json] [--noise 0.5] [--min-seeds 3]
        [--char-encoder grown] [--reference baseline --reference baseline-aug] [--output metrics/selection.json]
    python scripts/variants.py select-table [--selection meta/selection.json] [--page ../docs/results/wnut17.md] [--check]
    python scripts/variants.py pipelines [NAME ...] --output metrics/pipelines_seed0.txt [--seed 0]
    python ../scripts/variants.py train-one NAME --output DIR [--time PATH] [--variants variants.yml]
        [--configs-dir ../../configs] [--char-dir DIR] [--override KEY=VALUE ...] [-- EXTRA ARGS]

The commands live in variants_run.py (train, evaluate, train-one, pipelines: running things)
and variants_report.py (compare, select, select-table: reading metrics, writing tables and the selection);
_variants.py holds what they share (variants.yml, the folder layout). Another budget is
another run: use another --training-dir and --metrics-dir. --override KEY=VALUE goes to every
variant (`--KEY VALUE`), the EXTRA args after `--` to the entangle variants only; --char-dir is
the char backbone of the variants whose char_encoder is `default` (instead of
backbones/canine-ENCODER). `python scripts/variants.py COMMAND --help` lists every option.
"""

from __future__ import annotations

import sys
from typing import List, Optional, Sequence, Tuple

import variants_report  # noqa: F401 (registers compare, select)
import variants_run  # noqa: F401 (registers train, evaluate, train-one, pipelines)
from _variants import app


def split_extra(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(the command line, what follows `--`): the extra `spacy train` overrides of the entangle
    variants, cut off before typer parses the rest (it would read them as more NAMEs)."""
    args = list(argv)
    if "--" not in args:
        return args, []
    cut = args.index("--")
    return args[:cut], args[cut + 1 :]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run one command and exit with its exit code (typer's usage errors: 2)."""
    args, extra = split_extra(sys.argv[1:] if argv is None else argv)
    app(args=args, prog_name="variants.py", obj=extra)


if __name__ == "__main__":
    main()
