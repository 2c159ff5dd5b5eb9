"""Part 3 of speed.py: words/s at tweet length (the dev docs) and at longer docs (dev
sentences joined). Flat words/s = cost linear in length (windows)."""

from typing import Any, Dict, List

from spacy.language import Language
from speed_data import Sentence, long_texts, n_chars, n_words, texts_of
from speed_timing import best_seconds, print_table


def part_lengths(pipes: Dict[str, Language], sents: List[Sentence], tweets: Dict[str, Any], args) -> Dict[str, Any]:
    texts = texts_of(sents)
    table = {
        "tweet": {
            "chars_per_doc": round(n_chars(texts) / len(texts), 1),
            **{name: tweets["pipelines"][name]["words_per_second"] for name in pipes},
        }
    }
    for length in args.lengths:
        docs = long_texts(sents, length, args.length_chars)
        best = best_seconds(pipes, docs, args.length_repeats, args.batch_size, warm_up=False)
        table[str(length)] = {
            "docs": len(docs),
            "chars_per_doc": round(n_chars(docs) / len(docs), 1),
            **{name: round(n_words(docs) / s, 1) for name, s in best.items()},
        }
    names = list(pipes)
    rows = []
    for length, r in table.items():
        rows.append(
            [length, f"{r['chars_per_doc']:,.0f}"]
            + [f"{r[n]:,.0f}" for n in names]
            + [f"{r[n] / table['tweet'][n]:.2f}" for n in names]
        )
    print_table(
        f"3. doc length: words/s per chars per doc (best of {args.length_repeats}; flat = linear cost)",
        ["length", "chars/doc"] + [f"{n} w/s" for n in names] + [f"{n} vs tweet" for n in names],
        rows,
    )
    return table
