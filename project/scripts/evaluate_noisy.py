"""Evaluate trained pipelines on the perturbed dev sets (character noise, CharBERT attacks).

    python scripts/evaluate_noisy.py corpus/dev_noise*.spacy --model PREFIX=MODEL_DIR ... \
        [--metrics-dir metrics] [--gpu-id -1]

For a corpus ``.../dev_noise0.5.spacy`` and a model ``entangle=training/entangle/model-best``
this writes ``metrics/entangle_dev_noise0.5.json`` (spaCy's evaluate output), which
scripts/compare.py turns into clean-vs-noisy columns. Each model is loaded once. A model
directory that does not exist is skipped with a note (e.g. entangle-char when the `char`
workflow did not run).
"""
import argparse
import re
import sys
from pathlib import Path

from _models import load_models

NOISE = re.compile(r"_noise([0-9.]+)\.spacy$")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpora", nargs="+", type=Path, help="perturbed .spacy files named *_noiseRATE.spacy")
    p.add_argument("--model", action="append", required=True, help="PREFIX=MODEL_DIR (repeatable)")
    p.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    p.add_argument("--gpu-id", type=int, default=-1)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)

    import spacy
    import srsly
    from spacy.tokens import DocBin
    from spacy.training import Example

    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    rates = {}
    for path in args.corpora:
        match = NOISE.search(path.name)
        if not match or not path.exists():
            sys.exit(f"evaluate_noisy.py: {path}: expected an existing file named *_noiseRATE.spacy")
        rates[path] = match.group(1)
    args.metrics_dir.mkdir(parents=True, exist_ok=True)
    for prefix, _, nlp in load_models(args.model, "evaluate_noisy.py"):
        for path, rate in rates.items():
            docs = DocBin().from_disk(path).get_docs(nlp.vocab)
            examples = [Example(nlp.make_doc(doc.text), doc) for doc in docs]
            scores = nlp.evaluate(examples)
            out = args.metrics_dir / f"{prefix}_dev_noise{rate}.json"
            srsly.write_json(out, scores)
            print(f"✔ {prefix} @ noise {rate}: ents_f {100 * (scores.get('ents_f') or 0):.1f} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
