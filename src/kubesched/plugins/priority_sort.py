"""PrioritySort: the default QueueSort order, highest priority first, then first come first served."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.framework.interfaces import QueueSortPlugin
from kubesched.framework.types import QueuedPodInfo

__all__ = ["PrioritySort"]


class PrioritySort(QueueSortPlugin):
    """QueueSort: pods with a higher `spec.priority` (0 when unset) pop first; among equal
    priorities the one added to the queue earlier (smaller `timestamp`) pops first."""

    name: ClassVar[str] = "PrioritySort"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa = a.pod.spec.priority or 0
        pb = b.pod.spec.priority or 0
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        return -(qpi.pod.spec.priority or 0), qpi.timestamp
