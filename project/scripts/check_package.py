"""Smoke-test an installed pipeline package in a fresh process.

    python scripts/check_package.py en_entangle_wnut [--output packages/installed.json]

Loads the package by name with spacy.load from a temporary working directory (so nothing
in the project folder is picked up), checks that the requirements in its meta are
installed, tags a sample tweet and prints the entities. Exits 1 on any failure.
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

import typer

SAMPLE = "Empire State Building = ESB . Pretty bad storm here last evening with @paulwalk in New York"


def main(
    name: str = typer.Argument(..., help="the installed package, e.g. en_entangle_wnut"),
    output: Optional[Path] = typer.Option(None, "--output", help="a JSON record of what was loaded"),
) -> None:
    """Smoke-test an installed pipeline package in a fresh process."""
    output = output.resolve() if output else None
    from importlib.metadata import PackageNotFoundError, version

    import spacy
    from packaging.requirements import Requirement

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        nlp = spacy.load(name)
    problems = []
    for req in nlp.meta.get("requirements", []):
        r = Requirement(req)
        try:
            have = version(r.name)
        except PackageNotFoundError:
            problems.append(f"{req}: not installed")
            continue
        if r.specifier and not r.specifier.contains(have, prereleases=True):
            problems.append(f"{req}: installed {have}")
    doc = nlp(SAMPLE)
    ents = [(e.text, e.label_) for e in doc.ents]
    # scored_ner (the shipped ner, decoded by a beam): one confidence per entity
    group = doc.spans.get("ents")
    scores = (
        [round(float(s), 4) for s in group.attrs["scores"]] if group is not None and "scores" in group.attrs else None
    )
    pkg = sys.modules.get(name)
    location = getattr(pkg, "__file__", None)
    print(
        f"✔ spacy.load({name!r}) {nlp.meta.get('version')}: pipeline {nlp.pipe_names}, "
        f"labels {list(nlp.get_pipe('ner').labels) if 'ner' in nlp.pipe_names else []}"
    )
    print(f"  requirements: {nlp.meta.get('requirements')}")
    print(f"  {SAMPLE!r} -> {ents}" + (f", scores {scores}" if scores is not None else ""))
    if problems:
        print("✘ unmet requirements: " + "; ".join(problems), file=sys.stderr)
        raise typer.Exit(code=1)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(
            json.dumps(
                {
                    "name": name,
                    "version": nlp.meta.get("version"),
                    "location": location,
                    "pipeline": nlp.pipe_names,
                    "labels": sorted(nlp.get_pipe("ner").labels) if "ner" in nlp.pipe_names else [],
                    "requirements": nlp.meta.get("requirements"),
                    "sample": SAMPLE,
                    "entities": ents,
                    "scores": scores,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    typer.run(main)
