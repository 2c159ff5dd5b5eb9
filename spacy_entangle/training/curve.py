"""A learning curve from `spacy train`: the logger ``spacy-entangle.CurveLogger.v1``.

Why a logger: spaCy's loop evaluates one dev corpus and keeps the best checkpoint, which is
what a curve needs, but it neither scores other dev sets (a noisy copy of dev, a second
domain) nor records the cost of each point. This logger prints what spaCy's console logger
prints and, at every evaluation, scores the pipeline as it stands on each extra corpus and
appends one JSON line: step, passes over the training words, wall and CPU seconds of training
(its own extra evaluations excluded), the dev scores spaCy computed and the extra corpora's.

A run resumed from an interrupted one (``start_step``, with ``spacy-entangle.ResumableAdam.v1``)
appends to the interrupted run's curve: its steps, words and seconds continue from the last
point written.

The pipeline is scored with the weights it is trained with. spaCy evaluates with the
optimizer's parameter averages when ``use_averages`` is on, which a logger cannot reach, so
that setting is refused rather than giving two dev sets two different models.
"""

import json
import sys
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, List, Optional, Tuple, cast

from spacy.language import Language
from spacy.tokens import DocBin
from spacy.training import Corpus
from spacy.training.loggers import console_logger
from spacy.training.loop import create_evaluation_callback
from spacy.util import dot_to_object, registry
from thinc.api import Config

LogStep = Callable[[Optional[Dict[str, Any]]], None]


def _floats(scores: Dict[str, Any]) -> Dict[str, Any]:
    """The scores worth a curve point: numbers and per-label tables, not speed (which the
    machine's load decides) or None."""
    return {k: v for k, v in scores.items() if v is not None and k != "speed" and isinstance(v, (int, float, dict))}


def count_words(path: Path) -> int:
    """Tokens in a .spacy corpus, read without a pipeline (the denominator of ``passes``)."""
    from spacy.vocab import Vocab

    return sum(len(doc) for doc in DocBin().from_disk(path).get_docs(Vocab()))


def _block(config: Dict[str, Any], dot_name: str) -> Dict[str, Any]:
    """The config block a dot name such as ``corpora.dev`` names ({} where there is none)."""
    try:
        section = dot_to_object(cast(Config, config), dot_name)  # spaCy's own walk of a dot name
    except KeyError:
        return {}
    return section if isinstance(section, dict) else {}


def _dev_reader_settings(config: Dict[str, Any]) -> Dict[str, Any]:
    """The dev reader's own settings (gold_preproc, max_length), so that an extra corpus is
    read the way dev is: Tweebank scores UD's own tokens, a noisy copy must too."""
    section = _block(config, config["training"]["dev_corpus"])
    return {key: section[key] for key in ("gold_preproc", "max_length") if key in section}


class CurveRecorder:
    """Scores the extra corpora at each evaluation and writes one JSON line per point."""

    def __init__(
        self,
        nlp: Language,
        path: Path,
        extra_dev: Dict[str, Path],
        train_words: Optional[int],
        reader_settings: Dict[str, Any],
        start_step: int = 0,
    ) -> None:
        self.nlp = nlp
        self.path = path
        self.corpora = {name: Corpus(p, **reader_settings) for name, p in extra_dev.items()}
        self.train_words = train_words
        self.extra_wall = 0.0
        self.extra_cpu = 0.0
        self.cpu_start = time.process_time()
        kept = resumed_points(path, start_step)
        last = kept[-1] if kept else {}
        # a resumed run counts on from the interrupted run's last point
        self.start_step = start_step
        self.offsets = {key: last.get(key) or 0 for key in ("epoch", "words", "seconds", "cpu_seconds")}
        path.parent.mkdir(parents=True, exist_ok=True)
        self.stream: IO[str] = path.open("w", encoding="utf8")
        for point in kept:
            self.stream.write(json.dumps(point) + "\n")
        self.stream.flush()

    def record(self, info: Dict[str, Any]) -> Dict[str, Any]:
        # spaCy's clock stopped before this point's extra evaluations: take out the earlier ones
        seconds = float(info["seconds"]) - self.extra_wall
        wall, cpu = time.perf_counter(), time.process_time()
        extra = {name: _floats(self.nlp.evaluate(list(corpus(self.nlp)))) for name, corpus in self.corpora.items()}
        self.extra_wall += time.perf_counter() - wall
        self.extra_cpu += time.process_time() - cpu
        words = int(info.get("words", 0)) + int(self.offsets["words"])
        cpu = time.process_time() - self.cpu_start - self.extra_cpu
        point = {
            "step": int(info["step"]) + self.start_step,
            "epoch": int(info["epoch"]) + int(self.offsets["epoch"]),
            "words": words,
            "passes": round(words / self.train_words, 4) if self.train_words else None,
            # spaCy's own clock counts its dev evaluations; ours are taken out
            "seconds": round(max(0.0, seconds) + self.offsets["seconds"], 1),
            "cpu_seconds": round(cpu + self.offsets["cpu_seconds"], 1),
            "score": info["score"],
            "losses": {k: round(float(v), 4) for k, v in info.get("losses", {}).items()},
            "scores": {"dev": _floats(info.get("other_scores") or {}), **extra},
        }
        self.stream.write(json.dumps(point) + "\n")
        self.stream.flush()
        return point

    def close(self) -> None:
        self.stream.close()


@registry.loggers("spacy-entangle.CurveLogger.v1")
def curve_logger(
    path: str,
    extra_dev: Dict[str, str] = {},  # noqa: B006 (never mutated; init fill-config writes the default out)
    train_words: Optional[int] = None,
    progress_bar: bool = False,
    console_output: bool = True,
    start_step: int = 0,
) -> Callable[[Language, IO, IO], Tuple[LogStep, Callable[[], None]]]:
    """Log like spaCy's ConsoleLogger and write the learning curve to ``path``: at each
    evaluation, one JSON line with the step, the passes over the training words, the wall
    and CPU seconds of training (its own extra evaluations excluded), the dev scores spaCy
    computed and those of each extra corpus, which spaCy's loop does not score. Returns
    the logger's setup function, as spaCy's loggers do. The pipeline is scored with the
    weights being trained, so ``[training.optimizer] use_averages = true`` is refused.

    path (str): the curve file, one JSON object per evaluation (overwritten at the start,
        its folder made).
    extra_dev (Dict[str, str]): name -> .spacy corpus scored at each evaluation besides dev,
        read with the dev reader's gold_preproc and max_length (e.g. a noisy copy of dev);
        a path that does not exist is refused at once. Default {}: none.
    train_words (Optional[int]): the training corpus's words, the denominator of
        ``passes``; None (default) counts the tokens of [corpora.train]'s path when it is
        a .spacy file, else ``passes`` is null.
    progress_bar (bool): as spaCy's ConsoleLogger's: a progress bar of the steps until the next
        evaluation; default false.
    console_output (bool): print spaCy's table too; default true. The line with the extra
        corpora's scores is printed either way.
    start_step (int): 0 (default) starts a new curve. For a run resumed after step N of an
        interrupted one (``spacy-entangle.ResumableAdam.v1``'s ``resume_from``), N + 1: the
        points up to step N are kept and this run's steps, words, epochs and seconds count on
        from them; the file must end at step N.
    """
    console = console_logger(progress_bar=progress_bar, console_output=console_output)
    missing = [str(p) for p in extra_dev.values() if not Path(p).exists()]
    if missing:
        raise ValueError(f"CurveLogger: extra_dev corpus not found: {', '.join(missing)}")

    def setup(nlp: Language, stdout: IO = sys.stdout, stderr: IO = sys.stderr) -> Tuple[LogStep, Callable[[], None]]:
        config = nlp.config.interpolate()
        if config["training"]["optimizer"].get("use_averages"):
            raise ValueError(
                "CurveLogger scores the weights being trained; with use_averages = true spaCy scores "
                "dev with the averages instead. Set [training.optimizer] use_averages = false."
            )
        words = train_words
        if words is None:
            train_path = _corpus_path(config, config["training"]["train_corpus"])
            words = count_words(train_path) if train_path is not None else None
        recorder = CurveRecorder(
            nlp,
            Path(path),
            {k: Path(v) for k, v in extra_dev.items()},
            words,
            _dev_reader_settings(config),
            start_step=start_step,
        )
        log_console, finalize_console = console(nlp, stdout, stderr)
        weighted = [k for k, w in config["training"]["score_weights"].items() if w]

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            log_console(info)
            if info is not None:
                point = recorder.record(info)
                extra = ", ".join(
                    f"{name} {_main(scores, weighted)}" for name, scores in point["scores"].items() if name != "dev"
                )
                if extra:
                    print(f"  curve @ step {point['step']}: {extra}", file=stdout, flush=True)

        def finalize() -> None:
            finalize_console()
            recorder.close()

        return log_step, finalize

    return setup


# the fields of a final point that a loaded pipeline cannot know (a logger measures them)
EXTRAPOLATED = ("epoch", "words", "passes", "seconds", "cpu_seconds")


def final_point(nlp: Language, points: List[Dict[str, Any]], step: int, extra_dev: Dict[str, Path]) -> Dict[str, Any]:
    """The curve point of a run's final weights (``nlp``, e.g. its model-last), for a run whose
    last step was not an evaluation. Why: spaCy's loop evaluates every ``eval_frequency`` steps
    of its own count, and a resumed loop's count starts one step after the interrupted run's
    last evaluation, so the end of the schedule, where the learning rate reaches 0, would go
    unscored. Dev (the config's dev corpus and score weights, as spaCy's loop scores it) and
    each ``extra_dev`` corpus (read as dev is) are scored as at an evaluation. What only the
    training loop measures is extrapolated at the curve's mean rate per step, first point to last
    (a rate over two neighbouring points can span a resume's start-up), the epoch kept; those
    fields are named under ``extrapolated``, and the losses are not known."""
    if not points:
        raise ValueError("final_point: the curve has no point to count on from")
    last = points[-1]
    if step <= int(last["step"]):
        raise ValueError(f"final_point: step {step} is not after the curve's last point ({last['step']})")
    config = nlp.config.interpolate()
    # the dev reader alone: resolving its whole section would need the train corpus's path too
    dev = registry.resolve({"reader": dot_to_object(config, config["training"]["dev_corpus"])})["reader"]
    score, scores = create_evaluation_callback(nlp, dev, config["training"]["score_weights"])()
    reader = _dev_reader_settings(config)
    extra = {name: _floats(nlp.evaluate(list(Corpus(p, **reader)(nlp)))) for name, p in extra_dev.items()}
    first = points[0] if len(points) > 1 else None

    def at_step(key: str) -> Optional[float]:
        value = last.get(key)
        if value is None or first is None or first.get(key) is None:
            return value
        rate = (value - first[key]) / (int(last["step"]) - int(first["step"]))
        return value + rate * (step - int(last["step"]))

    words, seconds, cpu = at_step("words"), at_step("seconds"), at_step("cpu_seconds")
    per_pass = last["words"] / last["passes"] if last.get("passes") and last.get("words") else None
    return {
        "step": step,
        "epoch": last.get("epoch"),
        "words": None if words is None else int(words),
        "passes": round(words / per_pass, 4) if words is not None and per_pass else None,
        "seconds": None if seconds is None else round(seconds, 1),
        "cpu_seconds": None if cpu is None else round(cpu, 1),
        "score": score,
        "losses": {},
        "scores": {"dev": _floats(scores), **extra},
        "final": True,
        "extrapolated": list(EXTRAPOLATED),
    }


def _main(scores: Dict[str, Any], weighted: List[str]) -> str:
    """The extra corpus's figures under the keys that make spaCy's score."""
    shown = [f"{k}={scores[k]:.4f}" for k in weighted if isinstance(scores.get(k), float)]
    return " ".join(shown) or "-"


def _corpus_path(config: Dict[str, Any], dot_name: str) -> Optional[Path]:
    path = _block(config, dot_name).get("path")
    if path and Path(path).suffix == ".spacy" and Path(path).exists():
        return Path(path)
    return None


def resumed_points(path: Path, start_step: int) -> List[Dict[str, Any]]:
    """The points a run resumed at ``start_step`` keeps: none for a new curve (0); else the
    file's points, which must end at step ``start_step - 1`` (the step resumed from)."""
    if start_step < 0:
        raise ValueError(f"CurveLogger: start_step must be 0 or more, got {start_step}")
    if not start_step:
        return []
    if not path.exists():
        raise ValueError(f"CurveLogger: start_step = {start_step} resumes the curve {path}, which does not exist")
    points = read_curve(path)
    if not points or points[-1]["step"] != start_step - 1:
        last = points[-1]["step"] if points else "no point"
        raise ValueError(
            f"CurveLogger: start_step = {start_step} resumes after step {start_step - 1}, but {path} ends at "
            f"step {last}: resume from the last point written"
        )
    return points


def read_curve(path: Path) -> List[Dict[str, Any]]:
    """The points of a curve file, in step order."""
    lines: Iterable[str] = path.read_text(encoding="utf8").splitlines()
    return sorted((json.loads(line) for line in lines if line.strip()), key=lambda p: p["step"])
