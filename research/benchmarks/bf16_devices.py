"""Is `inference = "bf16"` a speed-up here? words/s of the entangle component in bf16 against
fp32, side by side in one process (interleaved rounds, best of N), on the CPU (one thread;
the CPU's AMX flag printed beside it) and, where torch sees one, on the GPU.

The encoders are random at the shipped shapes (MiniLM-L6: 6 layers, 384 wide, its WordPiece
tokenizer; the grown char encoder over its 6 layers; m = 1, NER on both sides): speed does not
depend on the weights, so this runs where the pretrained files are not (a bare GPU machine).
Texts: --data (a CoNLL file or .spacy corpus, e.g. WNUT-17 dev), or where none is at hand the
package's built-in tweet-like sample lines, repeated.

    python research/benchmarks/bf16_devices.py --data ../shared/data/wnut17/dev.conll --docs 512 --repeats 3
"""

import argparse
import tempfile
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import spacy
import torch
from speed_data import n_words, read_sentences
from speed_data import texts_of as sentence_texts
from speed_timing import best_seconds, print_table

from spacy_entangle.backbone_dirs import make_random_subword
from spacy_entangle.backbone_dirs.sample_text import sample_lines
from spacy_entangle.modeling.grown import grow_char_encoder


def cpu_flag(flag: str) -> str:
    """'yes' / 'no' from /proc/cpuinfo (Linux), '?' elsewhere."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return "?"
    return "yes" if f" {flag}" in cpuinfo.read_text(encoding="utf8", errors="replace") else "no"


SHAPES = {"n_coattention": 1, "hidden_width": 384, "n_heads": 6, "ffn_width": 768}  # configs/ner_cpu.cfg


def build_pipeline(tmp: Path):
    """The shipped shape on random encoders, initialized (heads untrained), saved to ``tmp``."""
    sub = make_random_subword(tmp / "minilm", kind="bert", layers=6, width=384, heads=12, ffn_width=1536)
    grow_char_encoder(sub, tmp / "grown", k=6)
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-entangle.EntangleModel.v1", "char_backbone": str(tmp / "grown")}
    model.update(subword_backbone=str(sub), **SHAPES)
    nlp.add_pipe("entangle", config={"model": model})
    tok2vec = {"@architectures": "spacy-entangle.EntangleListener.v1", "upstream": "entangle", "side": "both"}
    nlp.add_pipe("ner", config={"model": {"@architectures": "spacy.TransitionBasedParser.v2", "tok2vec": tok2vec}})
    nlp.get_pipe("ner").add_label("X")
    nlp.initialize()
    nlp.to_disk(tmp / "pipeline")
    return tmp / "pipeline"


def texts_of(n: int, data: Optional[Path]) -> List[tuple]:
    if data is not None:
        return sentence_texts(read_sentences(data, n))
    lines = sample_lines()
    docs = [lines[i % len(lines)].split() for i in range(n)]
    return [(words, [True] * len(words)) for words in docs if words]


def time_modes(path: Path, texts, repeats: int, batch_size: int) -> Dict[str, float]:
    pipes = {}
    for mode in ("fp32", "bf16"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # bf16 on a CPU warns: measured here anyway
            pipes[mode] = spacy.load(path, config={"components": {"entangle": {"inference": mode}}})
    best = best_seconds(pipes, texts, repeats, batch_size)
    return {mode: n_words(texts) / s for mode, s in best.items()}


def main(argv: Optional[Sequence[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None, help="CoNLL or .spacy texts (default: built-in sample)")
    p.add_argument("--docs", type=int, default=512)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--gpu-id", type=int, default=0, help="GPU timed when torch sees one (-1: CPU only)")
    args = p.parse_args(argv)
    texts = texts_of(args.docs, args.data)
    rows = []
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        torch.set_num_threads(1)
        path = build_pipeline(Path(tmp))
        cpu = time_modes(path, texts, args.repeats, args.batch_size)
        rows.append(["cpu, 1 thread", f"amx_bf16: {cpu_flag('amx_bf16')}", *_cells(cpu)])
        if args.gpu_id >= 0 and torch.cuda.is_available():
            spacy.require_gpu(args.gpu_id)
            gpu = time_modes(path, texts, args.repeats, args.batch_size)
            rows.append([f"gpu:{args.gpu_id}", torch.cuda.get_device_name(args.gpu_id), *_cells(gpu)])
            spacy.require_cpu()
    torch.set_num_threads(threads)
    print_table(
        f"bf16 vs fp32: {len(texts)} docs, batch size {args.batch_size}, best of {args.repeats}",
        ["device", "", "fp32 words/s", "bf16 words/s", "bf16 / fp32"],
        rows,
    )


def _cells(wps: Dict[str, float]) -> List[str]:
    return [f"{wps['fp32']:,.0f}", f"{wps['bf16']:,.0f}", f"{wps['bf16'] / wps['fp32']:.2f}x"]


if __name__ == "__main__":
    main()
