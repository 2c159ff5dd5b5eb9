"""Windows over long docs that respect BOTH encoders' length limits.

A window is a contiguous token range; both encoders see the same text span.
Windows overlap by ``overlap`` (a fraction of a window) so that tokens near a cut
still get context on both sides; each token is then read from the one window in
which it lies most centrally (its *home* window), which merges overlapping windows
without averaging. A single token longer than a window is clipped to the window
(it still gets its first pieces and characters).

A saved pipeline predicts as it did when it was saved, so a change of what windows a config
gives is a new registered version, never a new default of an old one: ``windows.v1``
overlaps by a quarter of a window unless told otherwise (what every pipeline saved with it,
or with ``window_getter = null``, was made with), ``windows.v2`` by a tenth (what new
configs name: a long doc costs 1.1x its length instead of 1.33x, at no measured F1 cost).
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy
from spacy.util import registry


@dataclass(frozen=True)
class WindowSettings:
    """How docs are cut into windows: sizes, specials included (None = the encoder's own
    limit), and the overlap. Configs name it ``window_getter`` (the key stays, so saved
    configs load); ``spans`` does the cutting."""

    max_pieces: Optional[int] = None
    max_chars: Optional[int] = None
    overlap: float = 0.25  # windows.v1's default

    def __post_init__(self) -> None:
        # only null means "the encoder's limit": 0 or a negative size is a mistake
        for name in ("max_pieces", "max_chars"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(
                    f"spacy-entangle windows: {name} must be a positive integer or null "
                    f"(the encoder's own limit), got {value}"
                )
        if not 0.0 <= self.overlap < 1.0:
            raise ValueError(f"windows overlap must be in [0, 1), got {self.overlap}")

    def budgets(self, piece_limit: Tuple[int, int], char_limit: Tuple[int, int]) -> Tuple[int, int]:
        """Content budgets (specials excluded) from (encoder limit, n_special) pairs."""
        (limit_p, special_p), (limit_c, special_c) = piece_limit, char_limit
        budget_p = min(limit_p, limit_p if self.max_pieces is None else self.max_pieces) - special_p
        budget_c = min(limit_c, limit_c if self.max_chars is None else self.max_chars) - special_c
        if budget_p < 1 or budget_c < 1:
            raise ValueError(
                f"windows too small: max_pieces={self.max_pieces}, max_chars={self.max_chars} "
                f"leave no room besides the special tokens ({special_p} pieces, {special_c} chars)"
            )
        return budget_p, budget_c

    def spans(
        self, starts: numpy.ndarray, ends: numpy.ndarray, pieces: numpy.ndarray, budget_p: int, budget_c: int
    ) -> List[Tuple[int, int]]:
        return greedy_windows(starts, ends, pieces, budget_p, budget_c, self.overlap)


# each version's default overlap (a fraction of a window); the cutting is the same
V1_OVERLAP = 0.25
V2_OVERLAP = 0.1

# the parameters both versions take, documented once (each version names its default overlap)
_PARAMETERS = """
    max_pieces (Optional[int]): the most subword pieces in a window, specials included; null
        (default): the subword encoder's own limit (512 for RoBERTa). A positive integer; a
        larger one than the encoder's limit is cut to that limit.
    max_chars (Optional[int]): the most characters in a window, specials included; null
        (default): the char encoder's own limit (2048 for CANINE). A positive integer; a
        larger one than the encoder's limit is cut to that limit.
    overlap (float): the fraction of each window's tokens that the next window reads
        again, in [0, 1); {overlap} by default. Tokens near a cut then get context on both
        sides (each token is read from the window in which it lies most centrally); more
        overlap encodes more of a long doc twice (about 1 / (1 - overlap) times its
        length in all).
"""


@registry.misc("spacy-entangle.windows.v1")
def configure_windows(
    max_pieces: Optional[int] = None,
    max_chars: Optional[int] = None,
    overlap: float = V1_OVERLAP,
) -> WindowSettings:
    """Greedy windows over long docs that respect both encoders' length limits: token
    ranges of at most ``max_pieces`` subword pieces and ``max_chars`` characters,
    overlapping by a quarter of a window unless ``overlap`` says otherwise. The windows of
    pipelines saved with v1 (and of ``window_getter = null``, which means v1's defaults);
    new configs name v2. Returns the WindowSettings an EntangleModel's ``window_getter``
    takes.
    """
    return WindowSettings(max_pieces, max_chars, overlap)


configure_windows.__doc__ = f"{configure_windows.__doc__}{_PARAMETERS.format(overlap=f'{V1_OVERLAP} (a quarter)')}"


@registry.misc("spacy-entangle.windows.v2")
def configure_windows_v2(
    max_pieces: Optional[int] = None,
    max_chars: Optional[int] = None,
    overlap: float = V2_OVERLAP,
) -> WindowSettings:
    """v1's windows overlapping by a tenth of a window unless ``overlap`` says otherwise,
    so that a long doc is encoded in fewer, less repeated windows (for the same overlap
    the windows are v1's). What new configs name: a saved pipeline keeps the version it
    was made with, so a change of the windows is a new version, never a new default.
    Returns the WindowSettings an EntangleModel's ``window_getter`` takes.
    """
    return WindowSettings(max_pieces, max_chars, overlap)


configure_windows_v2.__doc__ = f"{configure_windows_v2.__doc__}{_PARAMETERS.format(overlap=f'{V2_OVERLAP} (a tenth)')}"


def greedy_windows(
    starts: numpy.ndarray,
    ends: numpy.ndarray,
    pieces: numpy.ndarray,
    max_pieces: int,
    max_chars: int,
    overlap: float,
) -> List[Tuple[int, int]]:
    """Token ranges [t0, t1): as many tokens as both content budgets allow, at least one."""
    n = len(starts)
    if n == 0:
        return []
    cum_pieces = numpy.concatenate([[0], numpy.cumsum(pieces)])
    windows = []
    t0 = 0
    while True:
        by_pieces = int(numpy.searchsorted(cum_pieces, cum_pieces[t0] + max_pieces, side="right")) - 1
        by_chars = int(numpy.searchsorted(ends, starts[t0] + max_chars, side="right"))
        t1 = max(t0 + 1, min(by_pieces, by_chars, n))
        windows.append((t0, t1))
        if t1 >= n:
            return windows
        t0 = t0 + max(1, int((t1 - t0) * (1.0 - overlap)))


def home_windows(n_tokens: int, windows: List[Tuple[int, int]]) -> numpy.ndarray:
    """For each token, the index of the window where it is most central."""
    home = numpy.zeros(n_tokens, dtype="int64")
    best = numpy.full(n_tokens, -1, dtype="int64")
    idx = numpy.arange(n_tokens)
    for w, (t0, t1) in enumerate(windows):
        span = idx[t0:t1]
        centrality = numpy.minimum(span - t0, t1 - 1 - span)
        better = centrality > best[t0:t1]
        best[t0:t1][better] = centrality[better]
        home[t0:t1][better] = w
    return home
