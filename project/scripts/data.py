"""Check or fetch a project's assets into a folder (the `data` command).

    python scripts/data.py FOLDER [--var wnut17_dir] [--files train.conll --files dev.conll] [--workflow all]
        [--also tweets_dir=FOLDER ...]

Runs `weasel assets` with vars.VAR = FOLDER: files already there with the md5 that
project.yml records are kept as they are (a local copy needs no network); missing or
different files are downloaded from the public URLs. `weasel assets` fetches every asset of
the project, so the folders of the others are passed along with --also VAR=FOLDER. On failure, says how to use a local copy.
"""

import subprocess
import sys
from pathlib import Path
from typing import List

import typer


def main(
    folder: str = typer.Argument(..., help="where the assets are (or go)"),
    var: str = typer.Option("wnut17_dir", "--var", help="the project variable that names the folder"),
    files: List[str] = typer.Option(
        ["train.conll", "dev.conll"], "--files", help="a file that must be there (repeatable)"
    ),
    workflow: str = typer.Option("all", "--workflow", help="workflow named in the hint"),
    also: List[str] = typer.Option([], "--also", metavar="VAR=FOLDER", help="another asset folder variable"),
) -> None:
    """Check or fetch a project's assets into a folder (`weasel assets`)."""
    others = [a.split("=", 1) for a in also]
    if any(len(o) != 2 for o in others):
        raise typer.BadParameter("takes VAR=FOLDER", param_hint="--also")
    overrides = [f"--vars.{var}", folder] + [item for name, path in others for item in (f"--vars.{name}", path)]
    rc = subprocess.run([sys.executable, "-m", "weasel", "assets", ".", *overrides]).returncode
    missing = [name for name in files if not (Path(folder) / name).is_file()]
    if rc != 0 or missing:
        print(
            f"✘ {', '.join(missing or files)} not in {folder} (download failed or checksum mismatch).\n"
            f"  Without internet, point the project at a local copy holding {', '.join(files)}, e.g.\n"
            f"  `python -m weasel run {workflow} . --vars.{var} PATH/TO/LOCAL/COPY`"
            + "".join(f" (and --vars.{name} for {path})" for name, path in others)
            + ".",
            file=sys.stderr,
        )
        raise typer.Exit(code=rc or 1)


if __name__ == "__main__":
    typer.run(main)
