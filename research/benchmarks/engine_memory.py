"""What one long document leaves behind: the RSS of a loaded, warmed-up pipeline (the engine
modes' graphs exported or read, their sessions made) before and after one doc of N characters
(WNUT-17 dev tweets joined), per inference mode, each mode in a child process of its own. What
a mode keeps after the doc is memory the process never gets back (an allocator's arena, caches
sized by the longest input).

    OMP_NUM_THREADS=1 python research/benchmarks/engine_memory.py WORKDIR --data ../shared/data/wnut17/dev.conll \\
        --subword project/backbones/minilm --modes fp32 onnx-int8 --chars 100000 [--arena]

The pipeline is the shipped shape made by long_docs.py (MiniLM-L6 + a grown char encoder with
random front-end weights, m = 1, NER on both sides; memory does not depend on the weights),
saved in WORKDIR; --pipeline times another one.
"""

import argparse
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from long_docs import _status_mb, make_pipelines
from speed_data import long_texts, read_sentences


def child(pipeline: Path, mode: str, data: Path, length: int, arena: bool = False) -> Dict[str, Any]:
    """Load in ``mode``, warm up, then one doc: the RSS before and after it (MB), and the peak.
    ``arena``: ONNX Runtime's memory arena on (engines.onnx.CPU_MEM_ARENA, a what-if)."""
    import spacy
    from spacy.tokens import Doc

    import spacy_entangle.modeling.engines.onnx as engine

    engine.CPU_MEM_ARENA = arena
    nlp = spacy.load(pipeline, config={"components": {"entangle": {"inference": mode}}})
    list(nlp.pipe(["Warm up on Paris .", "and once more with a few more words"]))
    ((words, spaces),) = long_texts(read_sentences(data), length, length)
    doc = Doc(nlp.vocab, words=words, spaces=spaces)
    gc.collect()
    before = _status_mb("VmRSS")
    doc = nlp(doc)
    gc.collect()
    after = _status_mb("VmRSS")
    return {
        "mode": mode,
        "chars": len(doc.text),
        "before_mb": before,
        "after_mb": after,
        "peak_mb": _status_mb("VmHWM"),
    }


def measure(pipeline: Path, mode: str, data: Path, length: int, arena: bool = False) -> Dict[str, Any]:
    cmd = [sys.executable, __file__, str(pipeline.parent), "--data", str(data), "--child", str(pipeline), mode]
    run = subprocess.run([*cmd, str(length), *(["--arena"] if arena else [])], capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{mode} failed:\n{run.stderr[-3000:]}")
    r: Dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    label = f"{mode} (arena)" if arena else mode
    print(
        f"{label:>18} {r['chars']:>9,} chars: RSS {r['before_mb']:7.0f} MB before, {r['after_mb']:7.0f} MB after "
        f"(kept {r['after_mb'] - r['before_mb']:+.0f} MB; peak {r['peak_mb']:.0f} MB)",
        flush=True,
    )
    return r


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workdir", type=Path)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--subword", type=Path, default=None, help="the subword backbone (default: MiniLM-L6, made here)")
    p.add_argument("--char", type=Path, default=None, help="the char backbone (default: grown from it, here)")
    p.add_argument("--pipeline", type=Path, default=None, help="a trained pipeline instead of the made one")
    p.add_argument("--modes", nargs="+", default=["fp32", "onnx-int8"])
    p.add_argument("--chars", type=int, default=100_000)
    p.add_argument("--arena", action="store_true", help="ONNX Runtime's memory arena on (a what-if)")
    p.add_argument("--output", type=Path, default=None)
    p.add_argument("--child", nargs=3, metavar=("PIPELINE", "MODE", "CHARS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        path, mode, chars = args.child
        print(json.dumps(child(Path(path), mode, args.data, int(chars), args.arena)))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.pipelines = "entangle"
    pipeline = args.pipeline or make_pipelines(args)["entangle"]
    results = [measure(pipeline, mode, args.data, args.chars, args.arena) for mode in args.modes]
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
