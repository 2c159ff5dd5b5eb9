"""Copy a built wheel into a folder (weasel runs no shell, so no `cp`): `spacy package` leaves
the model's wheel in packages/NAME-VERSION/dist/, and `pip install --find-links packages NAME`
finds only the wheels at the folder's top.

    python scripts/copy_wheel.py packages/en_entangle_wnut-0.1.0/dist/en_entangle_wnut-0.1.0-py3-none-any.whl packages
"""

import shutil
from pathlib import Path

import typer


def main(
    wheel: Path = typer.Argument(..., help="the .whl file to copy", exists=True, dir_okay=False),
    folder: Path = typer.Argument(..., help="the folder pip's --find-links reads", file_okay=False),
) -> None:
    """Copy WHEEL into FOLDER, replacing a wheel of the same name."""
    if wheel.suffix != ".whl":
        raise typer.BadParameter(f"{wheel} is not a wheel (.whl)", param_hint="WHEEL")
    folder.mkdir(parents=True, exist_ok=True)
    target = shutil.copy2(wheel, folder / wheel.name)
    print(f"✔ {target}: `pip install --find-links {folder} {wheel.name.split('-')[0]}` finds it")


if __name__ == "__main__":
    typer.run(main)
