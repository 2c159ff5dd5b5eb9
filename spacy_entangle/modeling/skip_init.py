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

# what draws random numbers into a tensor in place: torch's init functions (each is one call as
# torch's mode sees it) and the tensor methods the encoders' _init_weights call directly. The init
# functions are known by name, not identity: libraries may replace ``torch.nn.init``'s attributes
# with wrappers (transformers 5 does), and torch's own function then hands its mode whatever
# ``torch.nn.init`` holds under that name
INIT_FILLS = frozenset(
    {
        "uniform_",
        "normal_",
        "trunc_normal_",
        "kaiming_uniform_",
        "kaiming_normal_",
        "xavier_uniform_",
        "xavier_normal_",
        "orthogonal_",
        "sparse_",
    }
)
TENSOR_FILLS: Set[Callable[..., Any]] = {torch.Tensor.uniform_, torch.Tensor.normal_}


def is_random_fill(func: Callable[..., Any]) -> bool:
    if func in TENSOR_FILLS:
        return True
    name = getattr(func, "__name__", None)
    if name not in INIT_FILLS:
        return False
    return getattr(func, "__module__", None) == "torch.nn.init" or getattr(torch.nn.init, name, None) is func


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
        if is_random_fill(func):
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
