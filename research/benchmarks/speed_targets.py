"""The speed and memory targets in one command, each printed as a ratio with met / missed,
the pipeline's DEFAULT first (as it ships: its own `inference` setting, "auto" in the packaged
en_entangle_wnut, or --default), and the CPU's int8 features (VNNI, AMX) beside every figure:
int8 pays very differently with and without them.

- short docs (--limit dev tweets, interleaved rounds in ONE process, best of --repeats): the
  default's words/s >= 1.1x the baseline's on a host with VNNI or AMX (>= 0.9x without) at
  <= 0.3 F1 cost against its own fp32 on each scored corpus (--data when it is a .spacy corpus,
  and --noisy), and its load + first doc (a fresh process each, best of --load-repeats) <= 2x
  the baseline's; entangle's fastest opt-in `inference` mode >= 1.0x the baseline's fp32 words/s
  at <= 0.5 F1 cost; fp32 >= 0.8x the baseline's words/s;
- one doc of --doc-chars characters (the tweets joined; same process, interleaved): the default
  >= 0.8x the baseline's words/s on a host with VNNI or AMX; fp32, and the fastest opt-in mode
  of the short docs, >= 0.65x;
- one doc of --memory-chars characters adds <= 0.5x the baseline's peak memory, and one of
  --max-chars characters adds under 2 GiB to the loaded pipeline (each in a child process
  of its own, as research/benchmarks/long_docs.py measures: a peak RSS is a process's).

    OMP_NUM_THREADS=1 python research/benchmarks/speed_targets.py --data project/corpus/dev.spacy \\
        --noisy project/noisy/dev_noise0.5.spacy --limit 500 --threads 1 \\
        --baseline project/training/baseline-aug/seed0/model-best \\
        --entangle project/training/entangle-aug/seed0/model-scored

(model-scored: the pipeline the project's `package` step packages, with its default and its
saved ONNX graphs; a pipeline saved by training predicts in fp32 by default: --default auto
times it as it would ship, its graphs exported on the first doc.) Without --baseline /
--entangle, the pipelines are made in --workdir as long_docs.py makes them (the shipped shape
and the spacy-transformers baseline on the same MiniLM; heads untrained: speed and memory
hold, F1 costs mean nothing).
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from int8_accuracy import corpus_scores
from long_docs import make_pipelines, measure
from speed_compare import DEFAULT, check_common, entangle_names, mode_overrides, part_pipelines
from speed_data import BASELINE, long_texts, n_words, read_sentences, texts_of
from speed_load import load_seconds
from speed_timing import best_seconds, cpu_int8_features, cpu_int8_label, environment, print_table, save, use_device

from spacy_entangle.modeling.inference import INFERENCE_MODES, INFERENCE_SETTINGS

# each target's threshold
SPEED_OPT_IN, SPEED_FP32, SPEED_LONG, F1_COST, MEMORY_RATIO, MEMORY_MAX_MB = 1.0, 0.8, 0.65, 0.5, 0.5, 2048.0
# the default's: words/s on tweets with VNNI or AMX / without, on the long doc (with them),
# F1 cost against its fp32, and load + first doc against the baseline's
DEFAULT_SPEED, DEFAULT_SPEED_NO_INT8, DEFAULT_LONG, DEFAULT_F1_COST, DEFAULT_LOAD = 1.1, 0.9, 0.8, 0.3, 2.0
ENTANGLE, FP32 = "entangle", "entangle@fp32"  # the default (the first mode), and the F1 reference


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--data", type=Path, required=True, help="dev data: CoNLL file or .spacy corpus (scored when .spacy)"
    )
    p.add_argument("--noisy", type=Path, action="append", default=[], help="a noisy .spacy dev corpus to score")
    p.add_argument("--baseline", type=Path, default=None, help="the spacy-transformers pipeline")
    p.add_argument("--entangle", type=Path, default=None, help="the entangle pipeline")
    p.add_argument("--workdir", type=Path, default=Path("speed_targets_work"), help="where untrained ones are made")
    p.add_argument("--char", type=Path, default=None, help="untrained pipeline: char backbone (default: grown)")
    p.add_argument("--subword", type=Path, default=None, help="untrained pipeline: subword backbone (MiniLM-L6)")
    opt_ins = [m for m in INFERENCE_MODES if m != "fp32"]
    p.add_argument("--modes", nargs="+", choices=opt_ins, default=["int8", "onnx", "onnx-int8"], help="opt-ins timed")
    p.add_argument(
        "--default",
        choices=INFERENCE_SETTINGS,
        default=None,
        help="the setting the entangle pipeline is timed in first, as its default (default: its saved one)",
    )
    p.add_argument("--load-repeats", type=int, default=2, help="fresh processes timing load + first doc (0: skip)")
    p.add_argument("--limit", type=int, default=500, help="dev sentences timed (0 = all)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds on the short docs, the best is kept")
    p.add_argument("--doc-repeats", type=int, default=2, help="interleaved rounds on the long doc")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="torch threads (children: OMP_NUM_THREADS)")
    p.add_argument("--doc-chars", type=int, default=100_000, help="the long doc timed (0: skip)")
    p.add_argument("--memory-chars", type=int, default=300_000, help="the doc whose added peak is compared (0: skip)")
    p.add_argument("--max-chars", type=int, default=1_000_000, help="the doc that must fit in 2 GiB (0: skip)")
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    args.gpu_id = -1
    check_common(p, args)
    for path in [*args.noisy, args.baseline, args.entangle]:
        if path is not None and not path.exists():
            p.error(f"{path} does not exist")
    return args


def pipelines(args: argparse.Namespace) -> Dict[str, Path]:
    """The baseline and entangle pipelines: as given, or made untrained in --workdir."""
    made: Dict[str, Path] = {}
    if args.baseline is None or args.entangle is None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        args.pipelines = ",".join(n for n, p in (("entangle", args.entangle), (BASELINE, args.baseline)) if p is None)
        made = make_pipelines(args)
        print(f"ℹ untrained pipelines in {args.workdir}: {args.pipelines} (their F1 costs mean nothing)")
    return {"baseline": args.baseline or made[BASELINE], "entangle": args.entangle or made["entangle"]}


Row = Tuple[str, str, str, Optional[bool]]  # target, measured, needed, met


def default_mode(args: argparse.Namespace) -> str:
    """How the default predicts here: "SETTING -> MODE" (an `auto` resolves per device)."""
    nlp = args.pipes[ENTANGLE]
    shims = [nlp.get_pipe(name).model.shims[0] for name in entangle_names(nlp)]
    if not shims:
        return "no entangle component"
    setting, mode = shims[0].inference, shims[0].predict_mode
    return mode if setting == mode else f"{setting} -> {mode}"


def load_times(paths: Dict[str, Path], args: argparse.Namespace) -> Dict[str, Optional[float]]:
    """Load + first doc of the baseline and of the default (fresh processes, best of
    --load-repeats)."""
    nlp = args.pipes[ENTANGLE]
    overrides = mode_overrides(entangle_names(nlp), DEFAULT, args.default)
    return {
        "baseline": load_seconds(str(paths["baseline"]), {}, args.load_repeats, args.threads),
        ENTANGLE: load_seconds(str(paths["entangle"]), overrides, args.load_repeats, args.threads),
    }


def short_docs(paths: Dict[str, Path], args: argparse.Namespace) -> Tuple[List[Row], Dict[str, Any]]:
    """Words/s of the default and every mode against the baseline's fp32, each one's F1 cost
    against fp32, and the default's load + first doc against the baseline's."""
    texts = texts_of(read_sentences(args.data, args.limit))
    args.modes = [DEFAULT, "fp32", *args.modes]
    args.float_nodes, args.what_if_smoothing = [], None  # the modes as they ship (speed_compare.py: what-ifs)
    timed = part_pipelines(list(paths.items()), texts, args)
    speed = {name: m["relative_to_reference"] for name, m in timed["models"].items()}
    shipped = default_mode(args)
    loads = load_times(paths, args) if args.load_repeats else {}
    print_table(
        f"the default first ({shipped}): words/s on {len(texts)} tweets and load + first doc (fresh process, "
        f"best of {args.load_repeats})",
        ["pipeline", "words/s", "vs baseline", "load + first doc", "CPU int8"],
        [
            [
                name,
                f"{m['words_per_second']:,.0f}",
                f"{speed[name]:.2f}x",
                f"{loads[name]:.2f} s" if loads.get(name) is not None else "",
                cpu_int8_label(),
            ]
            for name, m in timed["models"].items()
        ],
    )
    corpora = ([args.data] if args.data.suffix == ".spacy" else []) + list(args.noisy)
    f1 = {name: corpus_scores(nlp, corpora) for name, nlp in args.pipes.items() if name != "baseline"}
    cost = {name: {c: 100 * (f1[FP32][c] - got[c]) for c in got} for name, got in f1.items()}
    if corpora:
        print_table(
            "F1 of the default and each entangle mode (cost: fp32's F1 - the mode's, in points)",
            ["pipeline", *(f"{c} F1 / cost" for c in f1[FP32])],
            [[n, *(f"{100 * f1[n][c]:.2f} / {cost[n][c]:+.2f}" for c in f1[n])] for n in f1],
        )
    opt_ins = [n for n in speed if n.startswith("entangle@") and n != FP32]
    fastest = max(opt_ins, key=speed.__getitem__) if opt_ins else None
    int8 = bool(cpu_int8_features())
    needed = DEFAULT_SPEED if int8 else DEFAULT_SPEED_NO_INT8
    rows: List[Row] = [
        (
            f"{len(texts)} tweets: the default ({shipped}) words/s vs baseline fp32",
            f"{speed[ENTANGLE]:.2f}x",
            f">= {needed:.2f}x ({'with' if int8 else 'without'} VNNI / AMX)",
            speed[ENTANGLE] >= needed,
        )
    ]
    for corpus, points in cost[ENTANGLE].items():
        rows.append(
            (
                f"  its F1 cost vs entangle fp32 on {corpus}",
                f"{points:+.2f}",
                f"<= {DEFAULT_F1_COST}",
                points <= DEFAULT_F1_COST,
            )
        )
    if loads:
        ratio = float(loads[ENTANGLE] or 0.0) / max(float(loads["baseline"] or 0.0), 1e-9)
        rows.append(
            (
                "  its load + first doc vs baseline's",
                f"{ratio:.2f}x ({loads[ENTANGLE]:.1f} s vs {loads['baseline']:.1f} s)",
                f"<= {DEFAULT_LOAD:.1f}x",
                ratio <= DEFAULT_LOAD,
            )
        )
    if fastest:
        rows.append(
            (
                f"{len(texts)} tweets: fastest opt-in ({fastest.split('@')[1]}) words/s vs baseline fp32",
                f"{speed[fastest]:.2f}x",
                f">= {SPEED_OPT_IN:.2f}x",
                speed[fastest] >= SPEED_OPT_IN,
            )
        )
        for corpus, points in cost[fastest].items():
            rows.append(
                (f"  its F1 cost vs entangle fp32 on {corpus}", f"{points:+.2f}", f"<= {F1_COST}", points <= F1_COST)
            )
    rows.append(
        (
            f"{len(texts)} tweets: entangle fp32 words/s vs baseline",
            f"{speed[FP32]:.2f}x",
            f">= {SPEED_FP32:.2f}x",
            speed[FP32] >= SPEED_FP32,
        )
    )
    return rows, {
        "speed": timed,
        "default": shipped,
        "load_to_first_doc_seconds": loads,
        "f1": f1,
        "f1_cost_points": cost,
        "fastest_opt_in": fastest,
    }


def long_doc(args: argparse.Namespace, fastest: Optional[str]) -> Tuple[List[Row], Dict[str, Any]]:
    """One doc of --doc-chars characters: the baseline, the default, entangle fp32 and the
    fastest opt-in mode of the short docs, interleaved; a row for each entangle one."""
    texts = long_texts(read_sentences(args.data), args.doc_chars, args.doc_chars)
    names = list(dict.fromkeys(["baseline", ENTANGLE, FP32] + ([fastest] if fastest else [])))
    pipes = {name: args.pipes[name] for name in names}
    best = best_seconds(pipes, texts, args.doc_repeats, args.batch_size, warm_up=False)
    words = n_words(texts)
    int8 = bool(cpu_int8_features())
    rows: List[Row] = []
    for name in names[1:]:
        ratio = best["baseline"] / best[name]
        if name == ENTANGLE:
            what, needed = f"the default ({default_mode(args)})", DEFAULT_LONG if int8 else None
        else:
            what, needed = f"entangle {name.split('@')[1]}", SPEED_LONG
        rows.append(
            (
                f"{args.doc_chars:,}-char doc: {what} words/s vs baseline",
                f"{ratio:.2f}x",
                f">= {needed:.2f}x" if needed else "(no target without VNNI / AMX)",
                ratio >= needed if needed else None,
            )
        )
    return rows, {"words": words, **{f"{n}_words_per_second": round(words / s, 1) for n, s in best.items()}}


def memory(paths: Dict[str, Path], args: argparse.Namespace) -> Tuple[List[Row], Dict[str, Any]]:
    """Peak RSS a doc adds to the loaded pipeline, each run in a child process."""
    rows: List[Row] = []
    out: Dict[str, Any] = {}
    if args.memory_chars:
        runs = {name: measure(name, path, args.data, args.memory_chars) for name, path in paths.items()}
        ratio = runs["entangle"]["doc_mb"] / max(runs["baseline"]["doc_mb"], 1.0)
        rows.append(
            (
                f"{args.memory_chars:,}-char doc: peak RSS added, entangle vs baseline",
                f"{ratio:.2f}x",
                f"<= {MEMORY_RATIO:.2f}x",
                ratio <= MEMORY_RATIO,
            )
        )
        out[str(args.memory_chars)] = runs
    if args.max_chars:
        run = measure("entangle", paths["entangle"], args.data, args.max_chars)
        gib = run["doc_mb"] / 1024
        rows.append(
            (
                f"{args.max_chars:,}-char doc: peak RSS added to the loaded entangle",
                f"{gib:.2f} GiB",
                f"< {MEMORY_MAX_MB / 1024:.0f} GiB",
                run["doc_mb"] < MEMORY_MAX_MB,
            )
        )
        out[str(args.max_chars)] = {"entangle": run}
    return rows, out


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the memory runs' child processes
    device = use_device(-1, args.threads)
    paths = pipelines(args)
    rows, results = short_docs(paths, args)
    if args.doc_chars:
        more, results["long_doc"] = long_doc(args, results["fastest_opt_in"])
        rows += more
    args.pipes = None  # the loaded pipelines' memory is not the children's
    more, results["memory"] = memory(paths, args)
    rows += more
    print_table(
        f"the targets ({environment(device)['torch_threads']} torch thread(s); baseline {paths['baseline']}, "
        f"entangle {paths['entangle']})",
        ["target", "measured", "needed", "", "CPU int8"],
        [[t, m, n, "" if ok is None else ("met" if ok else "MISSED"), cpu_int8_label()] for t, m, n, ok in rows],
    )
    features = cpu_int8_features()
    results["targets"] = [
        {"target": t, "measured": m, "needed": n, "met": ok, "cpu_int8": features} for t, m, n, ok in rows
    ]
    results["settings"] = {
        "data": str(args.data),
        "noisy": [str(p) for p in args.noisy],
        "limit": args.limit,
        **{k: str(v) for k, v in paths.items()},
        **environment(device),
    }
    return save(results, args.output)


if __name__ == "__main__":
    main()
