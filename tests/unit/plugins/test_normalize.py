"""default_normalize_score: upstream DefaultNormalizeScore semantics
(`pkg/scheduler/framework/plugins/helper/normalize_score.go`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.normalize import default_normalize_score


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([], False, []),
        ([], True, []),
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([1, 2, 4], False, [25, 50, 100]),
        ([1, 2, 4], True, [75, 50, 0]),
        ([1, 3], False, [33, 100]),  # 100*1//3 = 33 (truncated)
        ([1, 3], True, [67, 0]),
        ([2, 3], True, [34, 0]),  # 100 - 66
        ([0, 5], True, [100, 0]),
        ([7], False, [100]),
        ([7], True, [0]),
        ([-4, -2], False, [-4, -2]),  # the maximum is floored at 0: untouched
        ([-4, -2], True, [100, 100]),
        ([-1, 3], False, [-33, 100]),  # Go truncates toward zero: -100/3 = -33, not -34
        ([-1, 3], True, [133, 0]),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    arr = np.array(scores, dtype=np.int64)
    default_normalize_score(arr, reverse)
    assert arr.tolist() == expected
    assert arr.dtype == np.int64


def test_in_place_on_a_view() -> None:
    base = np.array([9, 1, 2, 4], dtype=np.int64)
    default_normalize_score(base[1:], False)
    assert base.tolist() == [9, 25, 50, 100]


def test_custom_max_priority() -> None:
    arr = np.array([1, 2], dtype=np.int64)
    default_normalize_score(arr, False, max_priority=10)
    assert arr.tolist() == [5, 10]


def _go_reference(scores: list[int], reverse: bool) -> list[int]:
    top = max([0, *scores])
    if top == 0:
        return [100] * len(scores) if reverse else list(scores)
    out = []
    for s in scores:
        q = abs(100 * s) // top
        v = q if s >= 0 else -q
        out.append(100 - v if reverse else v)
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=20), st.booleans())
def test_matches_scalar_definition_and_stays_in_range(scores: list[int], reverse: bool) -> None:
    arr = np.array(scores, dtype=np.int64)
    default_normalize_score(arr, reverse)
    assert arr.tolist() == _go_reference(scores, reverse)
    assert all(0 <= s <= 100 for s in arr.tolist())
