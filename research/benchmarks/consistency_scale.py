"""How large the stability-training term is against the listeners, to choose its weight.

For a few training batches of a pipeline (trained or fresh), prints the squared norm of the
gradient the listeners hand the `entangle` component (what `spacy train` logs as LOSS
ENTANGLE) and that of the consistency term at weight 1 (noise/consistency.py): the weight
that makes the two equal is the square root of their ratio. No weight is updated.

    OMP_NUM_THREADS=1 python research/benchmarks/consistency_scale.py PIPELINE CORPUS.spacy \\
        [--batches 4] [--batch-size 32] [--level 0.5] [--rate 0.5] [--seed 0]
"""

import argparse
import math
import random
from typing import List, Optional

import spacy
import torch
from spacy.tokens import DocBin
from spacy.training import Example

from spacy_entangle.layers.contract import get_sides
from spacy_entangle.noise import create_noise_consistency
from spacy_entangle.pipeline import Entangle


def main(argv: Optional[List[str]] = None) -> List[float]:
    """Prints one line per batch and the weight of equal norms; returns each batch's ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("corpus")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--level", type=float, default=0.5)
    parser.add_argument("--rate", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    nlp = spacy.load(args.pipeline)
    entangle = next((proc for _, proc in nlp.components if isinstance(proc, Entangle)), None)
    if entangle is None:
        raise SystemExit(f"{args.pipeline} has no `entangle` component")
    docs = list(DocBin().from_disk(args.corpus).get_docs(nlp.vocab))
    random.Random(args.seed).shuffle(docs)
    rule = create_noise_consistency(weight=1.0, level=args.level, rate=args.rate, seed=args.seed)
    ratios: List[float] = []
    for b in range(args.batches):
        batch = docs[b * args.batch_size : (b + 1) * args.batch_size]
        if not batch:
            break
        examples = [Example(nlp.make_doc(doc.text), doc) for doc in batch]
        losses: dict = {}
        # the listeners' gradient, as in training; sgd=False: no weight moves
        nlp.update(examples, sgd=False, losses=losses, drop=0.0)
        listeners = losses.get(entangle.name, 0.0)
        clean = [eg.predicted for eg in examples]
        picked, copies = rule.perturb(clean)
        outputs = entangle.model.predict(clean + copies)
        loss, grads = rule.loss([outputs[i] for i in picked], outputs[len(clean) :], get_sides(entangle.model))
        term = sum(
            float((g.side(s) ** 2).sum()) for g in grads for s in ("subword", "char") if getattr(g, s) is not None
        )
        ratio = listeners / term if term else math.inf
        ratios.append(ratio)
        print(
            f"batch {b}: {len(batch)} docs, {len(copies)} attacked copies; listeners' gradient^2 {listeners:.4g}, "
            f"consistency at weight 1: loss {loss:.4g}, gradient^2 {term:.4g}; equal norms at weight {math.sqrt(ratio):.2f}"
        )
    finite = [r for r in ratios if math.isfinite(r)]
    if finite:
        print(f"weight of equal gradient norms, median over batches: {math.sqrt(sorted(finite)[len(finite) // 2]):.2f}")
    return ratios


if __name__ == "__main__":
    main()
