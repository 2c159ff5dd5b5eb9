"""Rows of ids padded into one batch: the windows of a prediction and the calibration text."""

from typing import Sequence, Tuple

import numpy


def pad_rows(rows: Sequence[numpy.ndarray], length: int, pad_id: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Ids (N, length) with each row first and ``pad_id`` after it, and the mask (1 = a row's id)."""
    ids = numpy.full((len(rows), length), pad_id, dtype="int64")
    mask = numpy.zeros((len(rows), length), dtype="int64")
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask
