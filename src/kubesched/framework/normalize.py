"""Score normalization shared by Score plugins (upstream `helper.DefaultNormalizeScore`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesched.framework.types import MAX_NODE_SCORE

__all__ = ["default_normalize_score"]


def default_normalize_score(
    scores: npt.NDArray[np.int64], reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> None:
    """Scale `scores` in place so the highest becomes `max_priority`; `reverse` flips the result.

    The maximum is taken with a floor of 0. If it is 0, every score becomes `max_priority` when
    `reverse` is set and is left alone otherwise. Otherwise `s = max_priority * s // max` with Go's
    int64 division (truncating toward zero), then `max_priority - s` when `reverse` is set.
    """
    if scores.size == 0:
        return
    top = max(int(scores.max()), 0)
    if top == 0:
        if reverse:
            scores[...] = max_priority
        return
    scaled = scores * max_priority
    # Go truncates toward zero; numpy's // floors, which differs for negative numerators.
    quotient = np.abs(scaled) // top
    scaled = np.where(scaled < 0, -quotient, quotient)
    if reverse:
        scaled = max_priority - scaled
    scores[...] = scaled
