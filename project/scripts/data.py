"""Check or fetch the WNUT-17 assets into a folder (the project's `data` command).

    python scripts/data.py WNUT17_DIR

Runs `weasel assets` with vars.wnut17_dir = WNUT17_DIR: files already there with the md5
that project.yml records are kept as they are (a local copy needs no network); missing or
different files are downloaded from the public URLs. On failure, says how to use a local copy.
"""
import subprocess
import sys
from pathlib import Path


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: data.py WNUT17_DIR")
    folder = argv[0]
    cmd = [sys.executable, "-m", "weasel", "assets", ".", "--vars.wnut17_dir", folder]
    rc = subprocess.run(cmd).returncode
    missing = [name for name in ("train.conll", "dev.conll") if not (Path(folder) / name).is_file()]
    if rc != 0 or missing:
        print(
            f"✘ WNUT-17 train/dev are not in {folder} (download failed or checksum mismatch).\n"
            "  Without internet, point the project at a local copy holding train.conll and\n"
            "  dev.conll, e.g. `python -m weasel run all . --vars.wnut17_dir ../../shared/data/wnut17`.",
            file=sys.stderr,
        )
        return rc or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
