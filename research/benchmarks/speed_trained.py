"""Part 2 of speed.py (--model DIR --dev FILE.spacy): a trained pipeline's dev score and
words/s in each inference mode, so each opt-in speed-up shows its F1 cost."""

from typing import Any, Dict, List

from speed_data import MODES, Text, dev_examples, load_modes, main_score, n_words
from speed_timing import best_seconds, print_table


def part_trained(args, texts: List[Text]) -> Dict[str, Any]:
    pipes, skipped = load_modes(args.model, args.batch_size)
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    out: Dict[str, Dict[str, Any]] = {mode: {"skipped": reason} for mode, reason in skipped.items()}
    for mode, nlp in pipes.items():
        scores = nlp.evaluate(dev_examples(nlp, args.dev), batch_size=args.batch_size)
        key = main_score(scores)
        out[mode] = {"words_per_second": round(n_words(texts) / best[mode], 1), "score": key, key: scores[key]}
    ref = out["fp32"]
    rows = []
    for mode in MODES:
        r = out[mode]
        if "skipped" in r:
            rows.append([mode, "n/a", "", "", "", r["skipped"]])
            continue
        r["speed_up"] = round(r["words_per_second"] / ref["words_per_second"], 4)
        r["score_change"] = round(r[r["score"]] - ref[ref["score"]], 6)
        rows.append(
            [
                mode,
                f"{r['words_per_second']:,.0f}",
                f"{r['speed_up']:.2f}x",
                f"{100 * r[r['score']]:.2f}",
                f"{100 * r['score_change']:+.2f}",
                "",
            ]
        )
    print_table(
        f"2. trained pipeline {args.model} ({len(texts)} docs timed, dev score on all of {args.dev})",
        ["inference", "words/s", "speed-up", f"dev {ref['score']}", "change", "note"],
        rows,
    )
    return {"model": str(args.model), "dev": str(args.dev), "modes": out}
