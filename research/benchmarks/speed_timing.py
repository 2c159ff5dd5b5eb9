"""The speed benchmarks' timing and output: pipelines timed side by side in ONE process,
interleaved rounds (A B A B ...), best of N, so machine noise hits every pipeline alike;
tables printed, figures saved as JSON. Every table names the CPU's int8 features (VNNI, AMX):
int8 pays very differently with and without them, and the project's hosts differ."""

import json
import math
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import spacy
import torch
from spacy.language import Language
from speed_data import Text, make_docs


def sync() -> None:
    """Wait for the GPU's queued kernels (a no-op on the CPU)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def pipe_seconds(nlp: Language, texts: Sequence[Text], batch_size: int) -> float:
    docs = make_docs(nlp, texts)
    start = time.perf_counter()
    for _ in nlp.pipe(docs, batch_size=batch_size):
        pass
    sync()
    return time.perf_counter() - start


def best_seconds(
    pipes: Dict[str, Language], texts: Sequence[Text], repeats: int, batch_size: int, warm_up: bool = True
) -> Dict[str, float]:
    """Interleaved rounds (A B A B ...), the fastest run per pipeline."""
    for nlp in pipes.values() if warm_up else ():  # allocator, lazy init, first-call overheads
        pipe_seconds(nlp, texts[:batch_size], batch_size)
    best = {name: math.inf for name in pipes}
    for _ in range(repeats):
        for name, nlp in pipes.items():
            best[name] = min(best[name], pipe_seconds(nlp, texts, batch_size))
    return best


def use_device(gpu_id: int, threads: int) -> str:
    """Torch threads (0: torch's default) and the device (-1: the CPU); its name."""
    if threads:
        torch.set_num_threads(threads)
    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
        return f"gpu:{gpu_id}"
    return "cpu"


# /proc/cpuinfo flags of the int8 dot-product instructions ONNX Runtime's and torch's int8
# kernels use, as named in the tables
INT8_FLAGS = {"avx512_vnni": "AVX512-VNNI", "avx_vnni": "AVX-VNNI", "amx_int8": "AMX-INT8"}


@lru_cache(maxsize=1)
def cpu_int8_features(cpuinfo: str = "/proc/cpuinfo") -> List[str]:
    """The CPU's int8 features (INT8_FLAGS' names) from its flags; none where unreadable."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf8", errors="replace")
    except OSError:
        return []
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
            break
    return [name for flag, name in INT8_FLAGS.items() if flag in flags]


def cpu_int8_label() -> str:
    return ", ".join(cpu_int8_features()) or "no VNNI / AMX"


def environment(device: str) -> Dict[str, Any]:
    return {
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "spacy": spacy.__version__,
        "cpu_int8": cpu_int8_features(),
    }


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title} [CPU int8: {cpu_int8_label()}]")
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print("  " + "  ".join(cells).rstrip())


def save(results: Dict[str, Any], output: Optional[Path]) -> Dict[str, Any]:
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")
        print(f"\n✔ saved {output}")
    return results
