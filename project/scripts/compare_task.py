"""One comparison table of a task's trained models (markdown), for the task sub-projects.

    python ../scripts/compare_task.py --task ner|tagger|textcat --row NAME=PREFIX [--row ...]
        [--metrics-dir metrics] [--output metrics/compare.md] [--title TEXT]
        [--languages swa,hau | all --all-languages amh,...]   (per-language mode)

Single dataset (Tweebank, TweetEval): each row NAME=PREFIX reads METRICS_DIR/PREFIX_dev.json
(scripts/evaluate_task.py) and METRICS_DIR/train_time_PREFIX.json (scripts/timed.py,
optional); the columns are the task's scores: UPOS accuracy (tagger), macro-F1, accuracy
and per-label F1 (textcat), F1/P/R and per-type F1 (ner), then the training time.
Per language (MasakhaNER): each row reads METRICS_DIR/PREFIX/LANG_dev.json and
training/PREFIX/LANG/train_time.json; the table has one line per language, one F1 column
per model, the difference of the first model and the `baseline` row, and a macro average
over the languages that every model was evaluated on.
Rows whose metrics are missing are left out with a note (a variant that was not trained).
Also importable: `headline()` gives a task's main scores (used by compare_tasks.py).
"""

import sys
from enum import Enum
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import typer
from tables import pct as _pct
from tables import read_json, write_report


def pct(value) -> str:
    """Task tables print two decimals."""
    return _pct(value, 2)


# the main scores of each task: (column name, key in the metrics JSON)
HEADLINE = {
    "ner": [("F1", "ents_f")],
    "tagger": [("UPOS acc", "tag_acc")],
    "textcat": [("macro-F1", "cats_macro_f"), ("accuracy", "cats_accuracy")],
}


def minutes(record: Optional[dict]) -> str:
    return "–" if not record or record.get("seconds") is None else f"{float(record['seconds']) / 60:.1f} min"


def headline(task: str, scores: Optional[dict]) -> Dict[str, Optional[float]]:
    """{column name: value} of the task's main scores (None where missing)."""
    return {name: (scores or {}).get(key) for name, key in HEADLINE[task]}


def parse_rows(specs: List[str]) -> List[Tuple[str, str]]:
    rows = []
    for spec in specs:
        name, sep, prefix = spec.partition("=")
        if not sep or not name or not prefix:
            sys.exit(f"compare_task.py: expected --row NAME=PREFIX, got {spec!r}")
        rows.append((name, prefix))
    return rows


def single_table(task: str, metrics_dir: Path, rows: List[Tuple[str, str]]) -> Tuple[List[str], List[str]]:
    found, notes = [], []
    for name, prefix in rows:
        dev = read_json(metrics_dir / f"{prefix}_dev.json")
        if dev is None:
            notes.append(f"{name}: no {metrics_dir / (prefix + '_dev.json')} (not trained/evaluated), left out")
            continue
        found.append((name, dev, read_json(metrics_dir / f"train_time_{prefix}.json")))
    if not found:
        return [], notes
    per_type_key = {"ner": "ents_per_type", "textcat": "cats_f_per_type"}.get(task)
    types = sorted({t for _, dev, _ in found for t in (dev.get(per_type_key) or {})}) if per_type_key else []
    head = ["model"] + [name for name, _ in HEADLINE[task]]
    if task == "ner":
        head += ["P", "R"]
    head += [f"{t} F1" for t in types] + ["train time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for name, dev, time in found:
        cells = [name] + [pct(v) for v in headline(task, dev).values()]
        if task == "ner":
            cells += [pct(dev.get("ents_p")), pct(dev.get("ents_r"))]
        cells += [pct(((dev.get(per_type_key) or {}).get(t) or {}).get("f")) for t in types]
        cells.append(minutes(time))
        lines.append("| " + " | ".join(cells) + " |")
    size = found[0][1]
    if size.get("n_docs"):
        notes.insert(
            0,
            f"dev: {size['n_docs']} docs, {size.get('n_words', '?')} tokens"
            + ("; scored on the corpus's own (gold) tokens" if size.get("gold_preproc") else ""),
        )
    return lines, notes


def language_table(
    task: str, metrics_dir: Path, training_dir: Path, rows: List[Tuple[str, str]], languages: List[str]
) -> Tuple[List[str], List[str]]:
    key = HEADLINE[task][0][1]
    scores: Dict[str, Dict[str, Optional[float]]] = {}
    times: Dict[str, float] = {}
    notes: List[str] = []
    for name, prefix in rows:
        per_lang = {}
        for lang in languages:
            dev = read_json(metrics_dir / prefix / f"{lang}_dev.json")
            per_lang[lang] = None if dev is None else dev.get(key)
            time = read_json(training_dir / prefix / lang / "train_time.json")
            if time and time.get("seconds") is not None:
                times[name] = times.get(name, 0.0) + float(time["seconds"])
        if all(v is None for v in per_lang.values()):
            notes.append(f"{name}: no {metrics_dir / prefix}/LANG_dev.json (not trained/evaluated), left out")
            continue
        scores[name] = per_lang
    if not scores:
        return [], notes
    names = list(scores)
    delta = names[0] if "baseline" in scores and names[0] != "baseline" else None
    head = ["language"] + names + ([f"{delta} − baseline"] if delta else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]

    def diff(a, b):
        return None if a is None or b is None else a - b

    for lang in languages:
        cells = [lang] + [pct(scores[n][lang]) for n in names]
        if delta:
            d = diff(scores[delta][lang], scores["baseline"][lang])
            cells.append("–" if d is None else f"{100 * d:+.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    complete = [lang for lang in languages if all(scores[n][lang] is not None for n in names)]
    if complete:
        means = {n: sum(scores[n][lang] for lang in complete) / len(complete) for n in names}
        cells = [f"**macro avg** ({len(complete)})"] + [f"**{pct(means[n])}**" for n in names]
        if delta:
            cells.append(f"**{100 * (means[delta] - means['baseline']):+.2f}**")
        lines.append("| " + " | ".join(cells) + " |")
        missing = [lang for lang in languages if lang not in complete]
        if missing:
            notes.append(f"macro avg over {', '.join(complete)} only: {', '.join(missing)} lack a model's scores")
    else:
        notes.append("no language has scores for every model: no macro average")
    if times:
        notes.append("train time (all languages): " + ", ".join(f"{n} {t / 60:.1f} min" for n, t in times.items()))
    return lines, notes


Task = Enum("Task", {name: name for name in sorted(HEADLINE)}, type=str)  # typer's choices


def main(
    task: Task = typer.Option(..., "--task"),
    row: List[str] = typer.Option(..., "--row", help="NAME=PREFIX (repeatable)"),
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    training_dir: Path = typer.Option(Path("training"), "--training-dir", help="per-language mode: train times"),
    languages: Optional[str] = typer.Option(None, "--languages", help="per-language mode: 'swa', 'swa,hau' or 'all'"),
    all_languages: Optional[str] = typer.Option(None, "--all-languages", help="what 'all' means (comma-separated)"),
    title: Optional[str] = typer.Option(None, "--title"),
    output: Optional[Path] = typer.Option(None, "--output", help="default: METRICS_DIR/compare.md"),
) -> None:
    """One comparison table of a task's trained models (markdown)."""
    rows = parse_rows(row)
    if languages:
        from foreach import expand_items

        try:
            langs = expand_items(languages, all_languages)
        except ValueError as e:
            sys.exit(f"✘ compare_task.py: {e}")
        lines, notes = language_table(task.value, metrics_dir, training_dir, rows, langs)
        metric = HEADLINE[task.value][0][0]
        intro = f"Dev {metric} (%) per language."
    else:
        lines, notes = single_table(task.value, metrics_dir, rows)
        intro = "Dev scores (%)."
    if not lines:
        sys.exit("✘ compare_task.py: no metrics to compare: " + "; ".join(notes))
    text = ([f"## {title}", ""] if title else []) + [intro, "", *lines, ""] + [f"- {n}" for n in notes]
    text.append("- train time: wall clock of `spacy train` (including its dev evaluations).")
    write_report(output or metrics_dir / "compare.md", text)


if __name__ == "__main__":
    typer.run(main)
