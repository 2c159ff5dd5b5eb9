"""Inference speed of several trained pipelines, side by side in one process.

    python scripts/speed.py corpus/dev.spacy NAME=MODEL_DIR [NAME=MODEL_DIR ...] \
        [--output metrics/speed.json] [--gpu-id -1] [--batch-size 64] [--repeats 1]
    python scripts/speed.py corpus/dev.spacy --trained training [--seed 0] ...

--trained DIR times every variant of variants.yml trained there (DIR/NAME/seedN/model-best),
in the file's order.

Every pipeline gets the same pre-tokenized Docs (the corpus words, no annotations) through
nlp.pipe, after a short warm-up; with --repeats > 1 the runs are interleaved (A B A B ...)
and the fastest is kept, so load from other processes hits every model alike. Prints words/s
per model and each model's speed relative to the first one. A MODEL_DIR that does not exist
is skipped with a note (e.g. entangle-char when that variant was not trained).
"""
import argparse
import json
import sys
import time
from pathlib import Path

from _models import load_models


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", type=Path, help=".spacy file whose words are processed")
    p.add_argument("models", nargs="*", help="NAME=MODEL_DIR, the first is the reference")
    p.add_argument("--trained", type=Path, default=None, help="add every variant trained in this folder")
    p.add_argument("--seed", type=int, default=0, help="the seed timed with --trained")
    p.add_argument("--output", type=Path, default=None, help="JSON file for the results")
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="use the first N docs only (0 = all)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import spacy
    import torch
    from spacy.tokens import Doc, DocBin

    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    specs = list(args.models)
    if args.trained is not None:
        from variants import load_variants

        specs += [f"{name}={args.trained / name / f'seed{args.seed}' / 'model-best'}" for name in load_variants()
                  if (args.trained / name / f"seed{args.seed}" / "model-best").exists()]
    models = list(load_models(specs, "speed.py"))
    if not models:
        sys.exit("speed.py: none of the models exists")
    gold = list(DocBin().from_disk(args.corpus).get_docs(models[0][2].vocab))
    if args.limit:
        gold = gold[: args.limit]
    words = [[t.text for t in doc] for doc in gold]
    spaces = [[bool(t.whitespace_) for t in doc] for doc in gold]
    n_words = sum(len(w) for w in words)

    def fresh_docs(nlp):
        return [Doc(nlp.vocab, words=w, spaces=s) for w, s in zip(words, spaces)]

    best = {}
    for name, _, nlp in models:  # warm-up: lazy init, allocator, first-call overheads
        list(nlp.pipe(fresh_docs(nlp)[: 2 * args.batch_size], batch_size=args.batch_size))
    for repeat in range(args.repeats):
        for name, _, nlp in models:
            docs = fresh_docs(nlp)
            t0 = time.perf_counter()
            for _ in nlp.pipe(docs, batch_size=args.batch_size):
                pass
            seconds = time.perf_counter() - t0
            best[name] = min(best.get(name, seconds), seconds)
            print(f"  run {repeat + 1}/{args.repeats} {name}: {n_words / seconds:,.0f} words/s")
    ref_name = models[0][0]
    results = {}
    for name, path, _ in models:
        wps = n_words / best[name]
        results[name] = {
            "model": path,
            "seconds": round(best[name], 3),
            "words": n_words,
            "words_per_second": round(wps, 1),
            "relative_to_" + ref_name: round(best[ref_name] / best[name], 3),
        }
    print(f"\nInference speed on {args.corpus} ({len(words)} docs, {n_words} words, "
          f"batch size {args.batch_size}, {'GPU ' + str(args.gpu_id) if args.gpu_id >= 0 else 'CPU'}, "
          f"torch threads {torch.get_num_threads()}):")
    for name, r in results.items():
        print(f"  {name:<20} {r['words_per_second']:>10,.0f} words/s   "
              f"{r['relative_to_' + ref_name]:.2f}x {ref_name}")
    for name in results:
        if name != ref_name:  # words/s of the reference over words/s of the other
            ratio = best[name] / best[ref_name]
            print(f"  speed ratio {ref_name} : {name} = {ratio:.2f}")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "corpus": str(args.corpus),
            "docs": len(words),
            "words": n_words,
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "device": f"gpu:{args.gpu_id}" if args.gpu_id >= 0 else "cpu",
            "torch_threads": torch.get_num_threads(),
            "reference": ref_name,
            "models": results,
        }
        args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"✔ saved {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
