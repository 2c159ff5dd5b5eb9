"""Write or check the shipped configs generated from the parts:

python -m spacy_entangle.configs --write   # after editing parts/ or shipped.py
python -m spacy_entangle.configs --check   # exit 1 when a shipped config is stale
"""

import argparse
import sys
from typing import List, Optional

from . import CONFIGS_DIR
from .compose import generate
from .shipped import SHIPPED


def stale() -> List[str]:
    """The shipped configs whose text differs from their recipe's (or that are missing)."""
    names = []
    for name, text in generate(SHIPPED).items():
        path = CONFIGS_DIR / name
        if not path.is_file() or path.read_text(encoding="utf8") != text:
            names.append(name)
    return names


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_entangle.configs", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write every shipped config from its recipe")
    mode.add_argument("--check", action="store_true", help="exit 1 if a shipped config differs from its recipe")
    args = parser.parse_args(argv)
    if args.write:
        for name, text in generate(SHIPPED).items():
            (CONFIGS_DIR / name).write_text(text, encoding="utf8")
        print(f"✔ wrote {len(SHIPPED)} configs to {CONFIGS_DIR}")
        return 0
    names = stale()
    if names:
        print(f"✘ stale: {', '.join(names)}; run python -m spacy_entangle.configs --write", file=sys.stderr)
        return 1
    print(f"✔ {len(SHIPPED)} shipped configs match their parts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
