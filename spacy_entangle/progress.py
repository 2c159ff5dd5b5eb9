"""Progress bars by one rule: a tqdm bar on a terminal, none when stderr is not one (CI logs,
`spacy project run ... > log`), where its carriage-return redraws would flood the file; such a
log gets a plain line at the caller's pace instead (`log_line`, e.g. at each checkpoint). The
rule is tqdm's own ``disable=None``, as spaCy's training logger (spacy.ConsoleLogger) sets it."""

import sys
from typing import Any, Iterable, Optional

from tqdm import tqdm


def progress_bar(iterable: Optional[Iterable] = None, *, enabled: bool = True, **kwargs: Any) -> tqdm:
    """tqdm over ``iterable`` (or updated by hand), off when ``enabled`` is false and when
    its stream (stderr, or ``file=``) is not a terminal."""
    return tqdm(iterable, disable=None if enabled else True, **kwargs)


def bars_wanted(enabled: bool = True) -> bool:
    """The same rule for a library that draws its own bars (Ray Data): asked for, and stderr
    is a terminal."""
    return enabled and sys.stderr.isatty()


def log_line(bar: tqdm, enabled: bool, message: str) -> None:
    """One line to stderr where a bar was asked for (``enabled``) but is quiet because
    stderr is not a terminal; nothing otherwise (the bar shows it)."""
    if enabled and bar.disable:
        print(message, file=sys.stderr, flush=True)
