"""What every comparison table of the projects shares: reading metrics JSON, formatting
scores, times and mean ± spread over seeds, and writing the markdown (echoed to the log)."""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple


def read_json(path: Path) -> Optional[dict]:
    """The JSON at path, or None when the file is not there (a variant that was not run)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def pct(value, digits: int = 1) -> str:
    """A 0..1 score as a percentage ("–" when missing)."""
    return "–" if value is None else f"{100 * float(value):.{digits}f}"


def fmt_time(seconds) -> str:
    if seconds is None:
        return "–"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def mean_spread(values: Sequence[float]) -> Tuple[Optional[float], Optional[float]]:
    """Mean and sample standard deviation (None for the spread of a single value)."""
    values = [float(v) for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def fmt_mean_spread(values: Sequence[float], digits: int = 1) -> str:
    """ "56.4 ± 0.8" in percent over the seeds; a single seed prints its value alone."""
    mean, spread = mean_spread(values)
    if mean is None:
        return "–"
    return pct(mean, digits) if spread is None else f"{pct(mean, digits)} ± {pct(spread, digits)}"


def markdown_table(header: List[str], rows: List[List[str]]) -> List[str]:
    """A markdown table, first column left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return lines + ["| " + " | ".join(cells) + " |" for cells in rows]


def write_report(out: Path, text: List[str]) -> None:
    """Write the markdown report and echo it (the weasel log shows the table)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))
    print(f"✔ saved {out}")


def marked_block(name: str, lines: List[str]) -> str:
    """The generated lines between a README's `<!-- NAME:start -->` / `<!-- NAME:end -->` markers."""
    return "\n".join([f"<!-- {name}:start -->", "", *lines, "", f"<!-- {name}:end -->"])


def write_marked_block(readme: Path, name: str, lines: List[str], source: Path, command: str, check: bool) -> None:
    """Put the generated ``lines`` (from ``source``, by ``command``) between the README's NAME
    markers, or with ``check`` only compare and fail when they differ (the tests run that).
    A README without exactly one pair of markers fails with a message, untouched."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if len(pattern.findall(text)) != 1:
        sys.exit(f"✘ {readme} needs exactly one {start} ... {end} block")
    block = marked_block(name, lines)
    if check:
        if pattern.search(text).group(0) != block:
            sys.exit(f"✘ {readme}'s {name} table is not what {source} gives: run `{command}`")
        print(f"✔ {readme}'s {name} table matches {source}")
        return
    readme.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")
    print(block)
    print(f"✔ wrote the {name} table into {readme}")
