"""Every size check of the models, in one place (pure Python, no spaCy).

Zero or negative sizes, or a width the heads do not divide, fail deep inside torch or
transformers with obscure errors: these say which setting is wrong and how to fix it.
``EntangleSettings`` (the config), ``EntangleEncoder`` (Python callers) and the offline
backbone builders all check here."""

from typing import Optional, Sequence

HEAD_COUNTS = (16, 12, 8, 6, 4, 2, 1)  # head counts suggested when n_heads must be set


NULL = " or null (the default)"  # what a config may also give a size


def check_positive(where: str = "", *, null: str = "", **values: Optional[int]) -> None:
    """Each value None (its default) or a positive integer; ``where`` names the caller,
    ``null`` says what else the caller accepts (a config: NULL)."""
    prefix = f"{where}: " if where else ""
    for name, value in values.items():
        if value is not None and value < 1:
            raise ValueError(f"{prefix}{name} must be a positive integer{null}, got {value}")


def check_coattention(
    where: str,
    *,
    n_coattention: int,
    width: Optional[int],
    n_heads: Optional[int],
    ffn_width: Optional[int],
) -> None:
    """The co-attention sizes; None (the default) for what the backbones size later."""
    check_positive(where, null=NULL, hidden_width=width, n_heads=n_heads, ffn_width=ffn_width)
    if n_coattention < 0:
        raise ValueError(f"{where}: n_coattention must be >= 0, got {n_coattention}")
    if width is not None and n_heads is not None and width % n_heads:
        raise ValueError(
            f"{where}: hidden_width={width} is not divisible by n_heads={n_heads}: set hidden_width "
            f"and n_heads so that hidden_width % n_heads == 0 (e.g. n_heads = {_suggest(width)})"
        )


def coattention_heads(where: str, width: int, n_heads: Optional[int], subword_heads: Optional[int]) -> int:
    """The co-attention head count: ``n_heads``, or by default the subword encoder's. A
    default that does not divide the width is refused, never replaced by a guess."""
    if n_heads is not None:  # checked with the other sizes (check_coattention)
        return n_heads
    if subword_heads is None or width % subword_heads:
        has = "has no head count" if subword_heads is None else f"has {subword_heads} heads, which do not divide it"
        raise ValueError(
            f"{where}: n_heads is null, so the co-attention would take the subword encoder's head count, "
            f"but the co-attention width is {width} and the subword encoder {has}: set n_heads "
            f"(e.g. n_heads = {_suggest(width)})"
        )
    return subword_heads


def legacy_heads(width: int, n_heads: Optional[int], subword_heads: Optional[int]) -> int:
    """The head count a model saved with n_heads = null was built with, before a default
    that does not divide the width was refused: the largest of HEAD_COUNTS that divides it.
    Only for loading those files (the weights do not record the head count)."""
    if n_heads is not None:
        return n_heads
    if subword_heads is not None and width % subword_heads == 0:
        return subword_heads
    return _divisors(width)[0]


def _suggest(width: int) -> str:
    return " or ".join(str(h) for h in _divisors(width)[:3])


def _divisors(width: int, counts: Sequence[int] = HEAD_COUNTS) -> Sequence[int]:
    return [h for h in counts if width % h == 0]
