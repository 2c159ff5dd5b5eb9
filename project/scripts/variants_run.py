"""The running half of scripts/variants.py: `train`, `evaluate`, `train-one` and `pipelines`.

For variant NAME and seed N, `train` runs `spacy train` (the variant's config, char encoder
and side, `--system.seed N`) into training/NAME/seedN/, records its wall-clock time in
metrics/NAME/seedN_train_time.json, then evaluates model-best: dev -> metrics/NAME/seedN_dev.json,
each noisy dev copy -> seedN_dev_noiseR.json, the test split (when corpus/test.spacy exists)
-> seedN_test.json. A seed whose outputs are all there is skipped, so an interrupted run
resumes where it stopped. Seeds run one after another: two torch jobs at once oversubscribe
a small machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import typer
from _variants import (
    ENCODERS,
    NOISE,
    VARIANTS_FILE,
    Variant,
    app,
    metrics_path,
    named_variants,
    score,
    trained_pipeline,
)
from tables import pct, read_json

TIMED = Path(__file__).resolve().parent / "timed.py"


@dataclass(frozen=True)
class TrainSettings:
    """What `train`, `evaluate` and `train-one` take from the command line for `train_command`:
    the same for every seed and variant."""

    corpus_dir: Path
    configs_dir: Path
    backbones_dir: Path
    subword_dir: Path
    char_encoder: str
    char_dir: Optional[str]
    max_steps: Optional[int]
    eval_frequency: Optional[int]
    n_coattention: Optional[int]
    gpu_id: int
    aug_level: float
    aug_rate: float
    overrides: Sequence[str]
    extra: Sequence[str]


def config_has_augmenter(path: Path) -> bool:
    """Whether the config file trains with an augmenter ([corpora.train] augmenter set); a
    missing file has none (spacy train then says it is missing)."""
    if not path.is_file():
        return False
    from thinc.api import Config

    corpus = Config().from_disk(path, interpolate=False).get("corpora", {}).get("train", {})
    return corpus.get("augmenter") is not None


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
        level = aug_level if variant.aug_level is None else variant.aug_level
        rate = aug_rate if variant.aug_rate is None else variant.aug_rate
        augmenter = {"@augmenters": "spacy-entangle.char_noise_augmenter.v1", "level": level, "rate": rate}
        cmd += ["--corpora.train.augmenter", json.dumps(augmenter)]
    elif config_has_augmenter(configs_dir / variant.config):
        # `augment` decides: a variant without it trains without the config's own augmenter
        # (configs/ner_cpu.cfg, the shipped recipe, has one)
        cmd += ["--corpora.train.augmenter", "null"]
    # the variant's own settings (variants.yml), then the command line's, which win
    cmd += [item for key, value in variant.settings for item in (f"--{key}", value)]
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or not key:
            raise SystemExit(f"variants.py: --override takes KEY=VALUE, got {override!r}")
        cmd += [f"--{key}", value]
    # the extra overrides (ENTANGLE_TRAIN_ARGS) are entangle settings: not for the baseline
    return cmd + (list(extra) if variant.is_entangle else [])


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


def run_seeds(
    names: Sequence[str],
    variants: Dict[str, Variant],
    settings: TrainSettings,
    *,
    seeds: str,
    noisy: Sequence[Path],
    training_dir: Path,
    metrics_dir: Path,
    force: bool,
    dry_run: bool,
    train: bool,
) -> int:
    """`train` and `evaluate`: every seed of every named variant, skipping what is done."""
    for corpus in noisy:
        if not corpus.exists():
            raise SystemExit(f"variants.py: {corpus} does not exist (make it with `python -m spacy_entangle perturb`)")
    sets = eval_sets(settings.corpus_dir / "dev.spacy", noisy, settings.corpus_dir / "test.spacy")
    for name in names:
        for seed in parse_seeds(seeds):
            model_dir = trained_pipeline(training_dir, name, seed).parent
            outputs = {key: metrics_path(metrics_dir, name, seed, key) for key in sets}
            time_path = metrics_path(metrics_dir, name, seed, "train_time")
            cmd = train_command(variants[name], seed, output=model_dir, **asdict(settings))
            trained = (model_dir / "model-best").exists() and (
                not train or (not force and same_command(time_path, cmd))
            )
            if not train and not trained:
                print(f"ℹ {name} seed {seed}: not trained ({model_dir}), skipped")
                continue
            # what is missing; `evaluate` also redoes the noisy copies (they may have been remade)
            todo = {
                key: sets[key]
                for key, path in outputs.items()
                if not path.exists() or force or (not train and key.startswith("dev_noise"))
            }
            if trained and not todo:
                print(f"ℹ {name} seed {seed}: trained and evaluated, skipped")
                continue
            if not trained:
                todo = dict(sets)  # a new model: every metric anew
                print(f"ℹ {name} seed {seed}: {' '.join(cmd[1:])}", flush=True)
                if dry_run:
                    continue
                for stale in (metrics_dir / name).glob(f"seed{seed}_*.json"):
                    stale.unlink()  # the metrics of a model about to be replaced
                rc = subprocess.run([sys.executable, str(TIMED), str(time_path), "--", *cmd]).returncode
                if rc != 0:
                    return rc
            if not dry_run:
                evaluate(model_dir / "model-best", todo, outputs, settings.gpu_id)
    return 0


# the `spacy train` settings of `train`, `evaluate` and `train-one` (declared once, used by each)
GPU_ID = typer.Option(-1, "--gpu-id")
THREADS = typer.Option(None, "--threads", help="OMP_NUM_THREADS of training and evaluation")
CORPUS_DIR = typer.Option(Path("corpus"), "--corpus-dir")
CHAR_DIR = typer.Option(None, "--char-dir", help="the char backbone of char_encoder: default variants")
OVERRIDE = typer.Option(
    [], "--override", metavar="KEY=VALUE", help="a `spacy train` override for every variant (repeatable)"
)
DRY_RUN = typer.Option(False, "--dry-run", help="print the training commands, run nothing")
CharEncoder = Enum("CharEncoder", {name: name for name in ENCODERS}, type=str)  # typer's choices
CHAR_ENCODER = typer.Option(
    CharEncoder("grown"), "--char-encoder", help="for char_encoder: default variants (grown: the shipped recipe)"
)
MAX_STEPS = typer.Option(None, "--max-steps", help="default: the config's")
EVAL_FREQUENCY = typer.Option(None, "--eval-frequency", help="default: the config's")
N_COATTENTION = typer.Option(None, "--n-coattention", help="default: the config's")
FORCE = typer.Option(False, "--force", help="retrain (train) / re-evaluate (evaluate) what is there")
AUG_LEVEL = typer.Option(0.5, "--aug-level")
AUG_RATE = typer.Option(0.5, "--aug-rate")
CONFIGS_DIR = typer.Option(Path("../configs"), "--configs-dir")
BACKBONES_DIR = typer.Option(Path("backbones"), "--backbones-dir")
SUBWORD_DIR = typer.Option(Path("backbones/minilm"), "--subword-dir")


def _seeds_command(train: bool) -> Callable[..., None]:
    """`train` or `evaluate`: the same options, the same loop over variants and seeds."""

    def command(
        ctx: typer.Context,
        names: List[str] = typer.Argument(..., help="the variants (of variants.yml)"),
        seeds: str = typer.Option("0,1,2", "--seeds", help="comma-separated"),
        noisy: List[Path] = typer.Option([], "--noisy", help="a dev copy named *_noiseRATE.spacy (repeatable)"),
        training_dir: Path = typer.Option(Path("training"), "--training-dir"),
        metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir"),
        gpu_id: int = GPU_ID,
        threads: Optional[int] = THREADS,
        corpus_dir: Path = CORPUS_DIR,
        char_dir: Optional[str] = CHAR_DIR,
        override: List[str] = OVERRIDE,
        dry_run: bool = DRY_RUN,
        char_encoder: CharEncoder = CHAR_ENCODER,
        max_steps: Optional[int] = MAX_STEPS,
        eval_frequency: Optional[int] = EVAL_FREQUENCY,
        n_coattention: Optional[int] = N_COATTENTION,
        force: bool = FORCE,
        aug_level: float = AUG_LEVEL,
        aug_rate: float = AUG_RATE,
        configs_dir: Path = CONFIGS_DIR,
        backbones_dir: Path = BACKBONES_DIR,
        subword_dir: Path = SUBWORD_DIR,
        variants_file: Path = VARIANTS_FILE,
    ) -> None:
        variants = named_variants(variants_file, names)
        if threads:  # before torch is imported: the evaluation here and the training runs
            os.environ["OMP_NUM_THREADS"] = str(threads)
        settings = TrainSettings(
            corpus_dir=corpus_dir,
            configs_dir=configs_dir,
            backbones_dir=backbones_dir,
            subword_dir=subword_dir,
            char_encoder=char_encoder.value,
            char_dir=char_dir,
            max_steps=max_steps,
            eval_frequency=eval_frequency,
            n_coattention=n_coattention,
            gpu_id=gpu_id,
            aug_level=aug_level,
            aug_rate=aug_rate,
            overrides=override,
            extra=ctx.obj or [],
        )
        rc = run_seeds(
            names,
            variants,
            settings,
            seeds=seeds,
            noisy=noisy,
            training_dir=training_dir,
            metrics_dir=metrics_dir,
            force=force,
            dry_run=dry_run,
            train=train,
        )
        if rc:
            raise typer.Exit(code=rc)

    return command


app.command(
    "train",
    help="Train each seed of each variant (`spacy train`, timed), then evaluate it on dev, the noisy dev "
    "copies and test; a seed trained by the same command and evaluated is skipped (--force: retrain). "
    "Arguments after `--` go to the entangle variants' `spacy train`.",
)(_seeds_command(train=True))
app.command(
    "evaluate",
    help="Evaluate the trained seeds on the noisy dev copies (again: they may have been remade) and on "
    "dev/test where their metrics are missing (--force: all of them).",
)(_seeds_command(train=False))


def curve_overrides(curve: Optional[Path], extra_dev: Sequence[str], patience: Optional[int]) -> List[str]:
    """The `spacy train` overrides (KEY=VALUE) of a learning-curve run: the curve logger in
    place of the console logger, and the patience."""
    out = [f"training.patience={patience}"] if patience is not None else []
    if curve is None:
        if extra_dev:
            raise SystemExit("variants.py: --extra-dev needs --curve")
        return out
    sets = {}
    for item in extra_dev:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise SystemExit(f"variants.py: --extra-dev takes NAME=PATH, got {item!r}")
        sets[key] = value
    return out + [
        "training.logger.@loggers=spacy-entangle.CurveLogger.v1",
        f"training.logger.path={curve}",
        f"training.logger.extra_dev={json.dumps(sets)}",
    ]


# under a curve run's --output: the optimizer's state at its last evaluations (a run stopped
# before its end continues with --resume) and the model-last a resumed run started from
OPTIMIZER_STATES = "optimizer"
RESUMED = "resumed"


def _config_training(config: Path, key: str) -> Optional[int]:
    """An integer of the config's [training] section (eval_frequency, max_steps), None when
    it is not one."""
    from thinc.api import Config

    value = Config().from_disk(config, interpolate=False).get("training", {}).get(key)
    return value if isinstance(value, int) else None


def resumable_overrides(output: Path, eval_frequency: int) -> List[str]:
    """A curve run's optimizer: thinc's Adam with the config's settings that also saves its
    state beside each of spaCy's evaluations (spacy-entangle.ResumableAdam.v1), so that a run
    stopped before its end can continue (--resume)."""
    return [
        "training.optimizer.@optimizers=spacy-entangle.ResumableAdam.v1",
        f"training.optimizer.state_dir={output / OPTIMIZER_STATES}",
        f"training.optimizer.save_every={eval_frequency}",
    ]


# under RESUMED: the best checkpoint of the loops before the last resume (`spacy train` empties
# model-best at its start, so a resumed loop would otherwise forget a best reached before it)
EARLIER_BEST = "model-best"


def checkpoint_score(model: Path) -> float:
    """The weighted dev score spaCy chose a model-best by: its meta's performance under the
    score weights of its own config."""
    from thinc.api import Config

    weights = Config().from_disk(model / "config.cfg", interpolate=False)["training"]["score_weights"]
    performance = json.loads((model / "meta.json").read_text(encoding="utf8")).get("performance", {})
    return sum(float(performance.get(key) or 0.0) * weight for key, weight in weights.items() if weight)


def _keep_better(source: Path, target: Path) -> bool:
    """Of two checkpoints, the better by ``checkpoint_score`` ends at ``target`` and ``source``
    is gone (a missing one loses); True when ``source`` moved there."""
    if not source.exists():
        return False
    if target.exists() and checkpoint_score(target) >= checkpoint_score(source):
        shutil.rmtree(source)
        return False
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), str(target))
    return True


def keep_best(output: Path) -> None:
    """Before a resumed loop starts: the better of the interrupted loop's model-best and the one
    kept from earlier loops goes under RESUMED, out of `spacy train`'s way."""
    _keep_better(output / "model-best", output / RESUMED / EARLIER_BEST)


def restore_best(output: Path) -> None:
    """After a resumed run's end: model-best is the best checkpoint of all its loops, the best
    dev evaluation a curve reports."""
    if _keep_better(output / RESUMED / EARLIER_BEST, output / "model-best"):
        best = output / "model-best"
        print(f"✔ {best}: the best checkpoint of an earlier loop of this run ({pct(checkpoint_score(best), 2)})")


def finished(output: Path) -> bool:
    """A curve run that ran to its end: train-one clears the resume state after it."""
    return not (output / OPTIMIZER_STATES).exists() and (output / "model-best").exists()


def score_final(output: Path, curve: Path, max_steps: int, extra_dev: Sequence[str]) -> None:
    """Append the point of the final weights (model-last) to the curve of a run whose last step
    was not an evaluation: a resumed run's, whose loop counts its evaluations from the step it
    resumed at (spacy_entangle.training.final_point says why and what is extrapolated)."""
    import spacy

    from spacy_entangle.training.curve import final_point, read_curve

    points = read_curve(curve) if curve.exists() else []
    if not points or int(points[-1]["step"]) >= max_steps or not (output / "model-last").exists():
        return
    sets = {name: Path(path) for name, _, path in (item.partition("=") for item in extra_dev)}
    point = final_point(spacy.load(output / "model-last"), points, max_steps, sets)
    with curve.open("a", encoding="utf8") as stream:
        stream.write(json.dumps(point) + "\n")
    print(f"✔ the final weights (step {max_steps}), unscored by the resumed loop: {pct(point['score'], 2)} -> {curve}")


def resume_overrides(
    output: Path, curve: Path, max_steps: int, dry_run: bool = False
) -> Optional[Tuple[List[str], int]]:
    """The overrides that continue a curve run after the last point of its curve file: the
    weights of the model-last saved at that step (moved out of spaCy's way: `spacy train`
    empties its output folder), the optimizer's state of the same step, the curve kept and
    counted on, and the steps left of the schedule; with the step resumed at. None for a run
    that never wrote a point (it starts from the beginning); a finished run exits here."""
    from spacy_entangle.training.curve import read_curve
    from spacy_entangle.training.resume import state_path

    points = read_curve(curve) if curve.exists() else []
    if not points:
        print(f"ℹ --resume: {curve} has no point yet: training from the start", flush=True)
        return None
    last = int(points[-1]["step"])
    state = state_path(output / OPTIMIZER_STATES, last)
    if not (state / "state.json").exists():
        if finished(output):
            print(f"ℹ --resume: {output} finished (its curve ends at step {last}): nothing to resume", flush=True)
            raise typer.Exit(code=0)
        raise SystemExit(
            f"variants.py: --resume: no optimizer state for step {last} in {state.parent} (a run trained without "
            "the resumable optimizer, or stopped before it saved one); train without --resume to start again"
        )
    start = last + 1
    if start >= max_steps:
        raise SystemExit(f"variants.py: --resume: the curve already reaches step {last} of {max_steps}")
    weights = output / RESUMED / f"step-{last}"
    if not dry_run:
        if not weights.exists():
            if not (output / "model-last").exists():
                raise SystemExit(f"variants.py: --resume: no model-last in {output} to continue from")
            weights.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(output / "model-last"), str(weights))
        keep_best(output)
        for older in weights.parent.glob("step-*"):  # the weights of an earlier resume
            if older != weights:
                shutil.rmtree(older, ignore_errors=True)
    callback = {"@callbacks": "spacy-entangle.resume_weights.v1", "path": str(weights)}
    overrides = [
        f"training.optimizer.resume_from={state}",
        f"training.logger.start_step={start}",
        f"initialize.after_init={json.dumps(callback)}",
        f"training.max_steps={max_steps - start}",
    ]
    return overrides, start


@app.command("train-one")
def train_one(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="the variant (of --variants)"),
    output: Path = typer.Option(..., "--output", help="the `spacy train` output folder"),
    time: Optional[Path] = typer.Option(None, "--time", help="record the wall-clock time here (timed.py)"),
    seed: int = typer.Option(0, "--seed"),
    gpu_id: int = GPU_ID,
    threads: Optional[int] = THREADS,
    corpus_dir: Path = CORPUS_DIR,
    char_dir: Optional[str] = CHAR_DIR,
    override: List[str] = OVERRIDE,
    dry_run: bool = DRY_RUN,
    char_encoder: CharEncoder = CHAR_ENCODER,
    max_steps: Optional[int] = MAX_STEPS,
    eval_frequency: Optional[int] = EVAL_FREQUENCY,
    n_coattention: Optional[int] = N_COATTENTION,
    aug_level: float = AUG_LEVEL,
    aug_rate: float = AUG_RATE,
    configs_dir: Path = CONFIGS_DIR,
    backbones_dir: Path = BACKBONES_DIR,
    subword_dir: Path = SUBWORD_DIR,
    variants_file: Path = VARIANTS_FILE,
    curve: Optional[Path] = typer.Option(
        None, "--curve", help="write a learning curve here (JSON lines; spacy-entangle.CurveLogger.v1)"
    ),
    extra_dev: List[str] = typer.Option(
        [], "--extra-dev", metavar="NAME=PATH", help="with --curve: a corpus scored at each evaluation (repeatable)"
    ),
    patience: Optional[int] = typer.Option(
        None, "--patience", help="stop after this many steps without a better dev score (default: the config's)"
    ),
    resume: str = typer.Option(
        "no",
        "--resume",
        help="yes: with --curve, continue a run stopped before its end after the curve's last point "
        "(its model-last and optimizer state), skip one that finished, start one that never wrote a "
        "point; no (default): train from the start",
    ),
) -> None:
    """Train one variant, one seed, into --output (timed into --time when given), no evaluation:
    the task projects read their own variants.yml with it and evaluate with their own scripts.
    With --curve, every evaluation also scores the --extra-dev corpora and appends one point
    (steps, passes, CPU seconds, scores) to the curve file, and the optimizer saves its state
    beside each evaluation, so that `--resume yes` can continue a run stopped before its end
    (spaCy's patience then counts from the resumed run's first evaluation, and the data
    order restarts with the seed's first shuffle)."""
    variants = named_variants(variants_file, [name])
    if resume not in ("yes", "no"):
        raise SystemExit(f"variants.py: --resume takes yes or no, got {resume!r}")
    if resume == "yes" and curve is None:
        raise SystemExit("variants.py: --resume continues a curve run: it needs --curve")
    if threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    override = list(override) + curve_overrides(curve, extra_dev, patience)
    config = configs_dir / variants[name].config
    if curve is not None:
        # the optimizer saves where spaCy evaluates: the frequency the run will have
        given = [o.partition("=")[2] for o in override if o.startswith("training.eval_frequency=")]
        frequency = int(given[-1]) if given else eval_frequency or _config_training(config, "eval_frequency") or 200
        override += resumable_overrides(output, frequency)
    total = (max_steps or _config_training(config, "max_steps")) if curve is not None else None
    if resume == "yes" and curve is not None:
        if not total:
            raise SystemExit("variants.py: --resume needs the run's --max-steps (the config has none)")
        if finished(output) and not dry_run:  # one trained before the final point was scored
            score_final(output, curve, total, extra_dev)
            restore_best(output)
        resumed = resume_overrides(output, curve, total, dry_run)
        if resumed is not None:
            override += resumed[0]
            if time is not None:  # the interrupted part's time stays where it was
                time = time.with_name(f"{time.stem}_from{resumed[1]}{time.suffix}")
    settings = TrainSettings(
        corpus_dir=corpus_dir,
        configs_dir=configs_dir,
        backbones_dir=backbones_dir,
        subword_dir=subword_dir,
        char_encoder=char_encoder.value,
        char_dir=char_dir,
        max_steps=max_steps,
        eval_frequency=eval_frequency,
        n_coattention=n_coattention,
        gpu_id=gpu_id,
        aug_level=aug_level,
        aug_rate=aug_rate,
        overrides=override,
        extra=ctx.obj or [],
    )
    cmd = train_command(variants[name], seed, output=output, **asdict(settings))
    print(f"ℹ {name}: {' '.join(cmd[1:])}", flush=True)
    if dry_run:
        return
    if time is not None:
        cmd = [sys.executable, str(TIMED), str(time), "--", *cmd]
    rc = subprocess.run(cmd).returncode
    if rc:
        raise typer.Exit(code=rc)
    waited = patience if patience is not None else _config_training(config, "patience")
    if curve is not None and total and (not waited or waited >= total):  # patience cannot have ended it
        score_final(output, curve, total, extra_dev)
    restore_best(output)
    for done in (output / OPTIMIZER_STATES, output / RESUMED):  # a finished run continues no more
        shutil.rmtree(done, ignore_errors=True)


@app.command("pipelines")
def pipelines(
    names: Optional[List[str]] = typer.Argument(None, help="variants in order (default: all of variants.yml)"),
    seed: int = typer.Option(0, "--seed"),
    training_dir: Path = typer.Option(Path("training"), "--training-dir"),
    output: Path = typer.Option(..., "--output", help="NAME=DIR lines (speed_compare.py --pipelines @FILE)"),
    variants_file: Path = VARIANTS_FILE,
) -> None:
    """One NAME=DIR line per variant (trained or not), for research/benchmarks/speed_compare.py
    --pipelines @FILE: the benchmark is told the paths, it knows no folder layout."""
    variants = named_variants(variants_file, names or [])
    lines = [f"{name}={trained_pipeline(training_dir, name, seed)}" for name in names or variants]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    print(f"✔ saved {output} ({len(lines)} pipelines)")
