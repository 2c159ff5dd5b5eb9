"""Part 4 of speed.py: where an entangle prediction spends its time (the torch.profiler
labels entangle.prepare / subword_encoder / char_encoder / coattention) and the downstream
listener + components.

Alone, it profiles the shipped-shaped pipeline (configs/ner_cpu.cfg with a grown char
encoder, m = 1, NER on side "both"; made in WORKDIR as research/benchmarks/long_docs.py makes it) on
--limit dev tweets, or on one doc of --doc-chars characters (the tweets joined):

    OMP_NUM_THREADS=1 python research/benchmarks/speed_stages.py WORKDIR --data ../shared/data/wnut17/dev.conll --limit 500
    OMP_NUM_THREADS=1 python research/benchmarks/speed_stages.py WORKDIR --data ... --doc-chars 100000
"""

import argparse
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from speed_data import Text, long_texts, make_docs, n_words, read_sentences, texts_of
from speed_timing import environment, print_table, save, sync, use_device

STAGES = (
    ("tokenization + alignment", "entangle.prepare"),
    ("subword encoder", "entangle.subword_encoder"),
    ("char encoder", "entangle.char_encoder"),
    ("co-attention", "entangle.coattention"),
)


def part_stages(nlp: Language, texts: List[Text], args) -> Dict[str, Any]:
    """Per-stage time of one pass over ``texts``: the entangle labels' time under
    torch.profiler (CPU time; GPU time with --gpu-id), the downstream components' wall time."""
    ent = nlp.get_pipe("entangle")
    downstream = [(name, proc) for name, proc in nlp.pipeline if proc is not ent]
    docs = make_docs(nlp, texts)
    list(ent.pipe(make_docs(nlp, texts[: args.batch_size]), batch_size=args.batch_size))  # warm-up
    entangle_s, label_ms = profile_labels(lambda: list(ent.pipe(docs, batch_size=args.batch_size)), args.gpu_id >= 0)
    start = time.perf_counter()
    for _, proc in downstream:
        docs = list(proc.pipe(docs, batch_size=args.batch_size))
    downstream_s = time.perf_counter() - start
    labelled = sum(ms or 0.0 for ms in label_ms.values())
    other_ms, downstream_ms = 1000 * entangle_s - labelled, 1000 * downstream_s
    total = 1000 * entangle_s + downstream_ms
    stages = [(title, label, label_ms[label]) for title, label in STAGES] + [
        ("other (stitching, to thinc)", "", other_ms),
        ("listener + " + ", ".join(n for n, _ in downstream), "(wall time)", downstream_ms),
    ]
    per_k = 1000 / n_words(texts)
    rows = [
        [title, label, "n/a" if ms is None else f"{ms * per_k:,.1f}", "" if ms is None else f"{100 * ms / total:.0f}%"]
        for title, label, ms in stages
    ]
    device = "CPU or GPU" if args.gpu_id >= 0 else "CPU"
    print_table(
        f"4. stages of a prediction (entangle fp32, {len(texts)} docs; labels: {device} time under torch.profiler)",
        ["stage", "label", "ms / 1k words", "share"],
        rows,
    )
    return {
        "words": n_words(texts),
        "entangle_wall_ms": round(1000 * entangle_s, 2),
        **{label: None if ms is None else round(ms, 2) for label, ms in label_ms.items()},
        "entangle.other_ms": round(other_ms, 2),
        "downstream_ms": round(downstream_ms, 2),
        "total_ms": round(total, 2),
    }


def profile_labels(run, gpu: bool) -> Tuple[float, Dict[str, Optional[float]]]:
    """Wall seconds of ``run()`` under torch.profiler, and the ms of each stage label
    (None: the label never ran). On GPU a label's device time counts when it is the larger
    (kernels run asynchronously: the CPU only launches them)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        run()
        sync()
        seconds = time.perf_counter() - start
    label_ms: Dict[str, Optional[float]] = {label: None for _, label in STAGES}
    for event in prof.key_averages():  # on GPU a label has a CPU row and a device row
        if event.key in label_ms:
            device_us = getattr(event, "device_time_total", 0) if gpu else 0
            ms = max(event.cpu_time_total, device_us) / 1000
            label_ms[event.key] = max(label_ms[event.key] or 0.0, ms)
    return seconds, label_ms


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    import spacy
    from long_docs import make_pipelines

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workdir", type=Path, help="where the pipelines are made (kept for later runs)")
    p.add_argument("--data", type=Path, required=True, help="CoNLL file or .spacy corpus")
    p.add_argument("--limit", type=int, default=500, help="dev sentences profiled (0 = all)")
    p.add_argument("--doc-chars", type=int, default=0, help="one doc of this many chars instead (0 = the tweets)")
    p.add_argument("--char", type=Path, default=None, help="char backbone dir (default: a grown one, made here)")
    p.add_argument("--subword", type=Path, default=None, help="subword backbone dir (default: MiniLM-L6)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    device = use_device(args.gpu_id, args.threads)
    sents = read_sentences(args.data, 0 if args.doc_chars else args.limit)
    texts = long_texts(sents, args.doc_chars, args.doc_chars) if args.doc_chars else texts_of(sents)
    args.pipelines = "entangle"
    nlp = spacy.load(make_pipelines(args)["entangle"])
    print(f"{len(texts)} docs, {n_words(texts):,} words; {device}, {environment(device)['torch_threads']} thread(s)")
    return save({"stages": part_stages(nlp, texts, args), **environment(device)}, args.output)


if __name__ == "__main__":
    main()
