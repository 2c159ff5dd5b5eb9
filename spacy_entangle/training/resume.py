"""Resuming an interrupted `spacy train`: the optimizer ``spacy-entangle.ResumableAdam.v1`` and
the callback ``spacy-entangle.resume_weights.v1``.

Why: spaCy's loop saves the weights at every evaluation (``model-last``) but not the optimizer:
Adam's two moments, each parameter's update count (its bias correction) and the position in
the learning-rate schedule. A run restarted from ``model-last`` with a fresh optimizer warms up
again from a zero learning rate and a new schedule, so a long CPU run (a learning curve to
thousands of steps outlives a working session) could not be continued, only redone. This
optimizer is thinc's Adam (the same settings, the same updates) that also writes its state
beside each evaluation and reads it back to continue; the callback loads ``model-last``'s
weights into the freshly initialised pipeline.

The state is keyed by the order in which parameters first reach the optimizer, not by thinc's
node ids (a counter that depends on what the process built before), and each parameter's name
and size are checked on the way back in. At every step whose state is saved the optimizer also
records a checksum of each parameter's updated weights, and on resume compares it with the
weights the pipeline starts from: a ``model-last`` from another step than the state (a run
killed between the two saves, a folder from another run) is refused, never silently mixed.

What a resume does not restore: the order of the training data (spaCy's batches restart with
the seed's first shuffle) and the random streams of dropout and the augmenter. A resumed run
continues the same optimisation, not the same run bit for bit.
"""

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import numpy
from spacy.language import Language
from spacy.util import registry
from thinc.backends import get_array_ops
from thinc.optimizers import ADAM_DEFAULTS, FloatOrSeq, KeyT, Optimizer
from thinc.types import FloatsXd

# thinc's Adam defaults, typed as the settings they are
_ADAM: Dict[str, float] = {key: cast(float, value) for key, value in ADAM_DEFAULTS.items()}
STATE_PREFIX = "step-"
_META = "state.json"
_ARRAYS = "moments.npz"


def _checksum(weights: FloatsXd) -> Tuple[float, float]:
    """Sum and sum of squares in float64: equal for the same float32 values read back from
    disk, different for weights from another step (a shifted sum, or a moved norm)."""
    flat = numpy.asarray(get_array_ops(weights).to_numpy(weights), dtype="float64").ravel()
    return float(flat.sum()), float(numpy.dot(flat, flat))


def _close(a: Tuple[float, float], b: Tuple[float, float]) -> bool:
    # the same values summed on another device may round differently in the last bits
    return all(abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y)) for x, y in zip(a, b))


def state_dirs(root: Path) -> List[Path]:
    """The saved states under ``root``, oldest first (by step)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(STATE_PREFIX) and (p / _META).exists()]
    return sorted(found, key=lambda p: int(p.name[len(STATE_PREFIX) :]))


def state_path(root: Path, step: int) -> Path:
    """Where the state after step ``step`` (spaCy's step index, counted from the run's start) lives."""
    return root / f"{STATE_PREFIX}{step}"


class ResumableOptimizer(Optimizer):
    """thinc's Optimizer (Adam here) that saves its state every ``save_every`` steps of this
    process (spaCy's evaluation steps when it equals ``[training] eval_frequency``) and can
    start from a saved state. See the module docstring for what it keeps and checks."""

    __slots__ = [
        "_state_dir",
        "_save_every",
        "_keep",
        "_offset",
        "_local_steps",
        "_order",
        "_index",
        "_sums",
        "_pending",
        "_pending_arrays",
    ]

    def __init__(
        self,
        learn_rate: FloatOrSeq,
        *,
        state_dir: Optional[Path],
        save_every: int,
        keep: int = 2,
        **settings: Any,
    ) -> None:
        super().__init__(learn_rate, **settings)
        if save_every < 1:
            raise ValueError(f"ResumableAdam: save_every must be at least 1, got {save_every}")
        if keep < 1:
            raise ValueError(f"ResumableAdam: keep must be at least 1, got {keep}")
        if self.averages is not None:
            # spaCy saves model-last with the averages in place of the weights: what a resume
            # would start from is then not what the optimizer was updating
            raise ValueError(
                "ResumableAdam needs use_averages = false: with averages spaCy saves them as model-last, "
                "not the weights being trained, so a resume could not start from them."
            )
        self._state_dir = Path(state_dir) if state_dir else None
        self._save_every = save_every
        self._keep = keep
        self._offset = 0  # spaCy's step index of this process's first step
        self._local_steps = 0
        self._order: List[KeyT] = []
        self._index: Dict[KeyT, int] = {}
        self._sums: Dict[int, Tuple[float, float]] = {}
        self._pending: Optional[Dict[str, Any]] = None
        self._pending_arrays: Any = None

    # ------------------------------------------------------------------ the update

    def __call__(
        self, key: KeyT, weights: FloatsXd, gradient: FloatsXd, *, lr_scale: float = 1.0
    ) -> Tuple[FloatsXd, FloatsXd]:
        if key not in self._index:
            self._index[key] = len(self._order)
            self._order.append(key)
            if self._pending is not None:
                self._restore(key, weights)
        weights, gradient = super().__call__(key, weights, gradient, lr_scale=lr_scale)
        if self._state_dir is not None and self._saves_this_step():
            self._sums[self._index[key]] = _checksum(weights)
        return weights, gradient

    def step_schedules(self) -> None:
        super().step_schedules()
        saving = self._saves_this_step()
        self._local_steps += 1
        if saving and self._state_dir is not None:
            self.save(self._state_dir, self._offset + self._local_steps - 1)
        if self._pending is not None and self._local_steps == 1:
            missing = len(self._pending["params"]) - len(self._order)
            if missing > 0:
                raise ValueError(
                    f"ResumableAdam: the saved state has {missing} more parameters than this pipeline updated "
                    "in its first step: it is from another pipeline or config."
                )
            self._pending, self._pending_arrays = None, None
        self._sums = {}

    def _saves_this_step(self) -> bool:
        # spaCy evaluates (and saves model-last) at its steps 0, N, 2N, ... of this process
        return self._local_steps % self._save_every == 0

    # ------------------------------------------------------------------ save and load

    def save(self, root: Path, step: int) -> Path:
        """Write the state after spaCy's step ``step`` to ``root/step-N`` (atomically: a
        folder renamed into place) and keep the ``keep`` newest."""
        ops_arrays: Dict[str, numpy.ndarray] = {}
        params = []
        for i, key in enumerate(self._order):
            entry: Dict[str, Any] = {"name": str(key[1]), "nr_update": int(self.nr_update.get(key, 0))}
            for moment, table in (("mom1", self.mom1), ("mom2", self.mom2)):
                if key in table:
                    array = get_array_ops(table[key]).to_numpy(table[key])
                    ops_arrays[f"{moment}_{i}"] = numpy.asarray(array, dtype="float32")
                    entry["size"] = int(array.size)
            if i in self._sums:
                entry["checksum"] = list(self._sums[i])
            params.append(entry)
        meta = {
            "step": step,
            "schedule_steps": step + 1,
            "learn_rate": float(self.learn_rate),
            "params": params,
        }
        root.mkdir(parents=True, exist_ok=True)
        final = state_path(root, step)
        tmp = root / f".{final.name}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        # numpy's stubs type **kwds as the allow_pickle flag
        numpy.savez(tmp / _ARRAYS, **ops_arrays)  # type: ignore[arg-type]
        (tmp / _META).write_text(json.dumps(meta), encoding="utf8")
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        for old in state_dirs(root)[: -self._keep]:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def resume_from(self, path: Path) -> None:
        """Start from the state saved in ``path`` (a ``step-N`` folder): the schedules move on
        to where they were; each parameter's moments and update count come back when it first
        reaches the optimizer, after its weights are checked against the saved checksum."""
        meta_path = path / _META
        if not meta_path.exists():
            raise ValueError(f"ResumableAdam: no optimizer state at {path} (expected {_META} there)")
        meta = json.loads(meta_path.read_text(encoding="utf8"))
        for _ in range(int(meta["schedule_steps"])):
            super().step_schedules()
        self._offset = int(meta["step"]) + 1
        self._pending = meta
        self._pending_arrays = numpy.load(path / _ARRAYS)

    def _restore(self, key: KeyT, weights: FloatsXd) -> None:
        assert self._pending is not None
        i = self._index[key]
        params = self._pending["params"]
        if i >= len(params):
            raise ValueError(
                f"ResumableAdam: this pipeline has more parameters than the saved state ({len(params)}): "
                "it is from another pipeline or config."
            )
        saved = params[i]
        if saved["name"] != str(key[1]) or saved.get("size", weights.size) != weights.size:
            raise ValueError(
                f"ResumableAdam: parameter {i} is {key[1]!r} of size {weights.size} here and "
                f"{saved['name']!r} of size {saved.get('size')} in the saved state: another pipeline or config."
            )
        if "checksum" in saved and not _close(_checksum(weights), tuple(saved["checksum"])):
            raise ValueError(
                f"ResumableAdam: the weights this run starts from are not those the optimizer state of step "
                f"{self._pending['step']} was saved with (parameter {key[1]!r} differs): resume from the "
                "model-last written at that same step."
            )
        ops = get_array_ops(weights)
        for moment, table in (("mom1", self.mom1), ("mom2", self.mom2)):
            name = f"{moment}_{i}"
            if name in self._pending_arrays.files:
                table[key] = ops.asarray1f(self._pending_arrays[name])
        self.nr_update[key] = int(saved["nr_update"])


@registry.optimizers("spacy-entangle.ResumableAdam.v1")
def resumable_adam(
    learn_rate: FloatOrSeq = _ADAM["learn_rate"],
    *,
    L2: FloatOrSeq = _ADAM["L2"],
    beta1: FloatOrSeq = _ADAM["beta1"],
    beta2: FloatOrSeq = _ADAM["beta2"],
    eps: FloatOrSeq = _ADAM["eps"],
    grad_clip: FloatOrSeq = _ADAM["grad_clip"],
    L2_is_weight_decay: bool = True,
    use_averages: bool = False,
    state_dir: Optional[str] = None,
    save_every: int = 200,
    keep: int = 2,
    resume_from: Optional[str] = None,
) -> Optimizer:
    """thinc's ``Adam.v1`` (the same settings and updates) whose state can outlive the process.

    learn_rate (FloatOrSeq): the learning rate or its schedule, as Adam.v1's; default thinc's.
    L2 (FloatOrSeq): the L2 penalty (weight decay with L2_is_weight_decay), as Adam.v1's.
    beta1 (FloatOrSeq): the first moment's decay, as Adam.v1's.
    beta2 (FloatOrSeq): the second moment's decay, as Adam.v1's.
    eps (FloatOrSeq): Adam's epsilon, as Adam.v1's.
    grad_clip (FloatOrSeq): the gradient norm clipped to, as Adam.v1's.
    L2_is_weight_decay (bool): L2 as decoupled weight decay (AdamW), as Adam.v1's; default true.
    state_dir (Optional[str]): where to save the state, one ``step-N`` folder per save; None
        (default) saves nothing.
    save_every (int): save after every this many steps of the process, starting with its
        first: set it to ``[training] eval_frequency`` so each state sits beside spaCy's
        ``model-last`` of the same step. Default 200.
    keep (int): how many of the newest states to keep; default 2 (a run killed while saving
        still has the one before).
    resume_from (Optional[str]): a ``step-N`` folder to continue from; load ``model-last`` of
        that step with ``spacy-entangle.resume_weights.v1`` and give ``[training] max_steps``
        the steps still to run (the learning-rate schedule keeps its own total). Default None.
    use_averages (bool): must be false (spaCy would save the averages as model-last).
    """
    optimizer = ResumableOptimizer(
        learn_rate,
        L2=L2,
        beta1=beta1,
        beta2=beta2,
        eps=eps,
        grad_clip=grad_clip,
        L2_is_weight_decay=L2_is_weight_decay,
        use_averages=use_averages,
        use_radam=False,
        state_dir=Path(state_dir) if state_dir else None,
        save_every=save_every,
        keep=keep,
    )
    if resume_from:
        optimizer.resume_from(Path(resume_from))
    return optimizer


@registry.callbacks("spacy-entangle.resume_weights.v1")
def resume_weights(path: str) -> Callable[[Language], Language]:
    """An ``[initialize] after_init`` callback: load a saved pipeline's weights (``model-last``
    of an interrupted run) into the pipeline `spacy train` has just initialised, every
    component and the vocab, but not its config or meta (the resumed run's own settings stay).

    path (str): the saved pipeline; it must have the same components as the one trained.
    """

    def load(nlp: Language) -> Language:
        folder = Path(path)
        if not (folder / "config.cfg").exists():
            raise ValueError(f"resume_weights: no saved pipeline at {folder}")
        missing = [name for name in nlp.component_names if not (folder / name).exists()]
        if missing:
            raise ValueError(f"resume_weights: {folder} has no saved {', '.join(missing)}: another pipeline")
        return nlp.from_disk(folder, exclude=["config", "meta"])

    return load
