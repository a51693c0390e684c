"""activeQ's heap entries: a pod in QueueSort order, ties kept first in, first out.

Two kinds: `ActiveItem` asks the QueueSort plugin's `less` (twice per comparison at worst);
`RankedItem` compares a precomputed `(sort_key..., seq)` tuple, for QueueSort plugins that offer
`sort_key` (PrioritySort does), which is what a heap of thousands of pods spends its time on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kubesched.framework.types import QueuedPodInfo

__all__ = ["ActiveItem", "Less", "RankedItem", "SortKey"]

#: QueueSort's order: whether the first pod goes before the second.
Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
#: A key whose order is `less`'s (`SortKeyPlugin.sort_key`).
SortKey = Callable[[QueuedPodInfo], tuple[Any, ...]]


class ActiveItem:
    """A heap entry: QueueSort order, then insertion sequence so equal pods stay FIFO."""

    __slots__ = ("less", "qpi", "seq")

    def __init__(self, qpi: QueuedPodInfo, seq: int, less: Less) -> None:
        self.qpi = qpi
        self.seq = seq
        self.less = less

    def __lt__(self, other: ActiveItem) -> bool:
        if self.less(self.qpi, other.qpi):
            return True
        if self.less(other.qpi, self.qpi):
            return False
        return self.seq < other.seq


class RankedItem(ActiveItem):
    """The same order from the QueueSort plugin's `sort_key`: (key, seq) compared as one tuple."""

    __slots__ = ("key", "rank")

    def __init__(self, qpi: QueuedPodInfo, seq: int, less: Less, key: SortKey) -> None:
        super().__init__(qpi, seq, less)
        self.key = key
        self.rank = (*key(qpi), seq)

    def rerank(self) -> None:
        """Read the key again (the pod changed while queued)."""
        self.rank = (*self.key(self.qpi), self.seq)

    def __lt__(self, other: ActiveItem) -> bool:
        return self.rank < cast(RankedItem, other).rank
