"""The `entangle` component's deferred backward pass: the one owner of its training
state between ``update`` and the optimizer step.

The component runs its model once per batch and hands the output to every listener; the
backward pass waits until the last listener has handed its gradients back (or until
``finish_update`` / the next update, when a listener never reports), and the optimizer
step waits for the backward pass. What waits, and for what, lives here alone."""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from thinc.api import Model, Optimizer

from ..data import SIDES, EntangleData


@dataclass
class PendingBatch:
    """One training batch's forward pass, waiting for its listeners' gradients."""

    outputs: List[EntangleData]
    backprop: Callable[[List[EntangleData]], Any]
    sgd: Optional[Optimizer] = None  # the optimizer that steps once its backward has run
    grads: Dict[int, EntangleData] = field(default_factory=dict)

    @property
    def has_grads(self) -> bool:
        return bool(self.grads)

    def add(self, grads: List[EntangleData]) -> float:
        """Sum a listener's gradients into the batch's; returns their squared norm
        (summed on the device, read back once per call: no GPU sync per doc)."""
        norm: Any = 0.0
        for i, g in enumerate(grads):
            for side in SIDES:
                d = getattr(g, side)
                if d is None:
                    continue
                norm = norm + (d**2).sum()
                total = self.grads.setdefault(i, EntangleData(None, None, g.align))
                current = getattr(total, side)
                setattr(total, side, d if current is None else current + d)
        return float(norm)

    def full_grads(self) -> List[EntangleData]:
        return [self.grads.get(i, EntangleData(None, None, out.align)) for i, out in enumerate(self.outputs)]


class DeferredBackward:
    """The batch waiting for its backward pass, and whether gradients wait for a step.

    ``begin`` starts a batch; ``take`` hands it over (once) to the component, which frees
    its listeners and calls ``backward``; ``step`` runs the optimizer on the gradients
    waiting. A batch whose update got no optimizer keeps the one ``defer_step`` gives it."""

    def __init__(self, model: Model):
        self._model = model
        self.pending: Optional[PendingBatch] = None
        self.grads_waiting = False  # a backward pass ran and no optimizer step since

    def begin(self, outputs: List[EntangleData], backprop: Callable, sgd: Optional[Optimizer]) -> PendingBatch:
        self.pending = PendingBatch(outputs, backprop, sgd=sgd)
        return self.pending

    def is_pending(self, batch: PendingBatch) -> bool:
        return self.pending is batch

    @property
    def step_waits(self) -> bool:
        """A batch that will take its optimizer step once its backward pass runs."""
        return self.pending is not None and self.pending.sgd is not None

    def take(self) -> Optional[PendingBatch]:
        """The pending batch, no longer pending (its backward pass is the caller's to run)."""
        batch, self.pending = self.pending, None
        return batch

    def defer_step(self, sgd: Optimizer) -> bool:
        """``finish_update`` before any listener reported: the pending batch takes ``sgd``
        and steps after its backward pass. False when there is no such batch."""
        if self.pending is None or self.pending.has_grads:
            return False
        self.pending.sgd = sgd
        return True

    def backward(self, batch: PendingBatch) -> None:
        """The batch's one backward pass with what its listeners handed back (nothing:
        no backward), then its optimizer step if it has one."""
        if batch.has_grads:
            batch.backprop(batch.full_grads())
            self.grads_waiting = True
        if batch.sgd is not None:
            self.step(batch.sgd)

    def step(self, sgd: Optimizer) -> None:
        """One optimizer step on the gradients waiting (none: nothing to do)."""
        if self.grads_waiting:
            self._model.finish_update(sgd)
            self.grads_waiting = False
