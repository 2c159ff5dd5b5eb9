"""Run a command only if a path exists (weasel runs no shell, so no `[ -e ... ] &&`).

    python scripts/if_exists.py PATH [--else-remove FILE ...] -- COMMAND [ARGS ...]

When PATH is missing the command is skipped (exit 0) and each --else-remove FILE is deleted,
so no stale output of an earlier run is left behind (e.g. metrics of a test split that is
gone). A leading `python` in COMMAND runs this interpreter (as weasel does).
"""

import subprocess
import sys
from pathlib import Path
from typing import List

import typer


def main(
    path: Path = typer.Argument(..., help="run the command only if this exists"),
    command: List[str] = typer.Argument(..., help="the command after `--`, with its arguments"),
    else_remove: List[Path] = typer.Option([], "--else-remove", help="deleted when PATH is missing (repeatable)"),
) -> None:
    """Run COMMAND only if PATH exists; otherwise delete each --else-remove FILE and exit 0."""
    if not path.exists():
        for stale in else_remove:
            if stale.exists():
                stale.unlink()
                print(f"ℹ removed stale {stale}")
        print(f"ℹ skipped (no {path}): {' '.join(command)}")
        return
    if command[0] in ("python", "python3"):
        command[0] = sys.executable
    raise typer.Exit(code=subprocess.run(command).returncode)


if __name__ == "__main__":
    typer.run(main)
