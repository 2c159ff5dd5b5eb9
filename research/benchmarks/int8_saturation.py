r"""Whether ONNX Runtime's int8 products saturate on this CPU, and what each choice of its int8
kernels gives: its default ones, its exact u8u8 ones, and the engine's (engines/onnx.py
INT8_KERNELS = "exact": the u8u8 ones only where the default ones saturate).

On an x86 CPU without VNNI (AVX2, or AVX-512 without VNNI) ONNX Runtime's default u8s8 kernels add
each pair of uint8 x int8 products in a saturating 16-bit lane (255 x 127 x 2 = 64,770 > 32,767);
with VNNI or AMX the products accumulate in 32 bits, and the u8u8 kernels, exact everywhere, do not
use VNNI (slower there). The probe is the engine's: one MatMulInteger whose every pair overflows;
exact, it returns 64 x 255 x 127 = 2,072,640; saturated, about half. A CPU without VNNI can be
emulated on one with it, e.g. `qemu-x86_64 -cpu EPYC-Rome` (AVX2, no VNNI: the project's AMD EPYC
hosts): run this script under it.

    python research/benchmarks/int8_saturation.py probe
    qemu-x86_64 -cpu EPYC-Rome .venv/bin/python research/benchmarks/int8_saturation.py probe

The same on a real encoder's int8 graph, without running torch under the emulator: `dump` exports
the subword encoder's onnx-int8 graph as the engine makes it (on this CPU) and saves it with the
tokenized batches of --limit sentences and the fp32 model's states; `run` runs that graph on them
with the given kernels (under an emulator: ONNX Runtime alone) and times it; `compare` gives each
run's relative error against fp32 over the real positions, ||int8 - fp32|| / ||fp32||, and its time.

    python research/benchmarks/int8_saturation.py dump project/backbones/minilm ../shared/data/wnut17/dev.conll WORK
    qemu-x86_64 -cpu EPYC-Rome .venv/bin/python research/benchmarks/int8_saturation.py run WORK --int8-kernels default
    qemu-x86_64 -cpu EPYC-Rome .venv/bin/python research/benchmarks/int8_saturation.py run WORK --int8-kernels exact
    OMP_NUM_THREADS=1 python research/benchmarks/int8_saturation.py run WORK --int8-kernels default|exact|u8u8
    python research/benchmarks/int8_saturation.py compare WORK [--output saturation.json]

(Timings under an emulator mean nothing; on a real CPU they compare the kernels on one thread.)
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy

K, N = 64, 1  # the probe's inner and output widths (engines/onnx.py PROBE_EXACT: K * 255 * 127)
# the --int8-kernels choices of the int8 benchmarks: engines/onnx.py INT8_KERNELS
KERNELS = ("exact", "default", "u8u8")


def use_kernels(kernels: str) -> None:
    """The int8 kernels of the engine's sessions made from now on (engines/onnx.py INT8_KERNELS):
    "exact" (the engine's own choice), "default" (ONNX Runtime's default kernels everywhere:
    saturated products where the CPU has no VNNI), "u8u8" (its exact u8u8 kernels everywhere)."""
    from spacy_entangle.modeling.engines import onnx as engine

    if kernels not in KERNELS:
        raise ValueError(f"int8 kernels: one of {', '.join(KERNELS)}, got {kernels!r}")
    engine.INT8_KERNELS = kernels


def products(kernels: str) -> str:
    """What the int8 products are here with ``kernels``: "saturated" or "exact"."""
    from spacy_entangle.modeling.engines import onnx as engine

    return "saturated" if kernels == "default" and engine.default_int8_saturates() else "exact"


def probe_model() -> bytes:
    """One MatMulInteger of uint8 255s by int8 127s: every pair of products overflows 16 bits
    (the engine's serialized probe, engines/onnx.py _PROBE, is this model)."""
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(numpy.full((K, N), 127, numpy.int8), "B")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])],
        "probe",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [1, K])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [1, N])],
        [weights],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def probe(kernels: str) -> int:
    """The engine's probe's product through its session maker with ``kernels``."""
    from spacy_entangle.modeling.engines import onnx as engine

    before = engine.INT8_KERNELS
    use_kernels(kernels)
    try:
        session = engine._session(engine._PROBE, threads=1)
    finally:
        engine.INT8_KERNELS = before
    return engine.probe_product(session)


def report() -> Dict[str, Any]:
    """The probe with each kernel choice, and whether the default ones saturate here (read off
    the products, not /proc/cpuinfo, which an emulator passes through from the host)."""
    from spacy_entangle.modeling.engines.onnx import PROBE_EXACT

    got: Dict[str, Any] = {f"{k}_kernels": probe(k) for k in KERNELS}
    return {"exact": PROBE_EXACT, **got, "default_saturates": got["default_kernels"] != PROBE_EXACT}


def print_probe() -> int:
    got = report()
    exact = got["exact"]
    for name in [f"{k}_kernels" for k in KERNELS]:
        value = got[name]
        share = "exact" if value == exact else f"{value / exact:.3f} of exact"
        print(f"{name.replace('_', ' '):<16} {value:>10,} ({share})")
    saturates = got["default_saturates"]
    print("ONNX Runtime's default int8 kernels saturate on this CPU" if saturates else "no saturation here")
    return 0 if got["exact_kernels"] == exact else 1


def dump(encoder_dir: Path, data: Path, work: Path, limit: int, batch: int) -> int:
    """The subword encoder's onnx-int8 graph (exported here by the engine), the batches of the
    first ``limit`` sentences of ``data`` and fp32's states on them, into ``work``."""
    import torch
    from speed_data import read_sentences

    from spacy_entangle.modeling import load_encoder, load_tokenizer
    from spacy_entangle.modeling.engines.onnx import OnnxEncoder

    encoder = load_encoder(str(encoder_dir), role="subword").eval()
    tokenizer = load_tokenizer(str(encoder_dir))
    engine = OnnxEncoder(encoder, "subword_encoder", int8=True)
    sentences = [words for words, _ in read_sentences(data, limit)]
    arrays: Dict[str, numpy.ndarray] = {}
    starts = range(0, len(sentences), batch)
    for i, start in enumerate(starts):
        enc = tokenizer(sentences[start : start + batch], is_split_into_words=True, padding=True, truncation=True)
        ids, mask = torch.tensor(enc["input_ids"]), torch.tensor(enc["attention_mask"])
        with torch.inference_mode():
            arrays[f"fp32_{i}"] = encoder(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
            engine(input_ids=ids, attention_mask=mask)  # exports the graph on the first batch
        arrays[f"input_ids_{i}"], arrays[f"attention_mask_{i}"] = ids.numpy(), mask.numpy()
    (graph,) = [g for g in engine._graphs.values() if g is not None]
    work.mkdir(parents=True, exist_ok=True)
    (work / "graph.onnx").write_bytes(graph.data)
    numpy.savez(work / "batches.npz", **arrays)
    print(f"✔ {work}: the int8 graph of {encoder_dir} and {len(sentences)} sentences in {len(starts)} batches")
    return 0


def _batches(work: Path) -> List[Dict[str, numpy.ndarray]]:
    arrays = numpy.load(work / "batches.npz")
    n = len([k for k in arrays.files if k.startswith("fp32_")])
    return [{k: arrays[f"{k}_{i}"] for k in ("input_ids", "attention_mask", "fp32")} for i in range(n)]


def run(work: Path, kernels: str, label: Optional[str]) -> int:
    """The saved graph on the saved batches with ``kernels``, through the engine's session maker;
    the outputs go to work/run_LABEL.npz (LABEL: the kernels and whether they saturate here)."""
    from spacy_entangle.modeling.engines import onnx as engine

    use_kernels(kernels)
    session = engine._session((work / "graph.onnx").read_bytes(), threads=1)
    names = {i.name for i in session.get_inputs()}
    feeds = [{k: v for k, v in b.items() if k in names} for b in _batches(work)]
    session.run(None, feeds[0])  # warm-up
    outputs: Dict[str, Any] = {}
    start = time.process_time()
    for i, feed in enumerate(feeds):
        outputs[f"out_{i}"] = session.run(None, feed)[0]
    seconds = time.process_time() - start
    got = products(kernels)
    name = label or f"{kernels}-kernels_{got}"
    numpy.savez(work / f"run_{name}.npz", seconds=numpy.array(seconds), **outputs)
    print(f"✔ {work}/run_{name}.npz ({kernels} kernels; the products {got} on this CPU; {seconds:.2f} CPU-s)")
    return 0


def compare(work: Path, output: Optional[Path]) -> int:
    """Each run's relative error against fp32 over the real (unmasked) positions."""
    batches = _batches(work)
    got: Dict[str, Any] = {}
    for path in sorted(work.glob("run_*.npz")):
        outs = numpy.load(path)
        diff2 = ref2 = 0.0
        for i, b in enumerate(batches):
            real = b["attention_mask"].astype(bool)
            exact = b["fp32"][real].astype("float64")
            diff2 += float(((outs[f"out_{i}"][real] - exact) ** 2).sum())
            ref2 += float((exact**2).sum())
        seconds = float(outs["seconds"]) if "seconds" in outs.files else None
        got[path.stem[len("run_") :]] = {"relative_error": (diff2 / ref2) ** 0.5, "cpu_seconds": seconds}
    for name, value in got.items():
        timed = "" if value["cpu_seconds"] is None else f", {value['cpu_seconds']:.2f} CPU-s"
        print(f"{name:<44} relative error against fp32 {value['relative_error']:.4f}{timed}")
    if output:
        output.write_text(json.dumps(got, indent=2) + "\n", encoding="utf8")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command")
    sub.add_parser("probe", help="the saturation probe, both kernels (the default command)")
    d = sub.add_parser("dump", help="a subword encoder's int8 graph, batches and fp32 states")
    d.add_argument("encoder", type=Path)
    d.add_argument("data", type=Path, help="CoNLL file or .spacy corpus (its words are read)")
    d.add_argument("work", type=Path)
    d.add_argument("--limit", type=int, default=300)
    d.add_argument("--batch-size", type=int, default=64)
    r = sub.add_parser("run", help="the dumped graph on its batches with the given kernels")
    r.add_argument("work", type=Path)
    r.add_argument("--int8-kernels", choices=KERNELS, default="exact")
    r.add_argument("--label", default=None, help="the run's name (default: the kernels and the products)")
    c = sub.add_parser("compare", help="each run's error against fp32")
    c.add_argument("work", type=Path)
    c.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    if args.command == "dump":
        return dump(args.encoder, args.data, args.work, args.limit, args.batch_size)
    if args.command == "run":
        return run(args.work, args.int8_kernels, args.label)
    if args.command == "compare":
        return compare(args.work, args.output)
    return print_probe()


if __name__ == "__main__":
    sys.exit(main())
