"""Evaluate trained pipelines on a .spacy corpus: spaCy's scores plus textcat accuracy.

    python scripts/evaluate_task.py DATA.spacy --model NAME=MODEL_DIR [--model ...]
        [--optional NAME=MODEL_DIR ...] [--split dev] [--metrics-dir metrics]
        [--gold-preproc true|false] [--gpu-id -1]

Writes METRICS_DIR/NAME_SPLIT.json per model: every score of spaCy's Scorer (the keys of
`spacy evaluate --output`: tag_acc, ents_f/p/r, ents_per_type, cats_score, ..., plus
cats_macro_f, cats_micro_f and cats_f_per_type), and for a textcat with exclusive labels
`cats_accuracy` (the share of docs whose top-scoring label is the gold one; `spacy
evaluate` does not report it), with the corpus size. --gold-preproc true evaluates on the
corpus's own tokens (as `spacy evaluate --gold-preproc`: Tweebank's UPOS accuracy is per
gold word, as in the paper) instead of re-tokenizing the text. A --model directory that is
missing is an error; an --optional one is skipped with a note (a variant not trained).
"""

import sys
import time
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer
from _models import load_models


def cats_accuracy(examples) -> Optional[float]:
    """Top predicted label == top gold label, over the docs with exactly one gold label."""
    right = total = 0
    for eg in examples:
        gold = {k: v for k, v in eg.reference.cats.items() if v is not None}
        if not gold or sum(1 for v in gold.values() if v >= 0.5) != 1 or not eg.predicted.cats:
            continue
        total += 1
        right += max(gold, key=gold.get) == max(eg.predicted.cats, key=eg.predicted.cats.get)
    return right / total if total else None


def plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars (spaCy's scorer returns some) become Python numbers."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def evaluate(nlp, data: Path, gold_preproc: bool) -> Dict:
    """What `nlp.evaluate` does (the pipeline over each example's predicted doc, then spaCy's
    Scorer), run here so that the predictions stay available for cats_accuracy."""
    from spacy.scorer import Scorer
    from spacy.training import Corpus

    examples = list(Corpus(data, gold_preproc=gold_preproc)(nlp))
    if not examples:
        sys.exit(f"✘ evaluate_task.py: no documents in {data}")
    t0 = time.perf_counter()
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        eg.predicted = doc
    seconds = time.perf_counter() - t0
    scores = plain(Scorer(nlp=nlp).score(examples))
    scores["speed"] = sum(len(eg.predicted) for eg in examples) / max(seconds, 1e-9)
    if any(eg.reference.cats for eg in examples):
        scores["cats_accuracy"] = cats_accuracy(examples)
    scores["n_docs"] = len(examples)
    scores["n_words"] = sum(len(eg.reference) for eg in examples)
    scores["gold_preproc"] = gold_preproc
    return scores


# --gold-preproc takes a value, not a flag: project.yml passes a variable
TrueFalse = Enum("TrueFalse", {"true": "true", "false": "false"}, type=str)


def headline(scores: Dict) -> str:
    parts = []
    for key, name in [
        ("ents_f", "ents_f"),
        ("tag_acc", "tag_acc"),
        ("pos_acc", "pos_acc"),
        ("cats_macro_f", "macro-F1"),
        ("cats_accuracy", "accuracy"),
    ]:
        if scores.get(key) is not None:
            parts.append(f"{name} {100 * scores[key]:.2f}")
    return ", ".join(parts) or "no scores"


def main(
    data: Path = typer.Argument(..., help="the .spacy corpus"),
    model: List[str] = typer.Option([], "--model", help="NAME=MODEL_DIR, required (repeatable)"),
    optional: List[str] = typer.Option([], "--optional", help="NAME=MODEL_DIR, skipped when missing"),
    split: str = typer.Option("dev", "--split", help="suffix of the metrics files: NAME_SPLIT.json"),
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
    gold_preproc: TrueFalse = typer.Option(TrueFalse("false"), "--gold-preproc"),
    gpu_id: int = typer.Option(-1, "--gpu-id"),
) -> None:
    """Evaluate trained pipelines on a .spacy corpus: spaCy's scores plus textcat accuracy."""
    if not model and not optional:
        raise typer.BadParameter("give at least one --model NAME=MODEL_DIR", param_hint="--model")
    if not data.is_file():
        sys.exit(f"✘ evaluate_task.py: no corpus {data}")
    for spec in model:
        name, _, model_dir = spec.partition("=")
        if model_dir and not Path(model_dir).exists():
            sys.exit(f"✘ evaluate_task.py: {name}: no model {model_dir} (train it first)")

    import spacy
    import srsly

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    metrics_dir.mkdir(parents=True, exist_ok=True)
    for name, model_dir, nlp in load_models(model + optional, "evaluate_task.py"):
        scores = evaluate(nlp, data, gold_preproc.value == "true")
        scores.update({"model": str(model_dir), "data": str(data)})
        out = metrics_dir / f"{name}_{split}.json"
        srsly.write_json(out, scores)
        print(f"✔ {name} on {data} ({scores['n_docs']} docs): {headline(scores)} -> {out}")


if __name__ == "__main__":
    typer.run(main)
