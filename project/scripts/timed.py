"""Run a command and record its wall-clock time as JSON (the training time in `compare`).

    python scripts/timed.py OUT.json -- COMMAND [ARGS ...]

The command's output goes straight to the console (spaCy's training progress stays
visible). OUT.json is written only when the command succeeds; a stale one is removed first.
Exits with the command's exit code. A leading `python` runs this interpreter.
"""

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import List

import typer


def main(
    out: Path = typer.Argument(..., help="the JSON record, written when the command succeeds", dir_okay=False),
    command: List[str] = typer.Argument(..., help="the command after `--`, with its arguments"),
) -> None:
    """Run COMMAND and record its wall-clock time in OUT (JSON); exits with its exit code."""
    if command[0] in ("python", "python3"):
        command[0] = sys.executable
    if out.exists():
        out.unlink()
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    returncode = subprocess.run(command).returncode
    seconds = time.perf_counter() - t0
    if returncode != 0:
        print(f"✘ command failed with exit code {returncode} after {seconds:.0f}s", file=sys.stderr)
        raise typer.Exit(code=returncode)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "seconds": round(seconds, 3),
        "started": started.isoformat(timespec="seconds"),
        "command": command[1:] if command[0] == sys.executable else command,
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"✔ {seconds / 60:.1f} min, recorded in {out}")


if __name__ == "__main__":
    typer.run(main)
