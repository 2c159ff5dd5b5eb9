"""The two engines of `annotate`. Both run the same `annotate_shards` on each shard and write
it with `write_shard`, so they give the same bytes:

- local: one `nlp.pipe` stream over all pending shards (`n_process` > 1: spaCy's own
  multiprocessing), a progress bar;
- ray: Ray Data. The shard plan is the dataset (`ray.data.from_items`), `map_batches` with a
  callable class loads the pipeline once per actor, and each actor writes its shards; the
  driver only records finished shards in the manifest. Ray's own `read_text`/`read_json` stop
  at the first bad line and carry no line numbers, which resuming and the errors report need.
"""

import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import raise_error

from ..pipeline.entangle import Entangle, release_states
from .readers import InputError, Record, ShardSpec, read_shard
from .shards import write_shard

OnResult = Callable[[Dict[str, Any]], None]


@dataclass
class ShardOutput:
    """One annotated shard: its docs in input order and its errors (input order too)."""

    spec: ShardSpec
    docs: List[Tuple[Any, Doc]]
    errors: List[Dict[str, Any]]
    docs_in: int


@dataclass
class _ShardState:
    spec: ShardSpec
    records: Dict[int, Record] = field(default_factory=dict)
    docs: Dict[int, Doc] = field(default_factory=dict)
    errors: Dict[int, Dict[str, Any]] = field(default_factory=dict)

    def fail(self, record: Record, e: Exception) -> None:
        self.errors[record.pos] = {
            "source": self.spec.path,
            "line": self.spec.start + record.pos + 1,
            "id": record.id,
            "reason": f"{type(e).__name__}: {e}",
        }


def for_bulk(nlp: Language) -> Language:
    """Bulk annotation keeps and ships only annotations: every `entangle` component stores
    no states in the docs (store_output, store_attention off, whatever the pipeline was
    saved with); what a listener has not read is dropped as each doc comes back."""
    for _, proc in nlp.components:
        if isinstance(proc, Entangle):
            proc.cfg["store_output"] = False
            proc.store_attention = False
    return nlp


def _skip_batch(proc_name: Any, proc: Any, docs: Any, e: Exception) -> None:
    """Error handler for `nlp.pipe`: drop the batch; its docs are retried one by one."""


@contextmanager
def _default_error_handler(nlp: Language, handler: Callable[..., None]) -> Iterator[None]:
    """Set `nlp.default_error_handler` for a while (what `nlp(text)` and spaCy's child
    processes report to). Components keep theirs: spaCy's parser and ner cannot take one
    (`set_error_handler` raises AttributeError on them), so a raising batch is handled by
    restarting the stream instead (`annotate_shards`)."""
    previous = nlp.default_error_handler
    nlp.default_error_handler = handler
    try:
        yield
    finally:
        nlp.default_error_handler = previous


class _Feed:
    """The doc stream given to `nlp.pipe`; counts what it handed out and keeps its own
    failure apart (a read error must end the run, a component's error must not)."""

    def __init__(self, items: Iterator[Tuple[Doc, Tuple[int, int]]]):
        self.items = items
        self.pulled = 0
        self.exhausted = False
        self.error: Optional[BaseException] = None

    def __iter__(self) -> "_Feed":
        return self

    def __next__(self) -> Tuple[Doc, Tuple[int, int]]:
        try:
            item = next(self.items)
        except StopIteration:
            self.exhausted = True
            raise
        except BaseException as e:
            self.error = e
            raise
        self.pulled += 1
        return item


def annotate_shards(
    nlp: Language,
    specs: Sequence[ShardSpec],
    *,
    text_key: str = "text",
    batch_size: Optional[int] = None,
    n_process: int = 1,
) -> Iterator[ShardOutput]:
    """Annotate the shards in one `nlp.pipe` stream; yields each shard once all its docs are back.

    A batch that raises in a component is lost from the stream, which restarts on the rest of
    the input; `_finish` retries that batch's docs alone, so only the doc that raises is an error."""
    # a finished shard's state is dropped (None): its docs leave with it
    states: List[Optional[_ShardState]] = [_ShardState(spec) for spec in specs]

    def docs() -> Iterator[Tuple[Doc, Tuple[int, int]]]:
        for i, maybe_state in enumerate(states):
            state = _in_flight(maybe_state)
            for item in read_shard(state.spec, text_key):
                if isinstance(item, InputError):
                    state.errors[item.pos] = item.to_json()
                    continue
                state.records[item.pos] = item
                try:
                    doc = nlp.make_doc(item.text)
                except Exception as e:  # noqa: BLE001 - any tokenizer failure is this doc's error
                    state.fail(item, e)
                    continue
                yield doc, (i, item.pos)

    feed = _Feed(docs())
    finished = 0
    with _default_error_handler(nlp, _skip_batch):
        while not feed.exhausted:
            pulled = feed.pulled
            try:
                for doc, (i, pos) in nlp.pipe(feed, as_tuples=True, batch_size=batch_size, n_process=n_process):
                    while finished < i:  # docs come back in order: earlier shards are complete
                        yield _finish(nlp, _in_flight(states[finished]))
                        states[finished] = None  # its docs leave with it
                        finished += 1
                    release_states(nlp, [doc])
                    _in_flight(states[i]).docs[pos] = doc
            except Exception:
                if feed.error is not None or feed.pulled == pulled:
                    raise  # the input itself failed, or nothing can progress
    for index in range(finished, len(states)):
        yield _finish(nlp, _in_flight(states[index]))
        states[index] = None


def _in_flight(state: Optional[_ShardState]) -> _ShardState:
    """A shard's state while its docs are read or come back: never a finished one's (docs
    come back in order, and the reader is ahead of them)."""
    if state is None:
        raise RuntimeError("annotate: a doc of a shard already written came back")
    return state


def _finish(nlp: Language, state: _ShardState) -> ShardOutput:
    """Retry alone the docs whose batch raised; a doc that still raises becomes an error."""
    with _default_error_handler(nlp, raise_error):
        for pos, record in state.records.items():
            if pos not in state.docs and pos not in state.errors:
                try:
                    state.docs[pos] = nlp(record.text)
                    release_states(nlp, [state.docs[pos]])
                except Exception as e:  # noqa: BLE001 - any failure is this doc's error
                    state.fail(record, e)
    docs = [(state.records[pos].id, state.docs[pos]) for pos in sorted(state.docs)]
    errors = [state.errors[pos] for pos in sorted(state.errors)]
    n_input_errors = sum(1 for pos in state.errors if pos not in state.records)
    return ShardOutput(state.spec, docs, errors, len(state.records) + n_input_errors)


def run_local(
    nlp: Language,
    specs: Sequence[ShardSpec],
    output_dir: Path,
    *,
    fmt: str,
    text_key: str,
    on_result: OnResult,
    batch_size: Optional[int] = None,
    n_process: int = 1,
    progress: bool = True,
) -> None:
    """`nlp.pipe` over all shards in this process (or spaCy's `n_process` processes)."""
    from ..progress import progress_bar

    with progress_bar(total=sum(s.size for s in specs), unit="line", enabled=progress) as bar:
        for out in annotate_shards(nlp, specs, text_key=text_key, batch_size=batch_size, n_process=n_process):
            on_result(write_shard(output_dir, out.spec, fmt, out.docs, out.errors, out.docs_in))
            bar.update(out.spec.size)


class ShardAnnotator:
    """Ray Data callable class: loads the pipeline once per actor, annotates and writes shards."""

    def __init__(
        self, pipeline: str, output_dir: str, fmt: str, text_key: str, batch_size: Optional[int], use_gpu: bool
    ):
        import spacy

        import spacy_entangle  # noqa: F401 - registers the factories in the worker

        if use_gpu:
            spacy.require_gpu()
        self.nlp = for_bulk(spacy.load(pipeline))
        self.output_dir = Path(output_dir)
        self.fmt, self.text_key, self.batch_size = fmt, text_key, batch_size

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        import numpy

        results = []
        specs = [ShardSpec(**json.loads(s)) for s in batch["spec"]]
        for out in annotate_shards(self.nlp, specs, text_key=self.text_key, batch_size=self.batch_size):
            entry = write_shard(self.output_dir, out.spec, self.fmt, out.docs, out.errors, out.docs_in)
            results.append(json.dumps(entry))
        return {"result": numpy.array(results, dtype=object)}


def run_ray(
    pipeline: str,
    specs: Sequence[ShardSpec],
    output_dir: Path,
    *,
    fmt: str,
    text_key: str,
    on_result: OnResult,
    batch_size: Optional[int] = None,
    address: Optional[str] = None,
    num_workers: Optional[int] = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0.0,
    progress: bool = True,
) -> None:
    """A pool of `num_workers` actors (each `cpus_per_worker` CPUs, `gpus_per_worker` GPUs) on
    the cluster at `address` (None: a local one), one shard per call. A worker that dies is
    not restarted (max_restarts = 0): the run fails and a re-run resumes from the manifest.
    Ray Data's default (endless restarts of actors whose constructor arguments live in the
    object store) makes Ray's core worker log an error-level line on every normal run, and
    can retry a shard that kills its worker without end."""
    if not specs:
        return  # nothing left to do: no cluster to start
    ray = _init_ray(address)
    n = _pool_size(ray, num_workers, cpus_per_worker, gpus_per_worker)
    from ..progress import bars_wanted

    bars = bars_wanted(progress)  # Ray Data's own tqdm bars: the same rule as ours
    ray.data.DataContext.get_current().enable_progress_bars = bars
    if not bars:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    items = [{"spec": json.dumps(spec.to_dict())} for spec in specs]
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        ShardAnnotator,
        fn_constructor_kwargs=dict(
            pipeline=pipeline,
            output_dir=str(Path(output_dir).resolve()),
            fmt=fmt,
            text_key=text_key,
            batch_size=batch_size,
            use_gpu=gpus_per_worker > 0,
        ),
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=n, max_tasks_in_flight_per_actor=1),
        num_cpus=cpus_per_worker,
        num_gpus=gpus_per_worker or None,
        max_restarts=0,
    )
    for row in dataset.iter_rows():
        on_result(json.loads(row["result"]))


def _init_ray(address: Optional[str]) -> Any:
    """Import Ray (only this engine needs it) and join `address`, or start a local cluster."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ValueError("--engine ray needs Ray: pip install 'spacy-entangle[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    return ray


def _pool_size(ray: Any, num_workers: Optional[int], cpus: float, gpus: float) -> int:
    """The workers asked for, or as many as the cluster holds; too many for the cluster is an error."""
    resources = ray.cluster_resources()
    fit = int(resources.get("CPU", 0) // cpus)
    if gpus > 0:
        fit = min(fit, int(resources.get("GPU", 0) // gpus))
    if fit < 1:
        raise ValueError(
            f"the Ray cluster ({resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs) "
            f"cannot hold one worker of {cpus:g} CPUs and {gpus:g} GPUs"
        )
    if num_workers is None:
        return fit
    if num_workers > fit:
        raise ValueError(
            f"--num-workers {num_workers} does not fit the Ray cluster: at most {fit} of {cpus:g} CPUs and {gpus:g} GPUs each"
        )
    return num_workers
