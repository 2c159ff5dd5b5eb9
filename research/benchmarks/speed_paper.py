"""Part 6 of speed.py (--paper-shapes): random roberta-base- and canine-s-sized encoders,
m = 2 (configs/ner_paper.cfg): seconds and peak memory of one training step and one
prediction batch, per 1k words. speed.py runs this script in a child process, so its peak
memory is its own; its last line of output is the figures as JSON.

    python research/benchmarks/speed_paper.py --data ../shared/data/wnut17/dev.conll --layers 2
"""

import argparse
import ctypes
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import torch
from spacy.language import Language
from speed_data import REPO, Sentence, make_docs, n_words, ner_examples, pipeline_from_config, read_sentences, texts_of
from speed_timing import print_table, sync, use_device


def part_paper(args) -> Dict[str, Any]:
    """This script in a child process (its peak memory is its own), its figures printed."""
    command = [
        sys.executable,
        __file__,
        "--data",
        str(args.data),
        "--threads",
        str(args.threads),
        "--config",
        str(args.paper_config),
        "--sentences",
        str(args.paper_batch),
        "--layers",
        str(args.paper_layers),
        "--width",
        str(args.paper_width),
        "--heads",
        str(args.paper_heads),
        "--gpu-id",
        str(args.gpu_id),
    ]
    proc = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        print(f"\n6. paper shapes: the child process failed (exit {proc.returncode}, see its error above)")
        return {"error": f"exit {proc.returncode}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    per_k = 1000 / out["words"]
    rows = []
    for step in ("predict", "train"):
        r = out[step]
        slope = "n/a" if r["mib_per_1k_words"] is None else f"{r['mib_per_1k_words']:,.0f}"
        rows.append(
            [
                step,
                f"{r['seconds']:.2f}",
                f"{r['seconds'] * per_k:.2f}",
                f"{r['peak_mib']:,.0f}",
                f"{r['extra_mib']:,.0f}",
                slope,
            ]
        )
    print_table(
        f"6. paper shapes ({out['shapes']}, m = 2; random weights): one batch of {out['docs']} sentences, "
        f"{out['words']} words, {out['device']}",
        ["step", "seconds", "s / 1k words", "peak MiB", "extra MiB", "MiB / 1k more words"],
        rows,
    )
    print(
        f"   memory: {out['memory']}; MiB / 1k more words: the extra's slope between "
        f"{out['train']['small_batch']['words']} and {out['words']} words"
    )
    print(
        f"   subword side: a byte-level BPE of {out['subword_vocab']:,} entries trained offline (roberta-base: "
        f"50,265), {out['pieces_per_word']:.2f} pieces per word; more pieces than roberta-base's make "
        f"the subword side's figures an upper bound"
    )
    return out


def paper_figures(args: argparse.Namespace) -> Dict[str, Any]:
    """Seconds and memory of one prediction and one training batch (and of half of it)."""
    sents = read_sentences(args.data, args.sentences)
    gpu = use_device(args.gpu_id, args.threads) != "cpu"
    shape = dict(layers=args.layers, width=args.width, heads=args.heads)
    nlp = paper_pipeline(args.config, shape, sents, gpu)
    sgd = nlp.create_optimizer()
    list(nlp.pipe(make_docs(nlp, texts_of(sents[:2]))))  # warm-up
    out: Dict[str, Any] = {
        "docs": len(sents),
        "words": n_words(texts_of(sents)),
        "device": "GPU" if gpu else "CPU",
        "shapes": "{layers} layers, {width} wide, {heads} heads".format(**shape),
    }
    halves = [sents[: max(1, len(sents) // 2)], sents]  # two batch sizes: the memory slope per word
    docs = [(make_docs(nlp, texts_of(b)), n_words(texts_of(b))) for b in halves]
    out["predict"] = batch_figures(lambda batch: list(nlp.pipe(batch, batch_size=len(batch))), docs, gpu)
    nlp.update(ner_examples(nlp, sents[:2]), sgd=sgd)  # allocates the optimizer's state: fixed, not per word
    examples = [(ner_examples(nlp, b), n_words(texts_of(b))) for b in halves]
    out["train"] = batch_figures(lambda batch: nlp.update(batch, sgd=sgd), examples, gpu)
    out["memory"] = out["train"]["method"]
    tokenizer = nlp.get_pipe("entangle").model.shims[0].subwords.tokenizer
    out["subword_vocab"] = len(tokenizer)
    pieces = sum(len(tokenizer(w, add_special_tokens=False)["input_ids"]) for words, _ in sents for w in words)
    out["pieces_per_word"] = pieces / out["words"]
    return out


def paper_pipeline(config: Path, shape: Dict[str, int], sents: Sequence[Sentence], gpu: bool) -> Language:
    """The paper preset on random encoders of the paper's shapes (roberta-base with a
    byte-level BPE trained here, canine-s: 16384 hash buckets, 2048 chars, stride 128)."""
    from spacy_entangle.backbone_dirs import make_random_canine, make_random_subword

    with tempfile.TemporaryDirectory() as tmp:
        subword = make_random_subword(Path(tmp) / "roberta", kind="roberta", vocab_size=50265, **shape)
        char = make_random_canine(Path(tmp) / "canine", max_chars=2048, local_stride=128, hash_buckets=16384, **shape)
        overrides = {
            "paths.char_backbone": str(char),
            "paths.subword_backbone": str(subword),
            "components.entangle.model.n_coattention": 2,
            # the paper preset's mixed precision is CUDA only: thinc's grad scaler refuses the CPU
            "components.entangle.model.mixed_precision": gpu,
        }
        return pipeline_from_config(config, overrides, sents)


def batch_figures(run, batches: Sequence[Tuple[Any, int]], gpu: bool) -> Dict[str, Any]:
    """``run(batch)`` measured on a small and the full batch of (batch, words): the full
    batch's figures, and the slope of the peak between the two, MiB per 1k words (the
    fixed part, e.g. gradient buffers, drops out)."""
    (small, small_words), (full, full_words) = batches
    first = measured(lambda: run(small), gpu)
    last = measured(lambda: run(full), gpu)
    slope = None
    if full_words > small_words:
        slope = round(1000 * (last["extra_mib"] - first["extra_mib"]) / (full_words - small_words), 1)
    return {**last, "mib_per_1k_words": slope, "small_batch": {**first, "words": small_words}}


def measured(step, gpu: bool) -> Dict[str, Any]:
    """Seconds and peak memory (MiB) of one call; extra = the peak above the start.
    CPU: the process's peak RSS (VmHWM), reset first through /proc/self/clear_refs."""
    if gpu:
        sync()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated() / 2**20
        method = "torch.cuda.max_memory_allocated (extra: above what was allocated before the step)"
    else:
        release_freed_memory()
        before = proc_status_mib("VmRSS")
        method = (
            "peak RSS of the child process (VmHWM, reset before each step via /proc/self/clear_refs; "
            "extra: above the RSS before the step, after malloc_trim)"
        )
        if not reset_peak_rss():
            method = "peak RSS of the child process so far (/proc/self/clear_refs not writable)"
    start = time.perf_counter()
    step()
    sync()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**20 if gpu else proc_status_mib("VmHWM")
    return {
        "seconds": round(seconds, 4),
        "peak_mib": round(peak, 1),
        "extra_mib": round(max(0.0, peak - before), 1),
        "method": method,
    }


def release_freed_memory() -> None:
    """Hand the allocator's freed pages back (glibc), so the RSS before a step is what
    is live and an earlier step's leftovers do not hide the next one's peak."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def proc_status_mib(field: str) -> float:
    """A VmRSS / VmHWM figure of /proc/self/status; elsewhere the lifetime peak RSS."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="CoNLL file (WORD<TAB>BIO-TAG) or .spacy corpus")
    p.add_argument("--config", type=Path, default=REPO / "configs" / "ner_paper.cfg")
    p.add_argument("--sentences", type=int, default=16, help="sentences of the batch (and half)")
    p.add_argument("--layers", type=int, default=12, help="layers of each encoder (smaller for a quick check)")
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = p.parse_args(argv)
    for name in ("sentences", "layers", "width", "heads"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    return args


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    out = paper_figures(parse_args(sys.argv[1:] if argv is None else argv))
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
