"""Run `python -m MODULE ARGS` in one process, or data-parallel in N under torchrun (weasel
runs no shell, so a variable cannot choose the launcher by itself).

    python scripts/launch.py N -- python -m MODULE [ARGS ...]

N = 1 runs the command as it is. N > 1 runs `torchrun --standalone --nproc_per_node N -m
MODULE ARGS` (this interpreter's torch.distributed.run, which is what `torchrun` is: no
PATH needed; one machine, a free port). Several machines are started by hand with torchrun:
docs/growing-at-scale.md.
"""

import subprocess
import sys
from typing import List

import typer


def launch_command(procs: int, command: List[str]) -> List[str]:
    """The command line that runs ``command`` in ``procs`` processes (a leading `python`
    is this interpreter, as weasel makes it)."""
    if procs < 1:
        raise ValueError(f"give 1 or more processes, got {procs}")
    command = [sys.executable if command[0] in ("python", "python3") else command[0], *command[1:]]
    if procs == 1:
        return command
    if len(command) < 3 or command[0] != sys.executable or command[1] != "-m":
        raise ValueError(f"several processes run `python -m MODULE ...`, not {' '.join(command)!r}")
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(procs), *command[1:]]


def main(
    procs: int = typer.Argument(..., help="processes (1: the command as it is)"),
    command: List[str] = typer.Argument(..., help="`python -m MODULE ARGS...`, after `--`"),
) -> None:
    """Run COMMAND in PROCS processes."""
    try:
        line = launch_command(procs, command)
    except ValueError as err:
        typer.echo(f"✘ {err}", err=True)
        raise typer.Exit(code=1) from None
    raise typer.Exit(code=subprocess.run(line).returncode)


if __name__ == "__main__":
    typer.run(main)
