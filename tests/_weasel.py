"""Subprocesses of the tests (weasel projects, CLIs) run offline with one torch thread."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple


def offline_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of every subprocess the tests start: no hub look-ups, one thread."""
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    env.update(extra or {})
    return env


def weasel(project: Path, command: str, vars=None, env=None, dry=False, check=True) -> Tuple[int, str]:
    """`python -m weasel run COMMAND PROJECT --vars.NAME=VALUE ...`; returns (exit code, output)."""
    args = [sys.executable, "-m", "weasel", "run", command, str(project)]
    if dry:
        args.append("--dry")
    # --vars.NAME=VALUE: one argv item per override
    args += [f"--vars.{k}={v}" for k, v in (vars or {}).items()]
    r = subprocess.run(args, capture_output=True, text=True, env=offline_env(env), cwd=project)
    out = r.stdout + r.stderr
    if check:
        assert r.returncode == 0, f"weasel run {command} failed ({r.returncode}):\n{out[-6000:]}"
    return r.returncode, out
