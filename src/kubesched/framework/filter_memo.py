"""Each pod shape's last Filter verdicts, so a retry (or the next replica) re-filters only the nodes
that changed since.

A pod that fits nowhere is retried after any change that might help it: while a cluster is full,
every pod that finishes sends every waiting pod back to the scheduler (NodeResourcesFit's queueing
hint does so, as upstream's), and each retry filtered every node again to learn that, on all but
the one node that changed, nothing had. When every Filter plugin the pod meets reads only the pod
and the node it judges (`NodeLocalFilterPlugin`), a verdict can change only on nodes whose pods
changed, which the node table logs (`NodeTable.rows_changed_since`). The retry then runs the filters on
those rows alone and keeps the rest: the same outcome as filtering everything, for a fraction of it.

Verdicts are kept per pod *shape*: what those plugins read from a pod (their `sign_pod` fragments,
`Framework.filter_shape`), so the dozens of waiting pods of one shape retried after the same
change share one re-filtering, and so do a workload's replicas created one after another (the
verdicts are kept whether or not a node fit); a pod without a shape keeps its own while it fits
nowhere. Everything else starts over with a full pass: another pod object (an update) for a pod's
own verdicts, another table (a node added or removed), a Node changed in place, any other object
changed (`forget_all`: a DeviceClass can change what NodeResourcesFit checks), or another set of
plugins skipped by PreFilter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.outcomes import FilterOutcome
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status

__all__ = ["FilterMemo"]

#: About this many status codes are kept per pod in all (4 bytes a node); older pods are dropped.
MEMORY_CODES = 8_000_000
#: Keep at most this many statuses nobody points at before compacting a pod's status list.
SPARE_STATUSES = 32
#: Pods whose shape is remembered (each a reference and a few hundred bytes); oldest dropped first.
MAX_SHAPES = 65_536

#: Verdicts are found by (profile, plugins PreFilter skipped, the pod's shape or its key).
_Key = tuple[int, frozenset[str], bytes | str]


@dataclass(slots=True)
class _Verdicts:
    """What the last full-or-patched filter pass found, and the table state it saw. `pod` is set
    for a pod's own verdicts (no shape), which hold only for that very pod object."""

    pod: Pod | None
    framework: Framework
    table: NodeTable
    node_generation: int
    position: int
    status_idx: npt.NDArray[np.int32]
    statuses: list[Status]


class FilterMemo:
    """Filter outcomes by pod shape (or pod), patched for the next pod of that shape."""

    def __init__(self, memory_codes: int = MEMORY_CODES) -> None:
        self._memory_codes = memory_codes
        self._verdicts: dict[_Key, _Verdicts] = {}
        self._shapes: dict[str, tuple[Pod, bytes | None]] = {}  # pod key -> (pod object, its shape)

    def __len__(self) -> int:
        return len(self._verdicts)

    def run_filter(
        self, fwk: Framework, state: CycleState, pod: Pod, key: str, nodes: NodeSet
    ) -> FilterOutcome:
        """`fwk.run_filter(state, pod, nodes)`, re-filtering only changed rows when it can."""
        if not nodes.full or not fwk.filters_read_only_the_node(state.skip_filter_plugins):
            return fwk.run_filter(state, pod, nodes)
        table = nodes.table
        skipped = frozenset(state.skip_filter_plugins)
        # The shape is worked out only when something is kept to look up, or to keep: a cluster
        # with room (nothing kept, every pod fits) pays nothing for it.
        found = self._key(fwk, pod, key, skipped) if self._verdicts else None
        known = self._verdicts.pop(found[0], None) if found is not None else None
        outcome: FilterOutcome | None = None
        if (
            known is not None
            and found is not None
            and known.pod is found[1]
            and known.framework is fwk
            and known.table is table
            and known.node_generation == table.node_generation
        ):
            outcome = _patched(fwk, state, pod, nodes, known)
        if outcome is None:
            outcome = fwk.run_filter(state, pod, nodes)
        if outcome.error is None:
            memo_key, own = found if found is not None else self._key(fwk, pod, key, skipped)
            # A shape's verdicts are kept whether or not a node fit: the next pod of the shape (a
            # sibling replica, or this one retried) re-filters only what changed since. A pod's
            # own verdicts serve only its retries: none is coming once it fits somewhere.
            if own is not None and (outcome.status_idx < 0).any():
                return outcome
            self._remember(
                memo_key,
                _Verdicts(
                    own,
                    fwk,
                    table,
                    table.node_generation,
                    table.pod_log_position,
                    outcome.status_idx,
                    outcome.statuses,
                ),
            )
        return outcome

    def _key(self, fwk: Framework, pod: Pod, key: str, skipped: frozenset[str]) -> tuple[_Key, Pod | None]:
        """Where the pod's verdicts are kept, and the pod object they hold for (None: its shape)."""
        shape = self._shape(fwk, pod, key)
        if shape is None:
            return (id(fwk), skipped, key), pod
        return (id(fwk), skipped, shape), None

    def bound(self, key: str) -> None:
        """The pod was bound: its shape is not asked for again (kept, it would hold the pod object
        of every pod scheduled, up to MAX_SHAPES). Its own verdicts age out with the others."""
        self._shapes.pop(key, None)

    def forget(self, key: str) -> None:
        """The pod left the queue: drop what is kept for it alone."""
        self._shapes.pop(key, None)
        for memo_key in [k for k in self._verdicts if k[2] == key]:
            del self._verdicts[memo_key]

    def forget_all(self) -> None:
        """Something besides nodes and pods changed: no verdict can be trusted to still hold."""
        self._verdicts.clear()

    def _shape(self, fwk: Framework, pod: Pod, key: str) -> bytes | None:
        """The pod's shape, computed once per pod object (a retry asks again for the same one)."""
        cached = self._shapes.get(key)
        if cached is not None and cached[0] is pod:
            return cached[1]
        shape = fwk.filter_shape(pod)
        self._shapes[key] = (pod, shape)
        if len(self._shapes) > MAX_SHAPES:
            del self._shapes[next(iter(self._shapes))]
        return shape

    def _remember(self, key: _Key, verdicts: _Verdicts) -> None:
        self._verdicts[key] = verdicts
        limit = max(1, self._memory_codes // max(1, len(verdicts.status_idx)))
        while len(self._verdicts) > limit:
            del self._verdicts[next(iter(self._verdicts))]  # the longest unvisited first


def _patched(
    fwk: Framework, state: CycleState, pod: Pod, nodes: NodeSet, known: _Verdicts
) -> FilterOutcome | None:
    """`known` with the rows whose pods changed since re-filtered; None when the log is too short."""
    changed = nodes.table.rows_changed_since(known.position)
    if changed is None:
        return None
    status_idx = known.status_idx.copy()
    statuses = list(known.statuses)
    if changed:
        rows = np.asarray(changed, dtype=np.intp)
        fresh = fwk.run_filter(state, pod, NodeSet(nodes.table, rows))
        if fresh.error is not None:
            return FilterOutcome(nodes, status_idx, statuses, fresh.error)
        # An equal verdict from the same plugin reuses the known Status, as a full pass shares one
        # Status among the nodes a plugin rejects alike: the list stays short, and so do counts.
        where = {(st, st.plugin): i for i, st in enumerate(statuses)}
        renumber = np.empty(len(fresh.statuses), dtype=np.int32)
        for j, st in enumerate(fresh.statuses):
            renumber[j] = where.setdefault((st, st.plugin), len(statuses))
            if renumber[j] == len(statuses):
                statuses.append(st)
        codes = fresh.status_idx
        status_idx[rows] = np.where(codes < 0, -1, renumber[np.maximum(codes, 0)]) if len(renumber) else -1
        if len(statuses) > SPARE_STATUSES:
            status_idx, statuses = _compacted(status_idx, statuses)
    return FilterOutcome(nodes, status_idx, statuses)


def _compacted(
    status_idx: npt.NDArray[np.int32], statuses: list[Status]
) -> tuple[npt.NDArray[np.int32], list[Status]]:
    """Drop statuses no node points at any more (each patch appends the changed rows' statuses)."""
    used = np.unique(status_idx[status_idx >= 0])
    if len(statuses) - len(used) <= SPARE_STATUSES:
        return status_idx, statuses
    renumber = np.full(len(statuses), -1, dtype=np.int32)
    renumber[used] = np.arange(len(used), dtype=np.int32)
    compact = np.where(status_idx < 0, -1, renumber[np.maximum(status_idx, 0)]).astype(np.int32)
    return compact, [statuses[int(i)] for i in used]
