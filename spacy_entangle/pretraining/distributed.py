"""Data-parallel pretraining under ``torchrun`` (PyTorch's launcher): the process group, each
process's share of a batch, and the few collectives the loop needs.

Why this shape: one global batch plan (data.py's ``epoch_batches``) and one pair of noise
generators drive a run whatever the number of processes. Every process draws the noise of
the whole global batch, so the generators advance as in a single process, and trains on
its own contiguous slice of the rows, as ``DistributedSampler`` gives each replica its
share of the indices. N processes therefore compute the update one process computes at the
same global batch, and a checkpoint's data position and generator states mean the same for
any N. Gradients are averaged by ``DistributedDataParallel``; each process scales its loss
by its share of the batch's words or characters, so that the average is the global batch's
mean (loop.py, grow_run.py). Rank 0 alone reads and writes OUT.

Dropout is the one thing drawn per process: each rank has its own torch generator, saved
per rank in a checkpoint (an exact resume with the same number of processes; with another
number the other ranks start fresh streams).

A process started without ``torchrun`` (no ``WORLD_SIZE``, or ``WORLD_SIZE=1``) runs the
single-process path unchanged: no process group, no wrapper, no collective.
"""

import inspect
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch
import torch.distributed as dist
from torch import nn


@dataclass(frozen=True)
class World:
    """This process's place among the processes of a run."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Rank 0: the process that reads and writes OUT, logs and evaluates."""
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.size > 1

    def rows(self, n: int) -> Tuple[slice, bool]:
        """This process's contiguous share of a global batch of ``n`` rows, and whether it is
        a stand-in. An epoch's last batch may be short, with fewer rows than processes: a
        process left without one trains on the first row at weight 0, because every process
        must run the backward pass whose gradients the others wait for."""
        start, stop = self.rank * n // self.size, (self.rank + 1) * n // self.size
        return (slice(start, stop), False) if stop > start else (slice(0, 1), True)


def world_from_env() -> World:
    """The world ``torchrun`` describes in the environment (one process without it)."""
    if dist.is_available() and dist.is_initialized():
        rank, size = dist.get_rank(), dist.get_world_size()
    else:
        rank, size = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    return World(rank=rank, size=size, local_rank=int(os.environ.get("LOCAL_RANK", "0")))


@contextmanager
def process_group(device: str) -> Iterator[Tuple[World, str]]:
    """The world and this process's device for the duration of a run. Under ``torchrun``
    with several processes: the process group (NCCL on GPUs, gloo on CPUs), joined and left
    here unless the caller holds one already, and on GPUs the device ``LOCAL_RANK`` (the
    launcher's convention: choose the GPUs with ``CUDA_VISIBLE_DEVICES``)."""
    world = world_from_env()
    if not world.parallel:
        yield world, device
        return
    cuda = torch.device(device).type == "cuda"
    if cuda:
        device = f"cuda:{world.local_rank}"
        torch.cuda.set_device(device)
    own = not dist.is_initialized()
    if own:
        dist.init_process_group("nccl" if cuda else "gloo")
    try:
        yield world, device
    finally:
        if own:
            dist.destroy_process_group()


def check_divides(world: World, **batches: int) -> None:
    """Global batches are the documented quantity: each process takes an equal share."""
    for name, size in batches.items():
        if size % world.size:
            flag = "--" + name.replace("_", "-")
            raise ValueError(
                f"{flag} {size} is the global batch, shared by the {world.size} processes: give a multiple of "
                f"{world.size} (each process takes {flag} / {world.size})"
            )


def _device() -> torch.device:
    """Where a collective's tensors live: NCCL reduces on the GPU, gloo on the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sum_all(values: Sequence[float]) -> List[float]:
    """The sums over all processes (float64: word and character counts stay exact)."""
    tensor = torch.tensor(list(values), dtype=torch.float64, device=_device())
    dist.all_reduce(tensor)
    return tensor.tolist()


def from_main(value: Any) -> Any:
    """Rank 0's ``value``, on every process (any picklable object)."""
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(value: Any) -> List[Any]:
    """Every process's ``value``, by rank, on every process."""
    out: List[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def barrier() -> None:
    if dist.get_backend() == "nccl":  # NCCL's barrier wants the device named
        dist.barrier(device_ids=[torch.cuda.current_device()])
    else:
        dist.barrier()


def share_weights(module: nn.Module) -> None:
    """Rank 0's parameters and buffers, copied into every process's ``module`` in place
    (the other ranks built theirs from the config alone)."""
    for tensor in module.state_dict().values():
        dist.broadcast(tensor, src=0)


def wrap(module: nn.Module, device: torch.device) -> nn.Module:
    """``module`` under DistributedDataParallel. find_unused_parameters: stage A reads only
    the front end, and a process's rows may score no character for a head; the weights are
    rank 0's already (share_weights), so the wrapper does not broadcast them again."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    # init_sync came with torch 2.4; older ones broadcast rank 0's weights again (harmless)
    skip: Dict[str, Any] = {}
    if "init_sync" in inspect.signature(DistributedDataParallel).parameters:
        skip["init_sync"] = False
    return DistributedDataParallel(module, device_ids=ids, find_unused_parameters=True, **skip)


class DataParallel:
    """What a step needs of the data-parallel run: this process's rows, the loss factors
    and the module to call. With one process: all rows, no factors, the model itself."""

    def __init__(self, world: World, device: torch.device) -> None:
        self.world, self.device = world, device
        self._trained: Tuple[bool, ...] = ()
        self._wrapper: Optional[nn.Module] = None

    def rows(self, n: int) -> Tuple[Optional[slice], bool]:
        """This process's rows of a global batch of ``n`` (None: all of them) and whether
        it stands in (World.rows)."""
        return self.world.rows(n) if self.world.parallel else (None, False)

    def scales(self, counts: Dict[str, float], stand_in: bool = False) -> Optional[Dict[str, float]]:
        """Per objective, the factor that makes DistributedDataParallel's average of the
        processes' mean losses the mean over the global batch: this process's share of the
        scored items, times the number of processes (0 for a stand-in). None with one process."""
        if not self.world.parallel:
            return None
        names = list(counts)
        local = [0.0 if stand_in else counts[name] for name in names]
        size = self.world.size
        return {name: size * n / total if total else 0.0 for name, n, total in zip(names, local, sum_all(local))}

    def module(self, model: nn.Module) -> nn.Module:
        """The module a step calls: ``model``, or its DistributedDataParallel wrapper, built
        again when the trained parameters change (late unfreezing): a wrapper all-reduces
        the parameters that trained when it was built."""
        if not self.world.parallel:
            return model
        trained = tuple(p.requires_grad for p in model.parameters())
        if self._wrapper is None or trained != self._trained:
            self._trained, self._wrapper = trained, wrap(model, self.device)
        return self._wrapper

    def restore_rng(self, rank_rngs: Optional[List[Any]], seed: int, step: int) -> None:
        """A rank's own dropout generators on resume: saved by a run with as many
        processes, else a fresh stream of (seed, rank, step). Rank 0's are the
        checkpoint's single-process ones (checkpoint.restore)."""
        if self.world.main:
            return
        if rank_rngs is not None and len(rank_rngs) == self.world.size:
            set_rng_state(rank_rngs[self.world.rank], self.device)
        else:
            torch.manual_seed(rank_seed(seed, self.world.rank, step))


def rank_seed(seed: int, rank: int, step: int = 0) -> int:
    """The dropout seed of ``rank``: rank 0 of a fresh run keeps ``seed`` (a single
    process's), the others get streams of their own."""
    if rank == 0 and step == 0:
        return seed
    return int(numpy.random.SeedSequence([seed, rank, step]).generate_state(1)[0])


def rng_state(device: torch.device) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """This process's dropout generators: the CPU's and its GPU's."""
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), cuda


def set_rng_state(state: Sequence[Optional[torch.Tensor]], device: torch.device) -> None:
    cpu, cuda = state
    assert cpu is not None
    torch.set_rng_state(cpu)
    if cuda is not None and device.type == "cuda":
        torch.cuda.set_rng_state(cuda, device)
