"""Check or fetch a project's assets into a folder (the `data` command).

    python scripts/data.py FOLDER [--var wnut17_dir] [--files train.conll dev.conll] [--workflow all]
        [--also tweets_dir=FOLDER ...]

Runs `weasel assets` with vars.VAR = FOLDER: files already there with the md5 that
project.yml records are kept as they are (a local copy needs no network); missing or
different files are downloaded from the public URLs. `weasel assets` fetches every asset of
the project, so the folders of the others are passed along with --also VAR=FOLDER. On failure, says how to use a local copy.
"""

import argparse
import subprocess
import sys
from pathlib import Path


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--var", default="wnut17_dir", help="the project variable that names the folder")
    p.add_argument("--files", nargs="+", default=["train.conll", "dev.conll"], help="files that must be there")
    p.add_argument("--workflow", default="all", help="workflow named in the hint")
    p.add_argument("--also", action="append", default=[], metavar="VAR=FOLDER", help="another asset folder variable")
    args = p.parse_args(argv)
    others = [a.split("=", 1) for a in args.also]
    if any(len(o) != 2 for o in others):
        p.error("--also takes VAR=FOLDER")
    overrides = [f"--vars.{args.var}", args.folder] + [
        item for var, folder in others for item in (f"--vars.{var}", folder)
    ]
    rc = subprocess.run([sys.executable, "-m", "weasel", "assets", ".", *overrides]).returncode
    missing = [name for name in args.files if not (Path(args.folder) / name).is_file()]
    if rc != 0 or missing:
        print(
            f"✘ {', '.join(missing or args.files)} not in {args.folder} (download failed or checksum mismatch).\n"
            f"  Without internet, point the project at a local copy holding {', '.join(args.files)}, e.g.\n"
            f"  `python -m weasel run {args.workflow} . --vars.{args.var} PATH/TO/LOCAL/COPY`"
            + "".join(f" (and --vars.{var} for {folder})" for var, folder in others)
            + ".",
            file=sys.stderr,
        )
        return rc or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
