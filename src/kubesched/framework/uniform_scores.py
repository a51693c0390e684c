"""One score for every node, held as one value instead of one per node.

A Score plugin that knows every node gets the same score (no node has a PreferNoSchedule taint, no
node holds the pod's images, the pod has no volumes) returns `uniform(n, value)`: a read-only
broadcast of one int64 that reads like any score array. The framework then checks, weights and adds
that one value rather than passing over every node; at 50,000 nodes each pass is 400 KB of memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["is_uniform", "uniform"]

IntArray = npt.NDArray[np.int64]


_INT64 = np.dtype(np.int64)


def uniform(n: int, value: int) -> IntArray:
    """`n` scores of `value`: a read-only view of one value (no memory per node). Built directly
    on the value's bytes (read-only, being bytes): `np.broadcast_to` costs ten times as much."""
    return np.ndarray((n,), _INT64, np.int64(value).tobytes(), 0, (0,))


def is_uniform(scores: Any) -> bool:
    """Whether `scores` is a `uniform` array (one value seen at every position) of at least one score."""
    return (
        type(scores) is np.ndarray
        and scores.ndim == 1
        and scores.strides == (0,)
        and scores.dtype == np.int64
        and len(scores) > 0
    )
