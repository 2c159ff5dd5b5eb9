"""Character accuracy of a trained char_tagger pipeline on a .spacy corpus.

    python scripts/evaluate_chars.py MODEL DATA.spacy OUT.json [--gpu-id N]

`spacy evaluate` prints only spaCy's built-in scores (its --per-component JSON holds
ours); this prints and writes the char_tagger's: char_acc ("All": every non-space
character with a gold label), char_acc_mix ("MIX": the characters of words whose gold
characters hold more than one label), char_acc_per_label, and how many characters and
mixed words each is computed on.
"""

import json
from pathlib import Path

import spacy
import typer
from spacy.training import Corpus


def count(examples):
    n_chars = n_mix_chars = n_mix_words = 0
    for eg in examples:
        ref = eg.reference
        gold = ref._.char_tags
        if gold is None:
            continue
        ok = [g is not None and not c.isspace() for g, c in zip(gold, ref.text)]
        n_chars += sum(ok)
        for token in ref:
            span = range(token.idx, token.idx + len(token))
            if len({gold[i] for i in span if ok[i]}) > 1:
                n_mix_words += 1
                n_mix_chars += sum(ok[i] for i in span)
    return {"n_chars": n_chars, "n_mix_chars": n_mix_chars, "n_mix_words": n_mix_words}


def main(
    model: str = typer.Argument(..., help="the trained pipeline"),
    data: Path = typer.Argument(..., help="the .spacy corpus"),
    output: Path = typer.Argument(..., help="the JSON scores"),
    gpu_id: int = typer.Option(-1, "--gpu-id"),
) -> None:
    """Character accuracy of a trained char_tagger pipeline on a .spacy corpus."""
    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    nlp = spacy.load(model)
    examples = list(Corpus(data)(nlp))
    scores = nlp.evaluate(examples)
    result = {key: scores.get(key) for key in ("char_acc", "char_acc_mix", "char_acc_per_label", "speed")}
    result.update(count(examples))
    result.update({"model": str(model), "data": str(data)})
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    def pct(x):
        return "-" if x is None else f"{100 * x:.2f}"

    print(f"{model} on {data}:")
    print(f"  All  {pct(result['char_acc'])}  ({result['n_chars']} characters)")
    print(
        f"  MIX  {pct(result['char_acc_mix'])}  ({result['n_mix_chars']} characters in {result['n_mix_words']} mixed words)"
    )
    for label, acc in (result["char_acc_per_label"] or {}).items():
        print(f"  {label:<10} {pct(acc)}")
    print(f"✔ saved {output}")


if __name__ == "__main__":
    typer.run(main)
