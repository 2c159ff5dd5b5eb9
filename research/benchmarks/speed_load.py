"""Load to first doc: the seconds from ``spacy.load`` to the first doc's annotations, in a fresh
process each time (so the plugin's imports, reading or exporting what an inference mode predicts
with, and the first call's setup are all counted, as a user meets them), best of N. The child
imports spaCy before the clock starts, nothing else; its torch threads come from
OMP_NUM_THREADS."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, Optional

TEXT = "Empire State Building = ESB . Pretty bad storm here last evening with @paulwalk in New York"


def load_seconds(
    path: str,
    overrides: Dict[str, Any],
    repeats: int,
    threads: int,
    text: str = TEXT,
    pythonpath: Optional[str] = None,
) -> Optional[float]:
    """The best of ``repeats`` fresh processes' load + first doc, in seconds (None: 0 repeats).
    ``pythonpath``: put first on the child's PYTHONPATH (another version of the plugin)."""
    best: Optional[float] = None
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    for _ in range(repeats):
        run = subprocess.run(
            [sys.executable, __file__, path, json.dumps(overrides), text], capture_output=True, text=True, env=env
        )
        if run.returncode:
            sys.exit(f"load + first doc of {path} failed:\n{run.stderr[-3000:]}")
        seconds = float(json.loads(run.stdout.strip().splitlines()[-1])["seconds"])
        best = seconds if best is None else min(best, seconds)
    return best


def _child(path: str, overrides: str, text: str) -> None:
    import time

    import spacy

    start = time.perf_counter()
    nlp = spacy.load(path, config=json.loads(overrides))
    nlp(text)
    print(json.dumps({"seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    _child(*sys.argv[1:4])
