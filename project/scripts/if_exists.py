"""Run a command only if a path exists (weasel runs no shell, so no `[ -e ... ] &&`).

    python scripts/if_exists.py PATH [--else-remove FILE ...] -- COMMAND [ARGS ...]

When PATH is missing the command is skipped (exit 0) and each --else-remove FILE is deleted,
so no stale output of an earlier run is left behind (e.g. metrics of a test split that is
gone). A leading `python` in COMMAND runs this interpreter (as weasel does).
"""

import subprocess
import sys
from pathlib import Path


def main(argv):
    if "--" not in argv:
        sys.exit("usage: if_exists.py PATH [--else-remove FILE ...] -- COMMAND [ARGS ...]")
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1 :]
    if not head or not command:
        sys.exit("usage: if_exists.py PATH [--else-remove FILE ...] -- COMMAND [ARGS ...]")
    path, rest = Path(head[0]), head[1:]
    remove = []
    while rest:
        opt = rest.pop(0)
        if opt != "--else-remove" or not rest:
            sys.exit(f"if_exists.py: unexpected argument {opt!r}")
        remove.append(Path(rest.pop(0)))
    if not path.exists():
        for stale in remove:
            if stale.exists():
                stale.unlink()
                print(f"ℹ removed stale {stale}")
        print(f"ℹ skipped (no {path}): {' '.join(command)}")
        return 0
    if command[0] in ("python", "python3"):
        command[0] = sys.executable
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
