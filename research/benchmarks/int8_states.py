r"""How far onnx-int8's states are from fp32's, with and without the activation smoothing of
the subword encoder (inference.ONNX_INT8_SMOOTHING), on real text: the relative error of the
rows listeners read, ||int8 - fp32|| / ||fp32|| over all of them (and the mean per row).

--encoder DIR: the subword encoder alone (e.g. MiniLM-L6: project/backbones/minilm), its
graphs exported by the engine as onnx-int8 exports them (smoothed on the package's sample
text, or not), each word's first piece read. --pipeline DIR: a trained pipeline's `entangle`
states, side by side in fp32 and in onnx-int8 with each smoothing, the rows its listeners read.

    OMP_NUM_THREADS=1 python research/benchmarks/int8_states.py --data ../shared/data/wnut17/dev.conll \
        --limit 300 --encoder project/backbones/minilm [--pipeline PIPELINE] [--alphas 0.5 off] \
        [--int8-kernels exact|default|u8u8]

`--int8-kernels default|u8u8`: ONNX Runtime's default int8 kernels everywhere (they saturate on
a CPU without VNNI, which `qemu-x86_64 -cpu EPYC-Rome` emulates on one with it), or its u8u8 ones
everywhere, instead of the engine's choice (research/benchmarks/int8_saturation.py).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from int8_accuracy import smoothing_alpha
from int8_saturation import KERNELS, products, use_kernels
from speed_data import read_sentences

import spacy_entangle.modeling.inference as inference

Errors = Tuple[numpy.ndarray, numpy.ndarray]  # per row: |int8 - fp32|^2 summed, |fp32|^2 summed


def summary(diff2: numpy.ndarray, ref2: numpy.ndarray) -> Dict[str, float]:
    """The relative error over all rows (Frobenius) and the mean per row."""
    return {
        "relative_error": float(numpy.sqrt(diff2.sum() / ref2.sum())),
        "mean_row_relative_error": float(numpy.mean(numpy.sqrt(diff2 / numpy.maximum(ref2, 1e-12)))),
        "rows": int(len(diff2)),
    }


def encoder_errors(path: Path, sentences: List[List[str]], alpha: Optional[float], batch: int) -> Errors:
    """The subword encoder's first-piece rows in onnx-int8 (smoothed with ``alpha``, None: not)
    against fp32."""
    from spacy_entangle.backbone_dirs.sample_text import sample_lines
    from spacy_entangle.modeling import load_encoder, load_tokenizer
    from spacy_entangle.modeling.engines.onnx import OnnxEncoder
    from spacy_entangle.tokenization import SubwordSpec

    encoder = load_encoder(str(path), role="subword").eval()
    tokenizer = load_tokenizer(str(path))
    engine = OnnxEncoder(encoder, "subword_encoder", int8=True)
    if alpha is not None:
        ids, mask = SubwordSpec.from_tokenizer(tokenizer, encoder.config).padded(sample_lines())
        engine.calibration = (torch.from_numpy(ids), torch.from_numpy(mask), alpha)
    diffs, refs = [], []
    for start in range(0, len(sentences), batch):
        words = sentences[start : start + batch]
        enc = tokenizer(words, is_split_into_words=True, padding=True, truncation=True, return_tensors="pt")
        with torch.inference_mode():
            exact = encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            fast = engine(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        for i in range(len(words)):
            ids = enc.word_ids(i)
            first = [j for j, w in enumerate(ids) if w is not None and (j == 0 or ids[j - 1] != w)]
            d = (fast[i, first] - exact[i, first]).double()
            diffs.append((d**2).sum(-1).numpy())
            refs.append((exact[i, first].double() ** 2).sum(-1).numpy())
    if alpha is not None and not engine.smoothed:
        sys.exit(f"{path}: not smoothed (no BERT-style layers, or the smoothed graph did not export)")
    return numpy.concatenate(diffs), numpy.concatenate(refs)


def pipeline_errors(path: Path, sentences: List[List[str]], alpha: Optional[float], batch: int) -> Dict[str, Errors]:
    """The `entangle` states the listeners read (per side) in onnx-int8 against fp32."""
    import spacy
    from spacy.tokens import Doc

    inference.ONNX_INT8_SMOOTHING = alpha
    out: Dict[str, Tuple[List[Any], List[Any]]] = {}
    pipes = {m: spacy.load(path, config={"components": {"entangle": {"inference": m}}}) for m in ("fp32", "onnx-int8")}
    for start in range(0, len(sentences), batch):
        words = sentences[start : start + batch]
        states = {}
        for mode, nlp in pipes.items():
            docs = [Doc(nlp.vocab, words=w) for w in words]
            states[mode] = nlp.get_pipe("entangle").predict(docs)
        for exact, fast in zip(states["fp32"], states["onnx-int8"]):
            for side in ("subword", "char"):
                e, f = getattr(exact, side), getattr(fast, side)
                if e is None or not len(e):
                    continue
                diffs, refs = out.setdefault(side, ([], []))
                diffs.append(((f - e).astype("float64") ** 2).sum(-1))
                refs.append((e.astype("float64") ** 2).sum(-1))
    return {side: (numpy.concatenate(d), numpy.concatenate(r)) for side, (d, r) in out.items()}


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="CoNLL file or .spacy corpus (its words are read)")
    p.add_argument("--limit", type=int, default=300, help="sentences (0 = all)")
    p.add_argument("--encoder", type=Path, default=None, help="a subword encoder directory")
    p.add_argument("--pipeline", type=Path, default=None, help="a pipeline with an `entangle` component")
    p.add_argument("--alphas", nargs="+", type=smoothing_alpha, default=[inference.ONNX_INT8_SMOOTHING, None])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--int8-kernels", choices=KERNELS, default="exact")
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    if args.encoder is None and args.pipeline is None:
        p.error("give --encoder, --pipeline or both")
    use_kernels(args.int8_kernels)
    sentences = [words for words, _ in read_sentences(args.data, args.limit)]
    results: Dict[str, Any] = {
        "data": str(args.data),
        "sentences": len(sentences),
        "int8_kernels": args.int8_kernels,
        "int8_products": products(args.int8_kernels),
    }
    print(
        f"{len(sentences)} sentences of {args.data}; relative error of onnx-int8's states against fp32 "
        f"({args.int8_kernels} int8 kernels: the products {results['int8_products']} on this CPU)"
    )
    for alpha in args.alphas:
        label = "off" if alpha is None else f"alpha {alpha:g}"
        if args.encoder is not None:
            got = summary(*encoder_errors(args.encoder, sentences, alpha, args.batch_size))
            results[f"encoder, smoothing {label}"] = got
            print(f"  {args.encoder.name} alone, smoothing {label}: {got}")
        if args.pipeline is not None:
            for side, errors in pipeline_errors(args.pipeline, sentences, alpha, args.batch_size).items():
                got = summary(*errors)
                results[f"pipeline {side}, smoothing {label}"] = got
                print(f"  {args.pipeline} {side} side, smoothing {label}: {got}")
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")
    return results


if __name__ == "__main__":
    main()
