"""Build modules whose every random weight is about to be overwritten, without drawing it.

Loading a saved pipeline builds both encoders and the co-attention modules from their configs,
which draws every weight at random (``nn.Linear``'s kaiming-uniform, the encoders'
``_init_weights``), then replaces all of them with the saved ones: about a second of a load
spent on numbers nobody reads. ``skipped_random_init`` leaves those tensors as allocated
instead.

Unlike ``transformers.modeling_utils.no_init_weights``, which swaps ``torch.nn.init``'s
functions for the whole process (another thread building a layer meanwhile would get
uninitialised weights), this is a ``TorchFunctionMode``: torch keeps its mode stack per
thread, so only the calls of the thread that loads are skipped. It records each tensor it
skipped; ``not_loaded`` lists those the saved weights did not fill (a random buffer that is
not saved), and the loader then builds again with the random init, so no tensor is ever used
as allocated.
"""

from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set

import torch
from torch.overrides import TorchFunctionMode

# what draws random numbers into a tensor in place: torch's init functions (each is one call
# as torch's mode sees it) and the tensor methods the encoders' _init_weights call directly
_INIT = torch.nn.init
RANDOM_FILLS: Set[Callable[..., Any]] = {
    _INIT.uniform_,
    _INIT.normal_,
    _INIT.trunc_normal_,
    _INIT.kaiming_uniform_,
    _INIT.kaiming_normal_,
    _INIT.xavier_uniform_,
    _INIT.xavier_normal_,
    _INIT.orthogonal_,
    _INIT.sparse_,
    torch.Tensor.uniform_,
    torch.Tensor.normal_,
}


class SkippedInit(TorchFunctionMode):
    """Turns each random fill into a no-op and remembers the tensors it left as allocated."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: List[torch.Tensor] = []

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in RANDOM_FILLS:
            tensor = args[0] if args else kwargs["tensor"]
            self.skipped.append(tensor)
            return tensor
        return func(*args, **kwargs)


@contextmanager
def skipped_random_init() -> Iterator[SkippedInit]:
    """Inside, this thread's random fills do nothing; the mode lists the tensors they skipped."""
    mode = SkippedInit()
    with mode:
        yield mode


def not_loaded(skipped: Iterable[torch.Tensor], loaded: Iterable[torch.Tensor]) -> List[torch.Tensor]:
    """The tensors whose random init was skipped that are not among those the saved weights
    were loaded into (compared by storage, so views and ``.data`` count as their tensor)."""
    filled = {_storage(t) for t in loaded}
    return [t for t in skipped if _storage(t) not in filled]


def _storage(tensor: torch.Tensor) -> int:
    return int(tensor.untyped_storage().data_ptr())
