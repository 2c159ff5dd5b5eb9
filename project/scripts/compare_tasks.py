"""One table across the paper's tasks: entangle (each side) vs the spacy-transformers baseline.

    python project/scripts/compare_tasks.py [--root project] [--preset cpu|paper]
        [--output project/metrics/compare_tasks.md]

Reads the dev metrics that each project has written so far (tasks that have not run are
left out with a note):
  WNUT-17 NER          ROOT/metrics/VARIANT/seedN_dev.json       (project/, variants.yml: the mean
                       over the seeds that ran)
  Tweebank v2 POS      ROOT/tweebank/metrics/PREFIX_dev.json     (project/tweebank, `tweebank`)
  TweetEval emotion    ROOT/tweeteval/metrics/PREFIX_dev.json    (project/tweeteval, `tweeteval`)
  MasakhaNER           ROOT/masakhaner/metrics/PREFIX/LANG_dev.json (project/masakhaner, `masakhaner`):
                       the macro average over the languages every model of the row has
One line per task and score (TweetEval: macro-F1 and accuracy), one column per model:
entangle-subword, entangle-char, entangle-mean (TweetEval's listener + mean pooling
variant), baseline, and the difference entangle-subword − baseline in points. --preset
paper reads the paper presets' metrics (prefixes paper and paper_baseline) instead.
"""

import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import typer
from compare_task import HEADLINE, headline, pct, read_json, write_report
from tables import mean_spread

HERE = Path(__file__).resolve().parent.parent
COLUMNS = ["entangle-subword", "entangle-char", "entangle-mean", "baseline"]
PRESETS = {
    "cpu": {
        "entangle-subword": "entangle",
        "entangle-char": "entangle_char",
        "entangle-mean": "entangle_mean",
        "baseline": "baseline",
    },
    "paper": {"entangle-subword": "paper", "baseline": "paper_baseline"},
}


@dataclass
class Task:
    title: str
    folder: str  # relative to the root (project/)
    kind: str  # ner | tagger | textcat
    split: str  # what the dev split is called
    per_language: bool = False
    seeded: bool = False  # metrics/VARIANT/seedN_dev.json (variants.yml): prefix_x -> VARIANT prefix-x


TASKS = [
    Task("WNUT-17 NER", ".", "ner", "dev", seeded=True),
    Task("Tweebank v2 POS", "tweebank", "tagger", "dev"),
    Task("TweetEval emotion", "tweeteval", "textcat", "val"),
    Task("MasakhaNER", "masakhaner", "ner", "dev", per_language=True),
]


def task_scores(root: Path, task: Task, prefixes: Dict[str, str]) -> Tuple[Dict[str, Dict[str, Optional[float]]], str]:
    """{column: {score name: value}} of one task, and a note (languages averaged)."""
    metrics = root / task.folder / "metrics"
    found: Dict[str, Dict[str, Optional[float]]] = {}
    if task.seeded:
        for column, prefix in prefixes.items():
            devs = [read_json(p) for p in sorted((metrics / prefix.replace("_", "-")).glob("seed*_dev.json"))]
            if devs:
                scores = [headline(task.kind, dev) for dev in devs]
                found[column] = {name: mean_spread([s[name] for s in scores])[0] for name in scores[0]}
        return found, ""
    if not task.per_language:
        for column, prefix in prefixes.items():
            dev = read_json(metrics / f"{prefix}_dev.json")
            if dev is not None:
                found[column] = headline(task.kind, dev)
        return found, ""
    key = HEADLINE[task.kind][0][1]
    per_model: Dict[str, Dict[str, float]] = {}
    for column, prefix in prefixes.items():
        folder = metrics / prefix
        values = {}
        for path in sorted(folder.glob("*_dev.json")) if folder.is_dir() else []:
            value = (read_json(path) or {}).get(key)
            if value is not None:
                values[path.name[: -len("_dev.json")]] = value
        if values:
            per_model[column] = values
    if not per_model:
        return {}, ""
    common = sorted(set.intersection(*(set(v) for v in per_model.values())))
    if not common:
        return {}, f"{task.title}: no language evaluated with every model"
    name = HEADLINE[task.kind][0][0]
    for column, values in per_model.items():
        found[column] = {name: sum(values[lang] for lang in common) / len(common)}
    return found, f"{task.title}: macro average over {len(common)} language(s): {', '.join(common)}"


def make_table(root: Path, preset: str) -> Tuple[List[str], List[str]]:
    prefixes = PRESETS[preset]
    columns = [c for c in COLUMNS if c in prefixes]
    lines = [
        "| task | score | " + " | ".join(columns) + " | subword − baseline |",
        "|---|---|" + "---:|" * (len(columns) + 1),
    ]
    notes = []
    for task in TASKS:
        found, note = task_scores(root, task, prefixes)
        if not found:
            notes.append(f"{task.title}: no {preset} metrics in {root / task.folder / 'metrics'} (not run), left out")
            continue
        if note:
            notes.append(note)
        for name, _ in HEADLINE[task.kind]:
            values = {c: (found.get(c) or {}).get(name) for c in columns}
            sub, base = values.get("entangle-subword"), values.get("baseline")
            delta = "–" if sub is None or base is None else f"{100 * (sub - base):+.2f}"
            cells = [task.title, f"{task.split} {name}"] + [pct(values[c]) for c in columns] + [delta]
            lines.append("| " + " | ".join(cells) + " |")
    return lines, notes


Preset = Enum("Preset", {name: name for name in sorted(PRESETS)}, type=str)  # typer's choices


def main(
    root: Path = typer.Option(HERE, "--root", help="the WNUT-17 project folder holding the task sub-projects"),
    preset: Preset = typer.Option(Preset("cpu"), "--preset"),
    output: Optional[Path] = typer.Option(None, "--output", help="default: ROOT/metrics/compare_tasks[_paper].md"),
) -> None:
    """One table across the paper's tasks: entangle (each side) vs the spacy-transformers baseline."""
    lines, notes = make_table(root, preset.value)
    if len(lines) == 2:
        sys.exit("✘ compare_tasks.py: no task has metrics yet: " + "; ".join(notes))
    which = (
        "CPU presets (MiniLM-L6 + a small CANINE: pretrained by `pretrain-chars` for WNUT-17, "
        "the random-initialised stand-in for the other tasks)"
        if preset.value == "cpu"
        else "paper presets"
    )
    text = [f"Dev scores (%) of the {which}, from each project's latest run.", "", *lines, ""]
    text += [f"- {n}" for n in notes]
    text.append("- entangle-mean: TweetEval only, the listener with mean pooling instead of the first-state head.")
    name = "compare_tasks.md" if preset.value == "cpu" else "compare_tasks_paper.md"
    write_report(output or root / "metrics" / name, text)


if __name__ == "__main__":
    typer.run(main)
