"""PrioritySort QueueSort order (upstream `pkg/scheduler/framework/plugins/queuesort/priority_sort.go`)."""

from __future__ import annotations

import functools

import pytest

from kubesched.framework.node_info import PodInfo
from kubesched.framework.types import QueuedPodInfo
from kubesched.plugins.priority_sort import PrioritySort
from kubesched.testing.builders import make_pod


def _qpi(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod(name, priority=priority)), timestamp=timestamp)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((10, 5.0), (1, 1.0), True),  # higher priority first, whatever the time
        ((1, 1.0), (10, 5.0), False),
        ((5, 1.0), (5, 2.0), True),  # equal priority: earlier first
        ((5, 2.0), (5, 1.0), False),
        ((5, 1.0), (5, 1.0), False),  # strict: not less than an equal
        ((None, 1.0), (0, 2.0), True),  # unset priority counts as 0
        ((None, 2.0), (0, 1.0), False),
        ((None, 9.0), (-1, 1.0), True),  # negative priorities sort after unset
        ((-5, 1.0), (None, 9.0), False),
    ],
)
def test_less(a: tuple[int | None, float], b: tuple[int | None, float], expected: bool) -> None:
    assert PrioritySort().less(_qpi("a", *a), _qpi("b", *b)) is expected


def test_sorting_a_queue() -> None:
    plugin = PrioritySort()
    pods = [
        _qpi("low-early", 0, 1.0),
        _qpi("high-late", 100, 9.0),
        _qpi("unset-mid", None, 0.5),
        _qpi("high-early", 100, 3.0),
        _qpi("neg", -10, 0.0),
    ]

    def cmp(x: QueuedPodInfo, y: QueuedPodInfo) -> int:
        return -1 if plugin.less(x, y) else (1 if plugin.less(y, x) else 0)

    ordered = sorted(pods, key=functools.cmp_to_key(cmp))
    assert [q.pod.metadata.name for q in ordered] == [
        "high-early",
        "high-late",
        "unset-mid",
        "low-early",
        "neg",
    ]
