"""Train, evaluate and compare the variants of a variants.yml (WNUT-17's; each task project has its own).

    python scripts/variants.py train NAME [NAME ...] [--seeds 0,1,2] [--char-encoder masked]
        [--max-steps 600] [--eval-frequency 200] [--noisy corpus/dev_noise0.5.spacy ...]
        [--gpu-id -1] [--threads N] [--dry-run] [-- EXTRA spacy train ARGS]
    python scripts/variants.py evaluate NAME [NAME ...] [--seeds ...] [--noisy ...]
    python scripts/variants.py compare [NAME ...] [--output metrics/compare.md] [--plot metrics/compare.png]
    python scripts/variants.py select NAME [NAME ...] [--noise 0.5] [--min-seeds 3] [--output metrics/selection.json]
    python ../scripts/variants.py train-one NAME --output DIR [--time PATH] [--variants variants.yml]
        [--configs-dir ../../configs] [--char-dir DIR] [--override KEY=VALUE ...] [-- EXTRA ARGS]

For variant NAME and seed N, `train` runs `spacy train` (the variant's config, char encoder
and side, `--system.seed N`) into training/NAME/seedN/, records its wall-clock time in
metrics/NAME/seedN_train_time.json, then evaluates model-best: dev -> metrics/NAME/seedN_dev.json,
each noisy dev copy -> seedN_dev_noiseR.json, the test split (when corpus/test.spacy exists)
-> seedN_test.json. A seed whose outputs are all there is skipped, so an interrupted run
resumes where it stopped (another budget is another run: use another --training-dir and
--metrics-dir). Seeds run one after another: two torch jobs at once oversubscribe a small
machine. `evaluate` evaluates trained seeds on the noisy copies (again: they may have been
remade) and on dev/test where their metrics are missing (all with --force); `compare`
writes one table of every variant with metrics: mean ± spread over its seeds. `select` picks,
among the named variants, the one to ship: the best mean over its seeds of (clean dev F1 +
dev F1 at --noise) / 2, each with at least --min-seeds seeds; it writes the figures behind
the choice (and the baseline's, when trained) to --output, which `package` puts in the model
card (meta/selection.json holds the committed choice). `train-one`
trains one variant into --output (one seed, timed into --time, no evaluation): the task
projects (tweebank, tweeteval, masakhaner, codeswitch) read their own variants.yml with it and
evaluate with their own scripts. --override KEY=VALUE goes to every variant (`--KEY VALUE`),
the EXTRA args after `--` to the entangle variants only; --char-dir is the char backbone of
the variants whose char_encoder is `default` (instead of backbones/canine-ENCODER).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from tables import fmt_mean_spread, fmt_time, markdown_table, mean_spread, pct, read_json, write_report

HERE = Path(__file__).resolve().parent.parent
NOISE = re.compile(r"_noise([0-9.]+)\.spacy$")
SIDES = ("subword", "char", "both")
ENCODERS = ("random", "masked", "distilled", "grown", "grown-canine")
# the folder under backbones/ of each char encoder (grown: design (b), word-pooled, not a
# CANINE; grown-canine: design (a), a CANINE whose deep stack is MiniLM's layers)
ENCODER_DIRS = {
    "random": "canine-random",
    "masked": "canine-masked",
    "distilled": "canine-distilled",
    "grown": "grown",
    "grown-canine": "grown-canine",
}
DEFAULT = "default"  # char_encoder of a variant that follows the project's `char_encoder`


@dataclass(frozen=True)
class Variant:
    """One entry of variants.yml."""

    name: str
    config: str
    char_encoder: Optional[str] = None
    side: str = "subword"
    augment: bool = False
    char_backbone: Optional[str] = None
    subword_backbone: Optional[str] = None
    component: str = "ner"
    side_key: str = "model.tok2vec.side"  # where the component's config holds `side`

    @property
    def is_entangle(self) -> bool:
        return self.char_encoder is not None or self.char_backbone is not None

    def char_dir(self, backbones_dir: Path, default: str, default_dir: Optional[str] = None) -> str:
        """The char backbone: an explicit name/path, else backbones/ENCODER_DIRS[ENCODER]
        (for `default`: default_dir when given)."""
        if self.char_backbone:
            return self.char_backbone
        if self.char_encoder == DEFAULT and default_dir:
            return default_dir
        encoder = default if self.char_encoder == DEFAULT else self.char_encoder
        return str(backbones_dir / ENCODER_DIRS[encoder])


def load_variants(path: Path = HERE / "variants.yml") -> Dict[str, Variant]:
    """Read and check variants.yml: a mistake names the variant and the key."""
    import srsly

    raw = (srsly.read_yaml(path) or {}).get("variants") or {}
    out: Dict[str, Variant] = {}
    for name, spec in raw.items():
        spec = dict(spec or {})
        unknown = set(spec) - {
            "config",
            "char_encoder",
            "side",
            "augment",
            "char_backbone",
            "subword_backbone",
            "component",
            "side_key",
        }
        if unknown:
            raise ValueError(f"{path}: variant {name!r}: unknown keys {sorted(unknown)}")
        if "config" not in spec:
            raise ValueError(f"{path}: variant {name!r} names no config")
        variant = Variant(name=name, **spec)
        if variant.char_encoder not in (None, DEFAULT, *ENCODERS):
            raise ValueError(f"{path}: variant {name!r}: char_encoder must be one of {(DEFAULT,) + ENCODERS} or null")
        if variant.side not in SIDES:
            raise ValueError(f"{path}: variant {name!r}: side must be one of {SIDES}")
        out[name] = variant
    return out


def noise_rate(corpus: Path) -> str:
    match = NOISE.search(corpus.name)
    if not match:
        raise SystemExit(f"variants.py: {corpus}: expected a file named *_noiseRATE.spacy")
    return match.group(1)


def eval_sets(dev: Path, noisy: Sequence[Path], test: Optional[Path]) -> Dict[str, Path]:
    """{metrics key: corpus}: dev, each noisy dev copy, and the test split when it exists."""
    sets = {"dev": dev}
    sets.update({f"dev_noise{noise_rate(c)}": c for c in noisy})
    if test is not None and test.exists():
        sets["test"] = test
    return sets


def metrics_path(metrics_dir: Path, name: str, seed: int, key: str) -> Path:
    """metrics/NAME/seedN_KEY.json: KEY is train_time, dev, dev_noiseR or test."""
    return metrics_dir / name / f"seed{seed}_{key}.json"


def train_command(
    variant: Variant,
    seed: int,
    *,
    output: Path,
    corpus_dir: Path,
    configs_dir: Path,
    backbones_dir: Path,
    subword_dir: Path,
    char_encoder: str,
    max_steps: Optional[int],
    eval_frequency: Optional[int],
    n_coattention: Optional[int],
    gpu_id: int,
    aug_level: float,
    aug_rate: float,
    extra: Sequence[str] = (),
    char_dir: Optional[str] = None,
    overrides: Sequence[str] = (),
) -> List[str]:
    """The `spacy train` command line of one seed of one variant: `overrides` (KEY=VALUE)
    for every variant, `extra` for the entangle variants only."""
    cmd = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        str(configs_dir / variant.config),
        "--output",
        str(output),
        "--paths.train",
        str(corpus_dir / "train.spacy"),
        "--paths.dev",
        str(corpus_dir / "dev.spacy"),
        "--paths.subword_backbone",
        variant.subword_backbone or str(subword_dir),
        "--system.seed",
        str(seed),
    ]
    if max_steps is not None:  # the learning-rate schedule ends with the budget
        cmd += ["--training.max_steps", str(max_steps), "--training.optimizer.learn_rate.total_steps", str(max_steps)]
    if eval_frequency is not None:
        cmd += ["--training.eval_frequency", str(eval_frequency)]
    cmd += ["--gpu-id", str(gpu_id)]
    if variant.is_entangle:
        cmd += ["--paths.char_backbone", variant.char_dir(backbones_dir, char_encoder, char_dir)]
        if n_coattention is not None:
            cmd += ["--components.entangle.model.n_coattention", str(n_coattention)]
        cmd += [f"--components.{variant.component}.{variant.side_key}", variant.side]
    if variant.augment:
        augmenter = {"@augmenters": "spacy-entangle.char_noise_augmenter.v1", "level": aug_level, "rate": aug_rate}
        cmd += ["--corpora.train.augmenter", json.dumps(augmenter)]
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or not key:
            raise SystemExit(f"variants.py: --override takes KEY=VALUE, got {override!r}")
        cmd += [f"--{key}", value]
    # the extra overrides (ENTANGLE_TRAIN_ARGS) are entangle settings: not for the baseline
    return cmd + (list(extra) if variant.is_entangle else [])


def evaluate(model: Path, sets: Dict[str, Path], outputs: Dict[str, Path], gpu_id: int) -> None:
    """Evaluate one trained pipeline on each corpus (spaCy's scorer), loading it once."""
    import spacy
    import srsly
    from spacy.tokens import DocBin
    from spacy.training import Example

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    nlp = spacy.load(model)
    for key, corpus in sets.items():
        docs = DocBin().from_disk(corpus).get_docs(nlp.vocab)
        scores = nlp.evaluate([Example(nlp.make_doc(doc.text), doc) for doc in docs])
        outputs[key].parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(outputs[key], scores)
        print(f"✔ {model} on {corpus}: F1 {pct(score(scores), 2)} -> {outputs[key]}")


def same_command(time_path: Path, cmd: Sequence[str]) -> bool:
    """Whether the seed was trained by this very command (scripts/timed.py records it): a
    changed budget, backbone or override retrains; a changed config FILE needs --force."""
    record = read_json(time_path)
    return bool(record) and record.get("command") == list(cmd[1:])


def parse_seeds(text: str) -> List[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"variants.py: --seeds takes integers separated by commas, got {text!r}") from None
    if not seeds:
        raise SystemExit("variants.py: --seeds names no seed")
    return seeds


def command_from_args(
    args: argparse.Namespace, variant: Variant, seed: int, output: Path, extra: Sequence[str]
) -> List[str]:
    """train_command with the settings `train` and `train-one` take from the command line."""
    return train_command(
        variant,
        seed,
        output=output,
        corpus_dir=args.corpus_dir,
        configs_dir=args.configs_dir,
        backbones_dir=args.backbones_dir,
        subword_dir=args.subword_dir,
        char_encoder=args.char_encoder,
        char_dir=args.char_dir,
        max_steps=args.max_steps,
        eval_frequency=args.eval_frequency,
        n_coattention=args.n_coattention,
        gpu_id=args.gpu_id,
        aug_level=args.aug_level,
        aug_rate=args.aug_rate,
        overrides=args.override,
        extra=extra,
    )


def run_seeds(args: argparse.Namespace, variants: Dict[str, Variant], extra: Sequence[str], train: bool) -> int:
    """`train` and `evaluate`: every seed of every named variant, skipping what is done."""
    for corpus in args.noisy:
        if not corpus.exists():
            raise SystemExit(f"variants.py: {corpus} does not exist (make it with `python -m spacy_entangle perturb`)")
    sets = eval_sets(args.corpus_dir / "dev.spacy", args.noisy, args.corpus_dir / "test.spacy")
    timed = Path(__file__).resolve().parent / "timed.py"
    for name in args.names:
        for seed in parse_seeds(args.seeds):
            model_dir = trained_pipeline(args.training_dir, name, seed).parent
            outputs = {key: metrics_path(args.metrics_dir, name, seed, key) for key in sets}
            time_path = metrics_path(args.metrics_dir, name, seed, "train_time")
            cmd = command_from_args(args, variants[name], seed, model_dir, extra)
            trained = (model_dir / "model-best").exists() and (
                not train or (not args.force and same_command(time_path, cmd))
            )
            if not train and not trained:
                print(f"ℹ {name} seed {seed}: not trained ({model_dir}), skipped")
                continue
            # what is missing; `evaluate` also redoes the noisy copies (they may have been remade)
            todo = {
                key: sets[key]
                for key, path in outputs.items()
                if not path.exists() or args.force or (not train and key.startswith("dev_noise"))
            }
            if trained and not todo:
                print(f"ℹ {name} seed {seed}: trained and evaluated, skipped")
                continue
            if not trained:
                todo = dict(sets)  # a new model: every metric anew
                print(f"ℹ {name} seed {seed}: {' '.join(cmd[1:])}", flush=True)
                if args.dry_run:
                    continue
                for stale in (args.metrics_dir / name).glob(f"seed{seed}_*.json"):
                    stale.unlink()  # the metrics of a model about to be replaced
                rc = subprocess.run([sys.executable, str(timed), str(time_path), "--", *cmd]).returncode
                if rc != 0:
                    return rc
            if not args.dry_run:
                evaluate(model_dir / "model-best", todo, outputs, args.gpu_id)
    return 0


def train_one(args: argparse.Namespace, variants: Dict[str, Variant], extra: Sequence[str]) -> int:
    """`train-one`: one variant, one seed, into --output; timed into --time when given."""
    (name,) = args.names
    cmd = command_from_args(args, variants[name], args.seed, args.output, extra)
    print(f"ℹ {name}: {' '.join(cmd[1:])}", flush=True)
    if args.dry_run:
        return 0
    if args.time is not None:
        cmd = [sys.executable, str(Path(__file__).resolve().parent / "timed.py"), str(args.time), "--", *cmd]
    return subprocess.run(cmd).returncode


def load_rows(metrics_dir: Path, names: Sequence[str]) -> List[Dict]:
    """Per variant with metrics: its seeds' dev/test/noisy scores and training times."""
    rows = []
    for name in names:
        seeds = sorted(
            int(p.name[len("seed") : -len("_dev.json")]) for p in (metrics_dir / name).glob("seed*_dev.json")
        )
        if not seeds:
            continue
        runs = []
        for seed in seeds:
            run = {"seed": seed, "dev": read_json(metrics_path(metrics_dir, name, seed, "dev"))}
            run["test"] = read_json(metrics_path(metrics_dir, name, seed, "test"))
            run["time"] = read_json(metrics_path(metrics_dir, name, seed, "train_time"))
            run["noisy"] = {
                p.name[len(f"seed{seed}_dev_noise") : -len(".json")]: read_json(p)
                for p in (metrics_dir / name).glob(f"seed{seed}_dev_noise*.json")
            }
            runs.append(run)
        rows.append({"name": name, "runs": runs})
    return rows


def score(scores: Dict, what: str = "f") -> Optional[float]:
    """Entity F (P, R) of `spacy evaluate` output: the ner's ents_*, or a spancat's spans_sc_*."""
    value = scores.get(f"ents_{what}")
    return scores.get(f"spans_sc_{what}") if value is None else value


def _f1s(rows_runs: List[Dict], key: str, rate: Optional[str] = None) -> List[float]:
    if rate is None:
        return [score(r[key]) for r in rows_runs if r.get(key)]
    return [score(r["noisy"][rate]) for r in rows_runs if rate in r["noisy"]]


def _drops(runs: List[Dict], rate: str) -> List[float]:
    return [score(r["dev"]) - score(r["noisy"][rate]) for r in runs if rate in r["noisy"]]


def make_table(rows: List[Dict], speed: Optional[dict], reference: str = "baseline") -> List[str]:
    """The markdown comparison: dev F1 mean ± spread over seeds, P, R, the seeds' F1s,
    noisy F1 and drop per noise rate (with the drop relative to the reference's), test F1,
    training time and words/s."""
    rates = sorted({rate for row in rows for run in row["runs"] for rate in run["noisy"]}, key=float)
    has_test = any(run["test"] for row in rows for run in row["runs"])
    ref = next((row for row in rows if row["name"] == reference), None)
    header = ["model", "seeds", "dev F1", "P", "R", "F1 per seed"]
    for rate in rates:
        header += [f"noisy F1 @{rate}", f"drop @{rate}"] + ([f"drop / {reference}'s"] if ref else [])
    header += (["test F1"] if has_test else []) + ["train time", "words/s"]
    table = []
    for row in rows:
        runs = row["runs"]
        devs = [r["dev"] for r in runs]
        cells = [row["name"], str(len(runs)), fmt_mean_spread(_f1s(runs, "dev"))]
        cells += [
            pct(mean_spread([score(d, "p") for d in devs])[0]),
            pct(mean_spread([score(d, "r") for d in devs])[0]),
        ]
        cells.append(" / ".join(pct(score(r["dev"])) for r in runs))
        for rate in rates:
            drops = _drops(runs, rate)
            cells += [fmt_mean_spread(_f1s(runs, "dev", rate)), fmt_mean_spread(drops)]
            if ref:
                own, base = mean_spread(drops)[0], mean_spread(_drops(ref["runs"], rate))[0]
                cells.append("–" if own is None or not base else f"{own / base:.2f}")
        if has_test:
            cells.append(fmt_mean_spread(_f1s(runs, "test")))
        seconds = mean_spread([(r["time"] or {}).get("seconds") for r in runs])[0]
        wps = ((speed or {}).get("models", {}).get(row["name"]) or {}).get("words_per_second")
        cells += [fmt_time(seconds), "–" if wps is None else f"{wps:,.0f}"]
        table.append(cells)
    notes = [
        "",
        "WNUT-17 dev, entity-level scores in % (spaCy's scorer: exact span + type); mean ± sample "
        "standard deviation over the seeds (`--system.seed`), P and R are means; a spancat variant's "
        "are its spans_sc_* scores (the same entities as spans: exact span + label).",
    ]
    if rates:
        notes.append(
            "noisy F1 @R: dev with CharBERT's character attacks (drop/add/swap/keyboard) on each word of 4+ "
            "characters with probability R (`python -m spacy_entangle perturb`); drop: clean minus noisy F1 "
            f"per seed, in points; drop / {reference}'s: the mean drop over the reference's mean drop."
        )
    if speed:
        notes.append(
            f"words/s: nlp.pipe of seed 0 over {speed.get('words', '?')} dev words on {speed.get('device', '?')}, "
            f"batch size {speed.get('batch_size', '?')}, all models timed side by side in one process."
        )
    notes.append("train time: mean wall clock of `spacy train` (with its dev evaluations) per seed.")
    return markdown_table(header, table) + notes


def make_plot(rows: List[Dict], path: Path) -> None:
    """Dev F1 per variant (mean, the seeds' spread as error bars) and F1 under noise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({rate for row in rows for run in row["runs"] for rate in run["noisy"]}, key=float)
    fig, axes = plt.subplots(1, 2 if rates else 1, figsize=(11 if rates else 6.5, 4.0), squeeze=False)
    ax = axes[0][0]
    means = [mean_spread(_f1s(row["runs"], "dev")) for row in rows]
    ax.bar(range(len(rows)), [100 * m for m, _ in means], yerr=[100 * (s or 0.0) for _, s in means], capsize=4)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row["name"] for row in rows], rotation=30, ha="right")
    ax.set_ylabel("dev F1 (%)")
    ax.set_title("WNUT-17 dev entity F1 (mean ± sd over seeds)")
    if rates:
        ax_noise = axes[0][1]
        for row in rows:
            xs, ys = [0.0], [mean_spread(_f1s(row["runs"], "dev"))[0]]
            for rate in rates:
                value = mean_spread(_f1s(row["runs"], "dev", rate))[0]
                if value is not None:
                    xs.append(float(rate))
                    ys.append(value)
            ax_noise.plot(xs, [100 * y for y in ys], marker="o", label=row["name"])
        ax_noise.set_xlabel("noise rate (words of 4+ chars attacked)")
        ax_noise.set_ylabel("F1 (%)")
        ax_noise.set_title("under character noise")
        ax_noise.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compare(args: argparse.Namespace, variants: Dict[str, Variant]) -> int:
    rows = load_rows(args.metrics_dir, args.names or list(variants))
    if not rows:
        raise SystemExit(f"variants.py: no metrics in {args.metrics_dir}/<variant>/ (train a variant first)")
    # benchmarks/speed_compare.py: the side-by-side part
    speed = (read_json(args.speed or args.metrics_dir / "speed.json") or {}).get("pipelines")
    write_report(args.output or args.metrics_dir / "compare.md", make_table(rows, speed, args.reference))
    if not args.no_plot:
        plot = args.plot or args.metrics_dir / "compare.png"
        make_plot(rows, plot)
        print(f"✔ saved {plot}")
    return 0


def _rounded(pair: Sequence[Optional[float]]) -> List[Optional[float]]:
    return [None if v is None else round(v, 4) for v in pair]


def selection_row(row: Dict, variant: Variant, rate: str) -> Dict:
    """One variant's figures for `select`: clean and noisy dev F1 and the drop, mean and
    sample spread over its seeds, and its score, the mean of clean and noisy F1."""
    runs = row["runs"]
    clean, noisy, drop = (
        mean_spread(_f1s(runs, "dev")),
        mean_spread(_f1s(runs, "dev", rate)),
        mean_spread(_drops(runs, rate)),
    )
    return {
        "name": row["name"],
        "side": variant.side,
        "char_encoder": variant.char_encoder,
        "seeds": [r["seed"] for r in runs],
        "dev_f1": _rounded(clean),
        f"dev_f1_noise{rate}": _rounded(noisy),
        f"drop_noise{rate}": _rounded(drop),
        "score": None if clean[0] is None or noisy[0] is None else round((clean[0] + noisy[0]) / 2, 4),
    }


def select(args: argparse.Namespace, variants: Dict[str, Variant]) -> int:
    """`select`: the variant to ship, by the mean of clean and noisy dev F1 over its seeds."""
    rows = {row["name"]: row for row in load_rows(args.metrics_dir, [*args.names, args.reference])}
    rate = args.noise
    candidates = []
    for name in args.names:
        row = rows.get(name)
        seeds = [] if row is None else [r for r in row["runs"] if rate in r["noisy"]]
        if len(seeds) < args.min_seeds:
            raise SystemExit(
                f"variants.py select: {name} has {len(seeds)} seed(s) with clean and noise-{rate} dev metrics in "
                f"{args.metrics_dir}/{name}/, fewer than --min-seeds {args.min_seeds} (train them with --noisy)"
            )
        candidates.append(selection_row({"name": name, "runs": seeds}, variants[name], rate))
    chosen = max(candidates, key=lambda c: c["score"])
    result = {
        "criterion": f"best mean over seeds of (clean dev F1 + dev F1 at noise {rate}) / 2",
        "noise_rate": rate,
        "min_seeds": args.min_seeds,
        "metrics_dir": str(args.metrics_dir),
        "chosen": chosen["name"],
        "side": chosen["side"],
        "char_encoder": chosen["char_encoder"],
        "candidates": candidates,
    }
    if args.reference in rows and args.reference in variants:
        result["reference"] = selection_row(rows[args.reference], variants[args.reference], rate)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")
    for c in candidates + ([result["reference"]] if "reference" in result else []):
        mark = "→" if c is chosen else " "
        print(
            f"{mark} {c['name']:<24} score {pct(c['score'])}  clean {pct(c['dev_f1'][0])}  noise {rate} {pct(c[f'dev_f1_noise{rate}'][0])}  ({len(c['seeds'])} seeds)"
        )
    print(
        f"✔ saved {args.output}: ship {chosen['name']} (side {chosen['side']}, char encoder {chosen['char_encoder']})"
    )
    return 0


def trained_pipeline(training_dir: Path, name: str, seed: int) -> Path:
    """Where `train` leaves a variant's pipeline: training/NAME/seedN/model-best."""
    return training_dir / name / f"seed{seed}" / "model-best"


def pipelines(args: argparse.Namespace, variants: Dict[str, Variant]) -> int:
    """One NAME=DIR line per variant (trained or not), for benchmarks/speed_compare.py
    --pipelines @FILE: the benchmark is told the paths, it knows no folder layout."""
    lines = [f"{name}={trained_pipeline(args.training_dir, name, args.seed)}" for name in args.names or variants]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    print(f"✔ saved {args.output} ({len(lines)} pipelines)")
    return 0


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for command in ("train", "evaluate", "train-one"):
        t = sub.add_parser(command)
        if command == "train-one":
            t.add_argument("names", nargs=1, metavar="NAME")
            t.add_argument("--output", type=Path, required=True, help="the `spacy train` output folder")
            t.add_argument("--time", type=Path, default=None, help="record the wall-clock time here (timed.py)")
            t.add_argument("--seed", type=int, default=0)
        else:
            t.add_argument("names", nargs="+")
            t.add_argument("--seeds", default="0,1,2")
            t.add_argument("--noisy", action="append", type=Path, default=[], help="a dev copy named *_noiseRATE.spacy")
            t.add_argument("--training-dir", type=Path, default=Path("training"))
            t.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
        t.add_argument("--gpu-id", type=int, default=-1)
        t.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of training and evaluation")
        t.add_argument("--corpus-dir", type=Path, default=Path("corpus"))
        t.add_argument("--char-dir", default=None, help="the char backbone of char_encoder: default variants")
        t.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a `spacy train` override for every variant (repeatable)",
        )
        t.add_argument("--dry-run", action="store_true", help="print the training commands, run nothing")
        t.add_argument("--char-encoder", default="masked", choices=ENCODERS, help="for char_encoder: default")
        t.add_argument("--max-steps", type=int, default=None, help="default: the config's")
        t.add_argument("--eval-frequency", type=int, default=None, help="default: the config's")
        t.add_argument("--n-coattention", type=int, default=None, help="default: the config's")
        t.add_argument("--force", action="store_true", help="retrain (train) / re-evaluate (evaluate) what is there")
        t.add_argument("--aug-level", type=float, default=0.5)
        t.add_argument("--aug-rate", type=float, default=0.5)
        t.add_argument("--configs-dir", type=Path, default=Path("../configs"))
        t.add_argument("--backbones-dir", type=Path, default=Path("backbones"))
        t.add_argument("--subword-dir", type=Path, default=Path("backbones/minilm"))
    c = sub.add_parser("compare")
    c.add_argument("names", nargs="*", help="variants in table order (default: all of variants.yml)")
    c.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    c.add_argument("--speed", type=Path, default=None, help="speed.json (default: METRICS_DIR/speed.json)")
    c.add_argument("--reference", default="baseline", help="the variant the noise drops are relative to")
    c.add_argument("--output", type=Path, default=None, help="default: METRICS_DIR/compare.md")
    c.add_argument("--plot", type=Path, default=None, help="default: METRICS_DIR/compare.png")
    c.add_argument("--no-plot", action="store_true")
    sel = sub.add_parser("select")
    sel.add_argument("names", nargs="+", help="the candidate variants")
    sel.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    sel.add_argument("--noise", default="0.5", help="the noise rate of the noisy dev copy (its file's suffix)")
    sel.add_argument("--min-seeds", type=int, default=3)
    sel.add_argument("--reference", default="baseline", help="also recorded, when it has metrics")
    sel.add_argument("--output", type=Path, default=Path("metrics/selection.json"))
    ps = sub.add_parser("pipelines")
    ps.add_argument("names", nargs="*", help="variants in order (default: all of variants.yml)")
    ps.add_argument("--seed", type=int, default=0)
    ps.add_argument("--training-dir", type=Path, default=Path("training"))
    ps.add_argument("--output", type=Path, required=True, help="NAME=DIR lines (speed_compare.py --pipelines @FILE)")
    for sp in (*sub.choices.values(),):
        sp.add_argument("--variants", type=Path, default=HERE / "variants.yml")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: List[str] = []
    if "--" in argv:  # extra `spacy train` overrides, passed through
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    args = parse_args(argv)
    variants = load_variants(args.variants)
    unknown = [n for n in args.names if n not in variants]
    if unknown:
        raise SystemExit(f"variants.py: no variant {unknown} in {args.variants} (known: {', '.join(variants)})")
    if args.command == "compare":
        return compare(args, variants)
    if args.command == "pipelines":
        return pipelines(args, variants)
    if args.command == "select":
        return select(args, variants)
    if args.threads:  # before torch is imported: the evaluation here and the training runs
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.command == "train-one":
        return train_one(args, variants, extra)
    return run_seeds(args, variants, extra, train=args.command == "train")


if __name__ == "__main__":
    sys.exit(main())
