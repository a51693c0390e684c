"""Workload identity of a pod (its controller), and counts of a workload's pods per node.

SpotScheduler caps how many replicas of one workload land on spot nodes and AZScheduler spreads them
over zones; both need "how many pods of this controller are on each node" every cycle. Counting
walks every pod of every node, so the count of each node is remembered per `NodeInfo` generation
(a generation changes whenever a pod is added to or removed from the node): consecutive pods of one
workload rescan only the nodes whose pods changed, which is what a ReplicaSet being scaled up does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

import numpy as np
import numpy.typing as npt

from kubesched.api.meta import controller_of
from kubesched.api.objects import Pod
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import IndexArray, NodeTable

__all__ = ["OwnerPodCounts", "owner_key", "owner_text"]

IntArray = npt.NDArray[np.int64]

#: Workloads whose per-node counts are remembered between cycles (least recently used dropped).
_MAX_REMEMBERED_OWNERS: Final = 64
#: Nodes remembered per workload before its memo starts over (bounds memory on huge clusters).
_MAX_REMEMBERED_NODES: Final = 200_000


def owner_key(pod: Pod) -> str | None:
    """The identity of the pod's controller: its uid, or `namespace/kind/name` when the reference has
    no uid (hand-written simulator files often omit it); None for a pod without a controller."""
    ref = controller_of(pod.metadata)
    if ref is None:
        return None
    return ref.uid or f"{pod.metadata.namespace}/{ref.kind}/{ref.name}"


def owner_text(pod: Pod) -> str:
    """`ReplicaSet web-abc`: how reasons name the pod's controller."""
    ref = controller_of(pod.metadata)
    return f"{ref.kind} {ref.name}" if ref is not None else ""


def _count_on(info: NodeInfo, key: str) -> int:
    """Pods of workload `key` on the node, not terminating."""
    n = 0
    for pi in info.pods.values():
        pod = pi.pod
        if (
            pod.metadata.owner_references
            and pod.metadata.deletion_timestamp is None
            and owner_key(pod) == key
        ):
            n += 1
    return n


class OwnerPodCounts:
    """Per-node counts of a workload's pods, remembered per (NodeInfo object, generation).

    The NodeInfo object is kept in its entry, so a recycled `id()` can never hit a stale count.
    """

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: OrderedDict[str, dict[int, tuple[NodeInfo, int, int]]] = OrderedDict()

    def on(self, info: NodeInfo, key: str) -> int:
        """Pods of workload `key` on one node."""
        seen = self._seen(key)
        entry = seen.get(id(info))
        if entry is not None and entry[0] is info and entry[1] == info.generation:
            return entry[2]
        n = _count_on(info, key)
        if len(seen) >= _MAX_REMEMBERED_NODES:
            seen.clear()
        seen[id(info)] = (info, info.generation, n)
        return n

    def rows(self, table: NodeTable, rows: IndexArray, key: str) -> IntArray:
        """Pods of workload `key` on each of `rows` of `table`."""
        infos = table.infos
        on = self.on
        return np.fromiter((on(infos[r], key) for r in rows.tolist()), dtype=np.int64, count=len(rows))

    def all_rows(self, table: NodeTable, key: str) -> IntArray:
        return self.rows(table, np.arange(len(table), dtype=np.intp), key)

    def _seen(self, key: str) -> dict[int, tuple[NodeInfo, int, int]]:
        seen = self._memo.get(key)
        if seen is None:
            if len(self._memo) >= _MAX_REMEMBERED_OWNERS:
                self._memo.popitem(last=False)
            seen = self._memo[key] = {}
        else:
            self._memo.move_to_end(key)
        return seen
