"""Part 1 of speed.py: words/s of the `entangle` component in each inference mode (fp32,
and the opt-in ones: int8, bf16, onnx, onnx-int8; modeling/inference.py's INFERENCE_MODES)
and of the spacy-transformers baseline, with their ratios, side by side in one process. A
trained pipeline in every mode against a trained baseline: speed_compare.py --modes."""

from typing import Any, Dict, List

from spacy.language import Language
from speed_data import BASELINE, MODES, Text, n_words
from speed_timing import best_seconds, print_table


def part_speed(pipes: Dict[str, Language], skipped: Dict[str, str], texts: List[Text], args) -> Dict[str, Any]:
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    words = n_words(texts)
    wps = {name: words / s for name, s in best.items()}
    rows, out = [], {}
    for name in [f"entangle {m}" for m in MODES] + [BASELINE]:
        mode = name.split()[-1]
        if name not in wps:
            rows.append([name, "n/a", "", "", skipped.get(mode, "")])
            out[name] = {"skipped": skipped.get(mode, "")}
            continue
        out[name] = {
            "seconds": round(best[name], 4),
            "words_per_second": round(wps[name], 1),
            "vs_baseline": round(wps[name] / wps[BASELINE], 4),
            "vs_entangle_fp32": round(wps[name] / wps["entangle fp32"], 4),
        }
        rows.append(
            [name, f"{wps[name]:,.0f}", f"{out[name]['vs_baseline']:.2f}x", f"{out[name]['vs_entangle_fp32']:.2f}x", ""]
        )
    print_table(
        f"1. speed: {len(texts)} docs, {words} words, batch size {args.batch_size}, best of {args.repeats}",
        ["pipeline", "words/s", "vs baseline", "vs fp32", "note"],
        rows,
    )
    slower = wps[BASELINE] / wps["entangle fp32"]
    print(f"   entangle fp32 is {slower:.2f}x slower than {BASELINE} (words/s ratio)")
    return {"docs": len(texts), "words": words, "pipelines": out, "baseline_over_entangle": round(slower, 4)}
