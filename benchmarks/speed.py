"""CPU/GPU inference (and, with --train-batches, training) speed: entangle vs a
spacy-transformers pipeline on the SAME subword backbone, measured side by side in one
process (interleaved rounds), printed as words/s and ratios.

    python benchmarks/speed.py --char DIR --subword DIR --data ../shared/data/wnut17/dev.conll
    python benchmarks/speed.py ... --train-batches 8   # also nlp.update words/s (NER, 16 sents a batch)

Heads are untrained (speed does not depend on the weights). Each pipeline is
entangle (or transformer) + ner.
"""
import argparse
import time
from pathlib import Path
from typing import Dict, List, Tuple

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

NER = {
    "@architectures": "spacy.TransitionBasedParser.v2",
    "state_type": "ner",
    "extra_state_tokens": False,
    "hidden_width": 64,
    "maxout_pieces": 2,
    "use_upper": False,
}


def read_conll(path: Path, limit: int) -> List[Tuple[List[str], List[str]]]:
    """(words, BIO tags) per sentence."""
    sents, rows = [], []
    for line in path.read_text(encoding="utf8").splitlines() + [""]:
        if not line.strip():
            if rows:
                sents.append(([w for w, _ in rows], [t for _, t in rows]))
                rows = []
            continue
        word, _, tag = line.partition("\t")
        rows.append((word, tag.strip() or "O"))
    return sents[:limit]


def entangle_pipeline(char: str, subword: str, m: int, width: int, heads: int, ffn: int, side: str) -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": {
        "@architectures": "spacy-entangle.EntangleModel.v1", "char_backbone": char, "subword_backbone": subword,
        "n_coattention": m, "hidden_width": width, "n_heads": heads, "ffn_width": ffn}})
    ner = dict(NER, tok2vec={"@architectures": "spacy-entangle.EntangleListener.v1", "upstream": "entangle", "side": side})
    nlp.add_pipe("ner", config={"model": ner})
    return nlp


def transformer_pipeline(subword: str) -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config={"model": {
        "@architectures": "spacy-transformers.TransformerModel.v3", "name": subword,
        "tokenizer_config": {"use_fast": True},
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 128, "stride": 96}}})
    ner = dict(NER, tok2vec={"@architectures": "spacy-transformers.TransformerListener.v1", "grad_factor": 1.0,
                             "pooling": {"@layers": "reduce_mean.v1"}})
    nlp.add_pipe("ner", config={"model": ner})
    return nlp


def examples(nlp: Language, sents) -> List[Example]:
    out = []
    for words, tags in sents:
        doc = Doc(nlp.vocab, words=words, ents=tags)
        out.append(Example(Doc(nlp.vocab, words=words), doc))
    return out


def train_words_per_second(nlp: Language, batches: List[List[Example]], sgd) -> float:
    n_words = sum(len(eg) for batch in batches for eg in batch)
    start = time.perf_counter()
    for batch in batches:
        nlp.update(batch, sgd=sgd)
    return n_words / (time.perf_counter() - start)


def words_per_second(nlp: Language, sents, batch_size: int) -> float:
    docs = [Doc(nlp.vocab, words=w) for w, _ in sents]
    n_words = sum(len(w) for w, _ in sents)
    start = time.perf_counter()
    for _ in nlp.pipe(docs, batch_size=batch_size):
        pass
    return n_words / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--char", required=True)
    p.add_argument("--subword", required=True)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--n", type=int, default=256, help="sentences")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--config", action="append", default=None,
                   help="entangle settings m,width,heads,ffn,side (repeatable); default 1,384,6,768,subword")
    p.add_argument("--train-batches", type=int, default=0, help="also time this many nlp.update batches of 16 sentences")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    sents = read_conll(args.data, args.n)
    pipes: Dict[str, Language] = {"spacy-transformers": transformer_pipeline(args.subword)}
    for spec in args.config or ["1,384,6,768,subword"]:
        m, width, heads, ffn, side = spec.split(",")
        pipes[f"entangle m={m} w={width} ffn={ffn} {side}"] = entangle_pipeline(
            args.char, args.subword, int(m), int(width), int(heads), int(ffn), side)
    optimizers = {}
    for name, nlp in pipes.items():
        egs = examples(nlp, sents)
        optimizers[name] = nlp.initialize(lambda: egs)
        words_per_second(nlp, sents[:16], args.batch_size)  # warm-up
    results: Dict[str, List[float]] = {name: [] for name in pipes}
    train: Dict[str, List[float]] = {name: [] for name in pipes}
    for _ in range(args.rounds):
        for name, nlp in pipes.items():
            results[name].append(words_per_second(nlp, sents, args.batch_size))
            if args.train_batches:
                egs = examples(nlp, sents[: 16 * args.train_batches])
                batches = [egs[i : i + 16] for i in range(0, len(egs), 16)]
                train[name].append(train_words_per_second(nlp, batches, optimizers[name]))
    print(f"{len(sents)} sentences, {sum(len(w) for w, _ in sents)} words, torch threads {torch.get_num_threads()}, "
          f"best of {args.rounds} interleaved rounds")
    report("inference (nlp.pipe)", results)
    if args.train_batches:
        report(f"training (nlp.update, {args.train_batches} batches of 16 sentences)", train)


def report(title: str, results: Dict[str, List[float]]) -> None:
    base = max(results["spacy-transformers"])
    print(f"\n{title}")
    print(f"{'pipeline':45s} {'words/s':>10s} {'ratio vs spacy-transformers':>28s}")
    for name, values in results.items():
        best = max(values)
        print(f"{name:45s} {best:10.0f} {best / base:28.2f}")


if __name__ == "__main__":
    main()
