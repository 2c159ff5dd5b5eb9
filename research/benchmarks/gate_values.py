"""What a learned side gate reads (EntangleListener.v2, combine = "gate"): the mean weight
``g`` it gives the subword side (1 - g goes to the char side), per token, on clean dev
tweets and on an attacked copy of the same tweets (`python -m spacy_entangle perturb`: same
tokens), the copy's tokens split into attacked (text changed) and untouched ones. A gate that
learned to lean on the char side where the spelling is broken gives attacked tokens a lower g
than the same tokens clean; mean |g - 0.5| says how far it moved from its start (the average).

    OMP_NUM_THREADS=1 python research/benchmarks/gate_values.py PIPELINE CLEAN.spacy NOISY.spacy [--limit 0]
"""

import argparse
from typing import Dict, List, Optional, Tuple

import numpy
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from thinc.api import Model, to_numpy

GATE = "with_array(entangle-side-gate)"


def gated_tok2vec(nlp: Language) -> Model:
    """The listener chain of the first component whose listener ends in a side gate."""
    for _, proc in nlp.components:
        model = getattr(proc, "model", None)
        if not isinstance(model, Model):
            continue
        for node in model.walk():
            if node.layers and node.layers[-1].name == GATE:
                return node
    raise SystemExit("no component listens through a side gate (EntangleListener.v2, combine = 'gate')")


def gate_values(tok2vec: Model, docs: List[Doc]) -> numpy.ndarray:
    """(n_tokens, width): each token's g per dimension, for docs the `entangle` component has run on."""
    listener, pool, gate = tok2vec.layers
    X = numpy.concatenate([to_numpy(x) for x in pool.predict(listener.predict(docs))]) if docs else numpy.zeros((0, 2))
    g = gate.layers[0].layers[0]  # with_array(side gate) -> its Sigmoid
    return to_numpy(g.predict(g.ops.asarray2f(X))) if len(X) else numpy.zeros((0, g.get_dim("nO")))


def main(argv: Optional[List[str]] = None) -> Dict[str, Tuple[int, float, float]]:
    """Prints the table; returns {row: (tokens, mean g, mean |g - 0.5|)}."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("clean")
    parser.add_argument("noisy")
    parser.add_argument("--limit", type=int, default=0, help="the first N docs (0: all)")
    args = parser.parse_args(argv)
    # the listener reads doc._.entangle, so the gate's input can be rebuilt after the pipeline ran
    nlp = spacy.load(args.pipeline, config={"components": {"entangle": {"store_output": True}}})
    tok2vec = gated_tok2vec(nlp)
    clean, noisy = (list(DocBin().from_disk(path).get_docs(nlp.vocab)) for path in (args.clean, args.noisy))
    if args.limit:
        clean, noisy = clean[: args.limit], noisy[: args.limit]
    if len(clean) != len(noisy) or any(len(a) != len(b) for a, b in zip(clean, noisy)):
        raise SystemExit(f"{args.noisy} is not a token-for-token attacked copy of {args.clean}")

    def run(docs: List[Doc]) -> List[Doc]:
        fresh = [Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]) for d in docs]
        return list(nlp.pipe(fresh, disable=[n for n in nlp.component_names if n != "entangle"]))

    g_clean, g_noisy = gate_values(tok2vec, run(clean)), gate_values(tok2vec, run(noisy))
    attacked = numpy.array([a.text != b.text for c, n in zip(clean, noisy) for a, b in zip(c, n)], dtype=bool)
    rows = {
        "clean, every token": g_clean,
        "attacked copy, untouched tokens": g_noisy[~attacked],
        "attacked copy, attacked tokens": g_noisy[attacked],
        "the same tokens, clean": g_clean[attacked],
    }
    nan = float("nan")
    result = {
        k: (len(v), float(v.mean()) if len(v) else nan, float(abs(v - 0.5).mean()) if len(v) else nan)
        for k, v in rows.items()
    }
    print(f"side gate of {args.pipeline}: its subword weight g per token and dimension (1 - g: the char side)")
    print("| tokens | n | mean g | mean abs(g - 0.5) |\n|---|---:|---:|---:|")
    for key, (n, mean, spread) in result.items():
        print(f"| {key} | {n:,} | {mean:.3f} | {spread:.3f} |")
    return result


if __name__ == "__main__":
    main()
