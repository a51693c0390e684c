"""Opportunistic batching (KEP-5598, on by default since v1.35): reuse one pod's scored node list
for the next pod with the same signature.

After a signable pod is placed by a full Filter + Score pass, the other feasible nodes, best first,
are kept with the pod's signature. The next scheduling cycle may take its node from that list
instead of filtering and scoring every node, if all of these hold (else it runs the full pass and the
reason is counted in `scheduler_batch_cache_flushed_total`, as kube-scheduler counts it):

* it is the very next cycle (`pod_skipped`: another pod, or a failed attempt, came in between);
* the pod has the same signature (`pod_incompatible`);
* the list is younger than `MAX_BATCH_AGE` on the scheduler's clock (`expired`);
* the node chosen last time still exists (`node_missing`).

The node chosen last time is filtered again for the new pod: if it no longer fits, it simply
stays out of the list (the one-pod-per-node case); if it still fits, v1.37 rescores it (PreScore
and Score on that node, NormalizeScore over it and the nodes kept, from their scores before
normalization) and ranks the list again. The best node of the list is the
*hint*: the cycle filters it first and, if it fits, takes it without scoring any other node;
otherwise it runs the full pass and stores a fresh list.

The clock is the scheduler's: wall time in `kubesched run`, virtual time in `kubesched simulate`,
where a burst of pods created together is scheduled in no time and therefore batches, as
kube-scheduler batches a burst it schedules faster than 500 ms.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.runtime import Framework
from kubesched.scheduler.clock import Clock

__all__ = [
    "MAX_BATCH_AGE",
    "BatchMetrics",
    "OpportunisticBatch",
    "RunnersUp",
]

IntArray = npt.NDArray[np.int64]

#: Seconds a stored list may be reused (upstream's maxBatchAge).
MAX_BATCH_AGE = 0.5

# scheduler_batch_attempts_total{result}
NO_HINT = "no_hint"
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
# scheduler_batch_cache_flushed_total{reason}
POD_SKIPPED = "pod_skipped"
POD_INCOMPATIBLE = "pod_incompatible"
EXPIRED = "expired"
NODE_MISSING = "node_missing"
NODE_NOT_FULL = "node_not_full"
EMPTY_LIST = "empty_list"
POD_NOT_BATCHABLE = "pod_not_batchable"


class BatchMetrics(Protocol):
    """Where batching reports, with upstream's metric names (implemented by `kubesched.metrics`)."""

    def observe_batch_attempt(self, profile: str, result: str) -> None: ...

    def observe_batch_flush(self, profile: str, reason: str) -> None: ...

    def observe_node_hint(self, profile: str, hinted: bool, seconds: float) -> None: ...

    def observe_store_results(self, profile: str, seconds: float) -> None: ...

    def observe_rescore(self, profile: str, seconds: float) -> None: ...


@dataclass(slots=True)
class RunnersUp:
    """The feasible nodes a full pass did not choose, for the next pod with the same signature:
    their totals, each plugin's scores before NormalizeScore (to normalize a rescored node with
    them, as a full pass would), and their evaluation order (which of equal totals comes first)."""

    names: list[str]
    totals: IntArray
    raw: dict[str, IntArray]
    order: IntArray


@dataclass(slots=True)
class _Stored:
    signature: bytes
    nodes: RunnersUp
    #: Entries still in the list (a hint taken, or a full node, leaves it).
    alive: npt.NDArray[np.bool_]
    created: float

    def best(self) -> int | None:
        """Index of the best entry left: highest total, then earliest evaluated."""
        left = np.flatnonzero(self.alive)
        if len(left) == 0:
            return None
        key = np.lexsort((self.nodes.order[left], -self.nodes.totals[left]))
        return int(left[key[0]])


@dataclass(slots=True)
class OpportunisticBatch:
    """One profile's batch state. Counts are kept here too (tests read them; metrics mirror them)."""

    fwk: Framework
    clock: Clock
    metrics: BatchMetrics | None = None
    #: False: every pod counts as unsignable (a profile with extenders, as upstream).
    signs: bool = True
    #: The OpportunisticBatching gate: off, no pod is signed, asks for a hint or stores a list, and
    #: nothing is counted (upstream builds no batch).
    enabled: bool = True
    stored: _Stored | None = None
    last_cycle: int = -1
    last_chosen: str = ""
    attempts: Counter[str] = field(default_factory=Counter)
    flushes: Counter[str] = field(default_factory=Counter)
    rescores: int = 0

    # ------------------------------------------------------------------ the cycle asks
    @property
    def idle(self) -> bool:
        """No node list to offer: the next `node_hint` gives no hint whatever the pod."""
        return self.stored is None or not self.stored.alive.any()

    def node_hint(
        self, state: CycleState, pod: Pod, cycle: int, table: NodeTable
    ) -> tuple[str, bytes | None]:
        """(hint or "", the pod's signature). Called after PreFilter, whose state Filter reads."""
        if not self.enabled:
            return "", None
        started = time.perf_counter()
        signature = self.fwk.sign_pod(pod) if self.signs else None
        if not self._usable(state, pod, signature, cycle, table):
            self._no_hint(started)
            return "", signature
        assert self.stored is not None
        best = self.stored.best()
        assert best is not None
        self.stored.alive[best] = False
        hint = self.stored.nodes.names[best]
        if self.metrics is not None:
            self.metrics.observe_node_hint(self.fwk.profile_name, True, time.perf_counter() - started)
        return hint, signature

    def no_hint(self) -> None:
        """What `node_hint` does while `idle` (no hint, whatever the pod), without signing the pod:
        for a repeated failure, which is repeated only while the batch is idle."""
        assert self.idle
        if self.enabled:
            self._no_hint(time.perf_counter())

    def _no_hint(self, started: float) -> None:
        self._attempt(NO_HINT)
        if self.metrics is not None:
            self.metrics.observe_node_hint(self.fwk.profile_name, False, time.perf_counter() - started)

    def store(
        self,
        signature: bytes | None,
        hinted: str,
        chosen: str,
        cycle: int,
        runners_up: RunnersUp | None = None,
        *,
        left: int = 0,
    ) -> None:
        """After a successful cycle: remember it, and keep the runners-up when the pod was signable
        and placed by a full pass. `left` counts the other feasible nodes when `runners_up` was not
        built (an unsignable pod), for the flush reason."""
        if not self.enabled:
            return
        started = time.perf_counter()
        self.last_cycle = cycle
        self.last_chosen = chosen
        if hinted and hinted == chosen:
            self._attempt(HINT_USED)
        else:
            if hinted:
                self._attempt(HINT_NOT_USED)
            if signature is not None and runners_up is not None and runners_up.names:
                alive = np.ones(len(runners_up.names), dtype=np.bool_)
                self.stored = _Stored(signature, runners_up, alive, self.clock.now())
            else:
                self.stored = None
                some = left or (runners_up is not None and runners_up.names)
                self._flush(POD_NOT_BATCHABLE if some else EMPTY_LIST)
        if self.metrics is not None:
            self.metrics.observe_store_results(self.fwk.profile_name, time.perf_counter() - started)

    # ------------------------------------------------------------------ rules
    def _usable(
        self, state: CycleState, pod: Pod, signature: bytes | None, cycle: int, table: NodeTable
    ) -> bool:
        stored = self.stored
        if stored is None or not stored.alive.any():
            return False
        if cycle != self.last_cycle + 1:
            return self._flush(POD_SKIPPED)
        if signature is None or signature != stored.signature:
            return self._flush(POD_INCOMPATIBLE)
        if self.clock.now() > stored.created + MAX_BATCH_AGE:
            return self._flush(EXPIRED)
        row = table.index.get(self.last_chosen)
        if row is None:
            return self._flush(NODE_MISSING)
        info = table.infos[row]
        status = self.fwk.run_filter_on_node(state, pod, info)
        if status is None:
            # Still room on the node just used: v1.37 scores it again and puts it back in line.
            if not self._rescore(state, pod, table, self.last_chosen):
                return self._flush(NODE_NOT_FULL)
        elif not status.is_rejected():
            return self._flush(NODE_NOT_FULL)
        return bool(stored.alive.any())

    def _rescore(self, state: CycleState, pod: Pod, table: NodeTable, node: str) -> bool:
        """Score `node` again for `pod` and put it back in the list; every entry is normalized
        again with it, over the nodes left, as a full pass over them would."""
        assert self.stored is not None
        started = time.perf_counter()
        self.rescores += 1
        try:
            return self._rescore_into(self.stored, state, pod, table, node)
        finally:
            if self.metrics is not None:
                self.metrics.observe_rescore(self.fwk.profile_name, time.perf_counter() - started)

    def _rescore_into(
        self, stored: _Stored, state: CycleState, pod: Pod, table: NodeTable, node: str
    ) -> bool:
        fwk = self.fwk
        one = NodeSet(table, np.asarray([table.index[node]], dtype=np.intp))
        if fwk.run_pre_score(state, pod, one) is not None:
            return False
        fresh = fwk.run_score(state, pod, one, normalize=False)
        kept = stored.nodes
        if fresh.error is not None or fresh.raw.keys() != kept.raw.keys():
            return False
        kept.names.append(node)
        kept.raw = {p: np.append(kept.raw[p], fresh.raw[p]) for p in kept.raw}
        kept.totals = np.append(kept.totals, 0)
        kept.order = np.append(kept.order, int(kept.order.max(initial=-1)) + 1)
        stored.alive = np.append(stored.alive, True)
        # A node gone from the cluster since cannot be normalized with the others: it leaves.
        for i in np.flatnonzero(stored.alive).tolist():
            if kept.names[i] not in table.index:
                stored.alive[i] = False
        left = np.flatnonzero(stored.alive)
        nodes = NodeSet(table, np.asarray([table.index[kept.names[i]] for i in left.tolist()], dtype=np.intp))
        totals, error = fwk.normalized_totals(state, pod, nodes, {p: a[left] for p, a in kept.raw.items()})
        if error is not None:
            return False
        kept.totals[left] = totals if fwk.has_score_plugins() else 1
        return True

    def _flush(self, reason: str) -> bool:
        """Count why the list cannot serve this cycle. Like upstream, the list itself is replaced
        (or dropped) only when this cycle's pod is placed, so a stale list is counted each time."""
        self.flushes[reason] += 1
        if self.metrics is not None:
            self.metrics.observe_batch_flush(self.fwk.profile_name, reason)
        return False

    def _attempt(self, result: str) -> None:
        self.attempts[result] += 1
        if self.metrics is not None:
            self.metrics.observe_batch_attempt(self.fwk.profile_name, result)
