"""Run a command once per item of a list (a project variable such as `languages`).

    python scripts/foreach.py ITEMS [--all a,b,c] [--placeholder {lang}] -- COMMAND [ARGS ...]

ITEMS: one item ("swa"), a comma-separated list ("swa,hau,yor"), or "all" (the --all list).
With --all, every item must be one of its entries (a typo fails before anything runs).
Each run gets the placeholder (default `{lang}`) replaced by the item in every argument.
Weasel runs no shell and has no loops: this is how one project command covers every
language of a variable. Stops at the first failure, with its exit code. A leading `python`
runs this interpreter (as weasel does).
"""

import subprocess
import sys
from typing import List, Optional

import typer


def expand_items(spec: str, all_items: Optional[str] = None) -> List[str]:
    """ "swa" | "swa,hau" | "all" -> the items, in order, duplicates dropped. Raises
    ValueError on an empty list, "all" without an --all list, or an item not in it."""
    known = [x.strip() for x in (all_items or "").split(",") if x.strip()]
    if spec.strip() == "all":
        if not known:
            raise ValueError("ITEMS is 'all' but no --all list was given")
        return known
    items: List[str] = []
    for item in (x.strip() for x in spec.split(",")):
        if item and item not in items:
            items.append(item)
    if not items:
        raise ValueError(f"no items in {spec!r}")
    unknown = [item for item in items if known and item not in known]
    if unknown:
        raise ValueError(f"unknown item(s) {', '.join(unknown)} (expected 'all' or some of {', '.join(known)})")
    return items


def main(
    spec: str = typer.Argument(..., metavar="ITEMS", help="an item, items separated by commas, or 'all'"),
    command: List[str] = typer.Argument(..., help="the command after `--`, with its arguments"),
    all_items: Optional[str] = typer.Option(None, "--all", help="what 'all' means; every item must be one of them"),
    placeholder: str = typer.Option("{lang}", "--placeholder", help="replaced by the item in every argument"),
) -> None:
    """Run COMMAND once per item, the placeholder replaced; stop at the first failure."""
    try:
        items = expand_items(spec, all_items)
    except ValueError as e:
        print(f"✘ foreach.py: {e}", file=sys.stderr)
        raise typer.Exit(code=1) from None
    if command[0] in ("python", "python3"):
        command[0] = sys.executable
    for n, item in enumerate(items, start=1):
        args = [arg.replace(placeholder, item) for arg in command]
        print(f"ℹ [{n}/{len(items)}] {item}: {' '.join(args[1:] if args[0] == sys.executable else args)}", flush=True)
        returncode = subprocess.run(args).returncode
        if returncode != 0:
            print(f"✘ foreach.py: {item} failed with exit code {returncode}", file=sys.stderr)
            raise typer.Exit(code=returncode)


if __name__ == "__main__":
    typer.run(main)
