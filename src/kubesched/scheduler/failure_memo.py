"""Failed attempts repeated for pods of the same content while the cluster stands still.

While the cluster is full, every change that might help (a pod deleted anywhere) sends every
waiting pod back to the active queue, as kube-scheduler's queueing hints do. The first of them
takes the room, if any; the rest fail again, and pods created from one template fail in exactly the
same way: same PreFilter verdicts, same per-node Filter statuses, same preemption outcome, same
FailedScheduling message. `FailureMemo` keeps such a failure, keyed by the profile and the pod's
content (`pod_content`: all of it but name, uid and status), for as long as the *frame* stands:
the node table's nodes, the nominations and every other object. A change of frame starts a new,
empty memo.

Pods coming and going on nodes do not change the frame; the scheduler repeats a kept failure
after such changes only when no pod changed since it was made, or when every plugin says its part
survives pod changes (its PreFilter answer still holds, its Filter reads only the node, its
PostFilter reads only the statuses) and each node whose pods changed, filtered again, gives the
status it gave before. A failure that filtered only some nodes (PreFilter named them) moved the
filter pass's rotating start and is repeated only from the same start.

The scheduler keeps a failure only when every PreFilter, Filter and PostFilter plugin of the
profile promises that it repeats (`RepeatableFailurePlugin`), the pod was not nominated, no
extender took part, and the attempt nominated nobody and evicted nobody. A repeat still does what
the attempt did outside the plugins: it requeues the pod with the same rejecting plugins, records
the FailedScheduling event and condition, and redoes the plugins' random draws.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import Diagnosis, FitError, QueuedPodInfo, StatusColumns
from kubesched.scheduler.attempt import TOP_REASONS
from kubesched.scheduler.batch import OpportunisticBatch
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.nominator import Nominator

__all__ = [
    "AttemptStart",
    "ClusterFrame",
    "FailureMemo",
    "RepeatableFailure",
    "RepeatedFailures",
    "pod_content",
]

#: Failures kept in one frame; past this the memo forgets them all (memory stays bounded).
MAX_FAILURES = 4096
#: ...and at most about this many per-node status codes in all (two int32 arrays a failure).
MEMORY_CODES = 4_000_000
#: A kept failure is checked against at most this many nodes whose pods changed since; past
#: that, a full attempt is about as cheap.
MAX_REFILTERED_ROWS = 32

_encode = msgspec.msgpack.Encoder().encode


def pod_content(pod: Pod) -> bytes:
    """The pod without what tells it from its siblings (name, uid, status, timestamps): two pods
    with equal content get the same answer from plugins that read only content and cluster."""
    meta = pod.metadata
    return _encode((meta.namespace, meta.labels, meta.annotations, meta.owner_references, pod.spec))


class ClusterFrame(NamedTuple):
    """What a promised plugin reads besides the pod and the pods on nodes (which the node table's
    pod log follows): the nodes, the nominations and the other objects. Equal frames, same answers."""

    table: NodeTable
    node_generation: int
    nominations: int
    objects: int


class AttemptStart(NamedTuple):
    """The cluster as an attempt whose failure may be kept began: a failure is kept only if the
    attempt left the frame and the pod log as they were. (A tuple: one is made per attempt, and
    a frozen dataclass costs several times as much to build.)"""

    #: The pod's `pod_content`.
    content: bytes
    frame: ClusterFrame
    #: The node table's pod log position.
    position: int
    #: The filter pass's rotating start.
    start: int


@dataclass(slots=True)
class RepeatableFailure:
    """What a repeat of a failed attempt needs: the diagnosis (shared, never changed after the
    attempt), the reasons as counted, the PostFilter outcome and the attempt's own CycleState (for
    `Framework.repeat_failure`)."""

    diagnosis: Diagnosis
    num_all_nodes: int
    counts: Counter[str]
    #: The most common of them, as the attempt reported them.
    reasons: list[tuple[str, int]]
    #: The FailedScheduling message, PostFilter's part included.
    message: str
    state: CycleState
    #: The PostFilter result's nomination: None keeps the pod's (it had none), "" clears it.
    nominated: str | None
    #: Whether the attempt passed PreFilter and asked opportunistic batching for a hint.
    asked_for_hint: bool
    #: The filter pass's rotating start before the attempt (a repeat needs the same) and after it.
    start_before: int
    start_after: int
    #: The node table's pod log position the failure holds at (moved on when it is found to
    #: hold after later pod changes).
    position: int
    #: Per table row, the index of its status in the diagnosis' status columns (-1: none);
    #: built on first use, so that looking up a few nodes does not turn the columns into a dict.
    _codes_by_row: npt.NDArray[np.int32] | None = field(default=None, repr=False)

    def status_on(self, table: NodeTable, row: int) -> Status | None:
        """The status the failed attempt gave node `row` of `table` (None: not filtered)."""
        statuses = self.diagnosis.node_to_status
        columns: StatusColumns | None = getattr(statuses, "columns", None)
        if columns is None or columns.table is not table:
            found: Status | None = statuses.get(table.names[row])
            return found
        if self._codes_by_row is None:
            codes = np.full(len(table), -1, dtype=np.int32)
            codes[columns.rows] = columns.codes
            self._codes_by_row = codes
        code = int(self._codes_by_row[row])
        return None if code < 0 else columns.statuses[code]


class FailureMemo:
    """Failures kept for the one frame they were made in (see the module docstring)."""

    __slots__ = ("_failures", "_frame")

    def __init__(self) -> None:
        self._frame: ClusterFrame | None = None
        self._failures: dict[tuple[str, bytes], RepeatableFailure] = {}

    def get(self, frame: ClusterFrame, profile: str, content: bytes) -> RepeatableFailure | None:
        """The failure kept for pods of `content` in `profile`, if the cluster is still in `frame`."""
        if frame != self._frame:
            return None
        return self._failures.get((profile, content))

    def put(self, frame: ClusterFrame, profile: str, content: bytes, failure: RepeatableFailure) -> None:
        """Keep a failure made in `frame`; failures kept in any other frame are dropped."""
        limit = min(MAX_FAILURES, max(1, MEMORY_CODES // max(1, failure.num_all_nodes)))
        if frame != self._frame or len(self._failures) >= limit:
            self._failures = {}
            self._frame = frame
        self._failures[(profile, content)] = failure

    def __len__(self) -> int:
        return len(self._failures)


class RepeatedFailures:
    """The scheduler's use of the memo: when a failure may be kept, whether a kept one still holds,
    and its repeat."""

    def __init__(
        self,
        *,
        cache: Cache,
        nominator: Nominator,
        batches: Mapping[str, OpportunisticBatch],
        failures: Failures,
        with_extenders: bool,
    ) -> None:
        self._cache = cache
        self._nominator = nominator
        self._batches = batches
        self._failures = failures
        self._with_extenders = with_extenders
        self.memo = FailureMemo()
        #: Counts the events of objects other than nodes and pods (part of the frame).
        self.objects_version = 0

    def objects_changed(self) -> None:
        self.objects_version += 1

    def _frame(self, table: NodeTable | None = None) -> ClusterFrame:
        if table is None:
            table = self._cache.snapshot()
        return ClusterFrame(table, table.node_generation, self._nominator.version, self.objects_version)

    def _repeatable_content(self, fwk: Framework, qpi: QueuedPodInfo) -> bytes | None:
        """The pod's content (`pod_content`) when a failure of its attempt may be kept or repeated:
        every plugin up to PostFilter promises it, no extender takes part, the pod is not
        nominated (its nominated node is tried first) and batching has no node list to offer."""
        if not fwk.repeats_failures or self._with_extenders:
            return None
        pod = qpi.pod
        if pod.status.nominated_node_name or self._nominator.nominated_node(qpi.key) is not None:
            return None
        if not self._batches[fwk.profile_name].idle:
            return None
        known = qpi.content_key
        if known is not None and known[0] is pod:
            return known[1]
        content = pod_content(pod)
        qpi.content_key = (pod, content)
        return content

    def begin(self, fwk: Framework, qpi: QueuedPodInfo, start: int) -> AttemptStart | None:
        """The cluster as the pod's attempt begins at rotating start `start`; None when a failure
        of this attempt may be neither kept nor repeated."""
        content = self._repeatable_content(fwk, qpi)
        if content is None:
            return None
        table = self._cache.snapshot()
        return AttemptStart(content, self._frame(table), table.pod_log_position, start)

    def holding(self, fwk: Framework, qpi: QueuedPodInfo, begun: AttemptStart) -> RepeatableFailure | None:
        """The failure kept for pods like this one, if it holds now."""
        failure = self.memo.get(begun.frame, fwk.profile_name, begun.content)
        if failure is not None and self._still_fails(fwk, qpi, failure, begun.start):
            return failure
        return None

    def _still_fails(
        self, fwk: Framework, qpi: QueuedPodInfo, failure: RepeatableFailure, start: int
    ) -> bool:
        """Whether the kept failure holds now: no pod changed since, or every plugin's part survives
        pod changes and each node whose pods changed, filtered again with the failed attempt's
        state, gives the status it gave.

        A failure that filtered every node left the rotating start where it was and does not depend
        on it (only the order of its per-node statuses, a map upstream, follows the start); one that
        filtered fewer (PreFilter named the nodes) moved it, and is repeated only from the same start.
        """
        if failure.start_after != failure.start_before and failure.start_before != start:
            return False
        table = self._cache.snapshot()
        position = table.pod_log_position
        if failure.position == position:
            return True
        if self._nominator.has_nominated_pods():  # nominated pods take part in filtering a node
            return False
        rows = table.rows_changed_since(failure.position)
        if rows is None or len(rows) > MAX_REFILTERED_ROWS:
            return False
        if not fwk.failure_survives_pod_changes(failure.state, qpi.pod, table):
            return False
        diagnosis = failure.diagnosis
        if diagnosis.pre_filter_status is None:  # else no node was filtered: PreFilter still says no
            for row in rows:
                was = failure.status_on(table, row)
                info = table.infos[row]
                if was is None:
                    if diagnosis.absent_nodes_status is None:
                        return False
                    continue  # left out by PreFilter, which still answers the same
                now = fwk.run_filter_on_node(failure.state, qpi.pod, info)
                if now is None or now != was or now.plugin != was.plugin:
                    return False
        failure.position = position
        return True

    def keep(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        fit: FitError,
        begun: AttemptStart,
        *,
        nominated: str | None,
        start_after: int,
    ) -> None:
        """Keep a failed attempt, which nominated and evicted nobody (`nominated` is None or ""),
        for the next pods of the same content, if it changed nothing (the cluster is still as it
        `begun`) and every plugin says a repeat would fail the same way. `start_after`: the
        rotating start it left."""
        if self._frame() != begun.frame or self._cache.snapshot().pod_log_position != begun.position:
            return
        if not fwk.failure_repeats(state, qpi.pod):
            return
        counts = fit.reason_counts()
        failure = RepeatableFailure(
            diagnosis=fit.diagnosis,
            num_all_nodes=fit.num_all_nodes,
            counts=counts,
            reasons=counts.most_common(TOP_REASONS),
            message=str(fit),
            state=state,
            nominated=nominated,
            asked_for_hint=fit.diagnosis.pre_filter_status is None,
            start_before=begun.start,
            start_after=start_after,
            position=begun.position,
        )
        self.memo.put(begun.frame, fwk.profile_name, begun.content, failure)

    def repeat(
        self, fwk: Framework, qpi: QueuedPodInfo, failure: RepeatableFailure, started: float
    ) -> int | None:
        """Fail the pod as the kept attempt failed, redoing what that attempt changed besides the
        plugins' answers: their random draws, batching's count of cycles without a hint, the
        rotating start (returned when the attempt moved it; None: it did not), then the requeue,
        event and condition of any failure."""
        fwk.repeat_failure(failure.state)
        if failure.asked_for_hint:
            self._batches[fwk.profile_name].no_hint()  # idle, or the failure would not be repeated
        fit = FitError(qpi.pod, failure.num_all_nodes, failure.diagnosis, failure.counts, failure.message)
        self._failures.fail_fit(
            fwk, qpi, fit, started, nominated=failure.nominated, victims=[], reasons=failure.reasons
        )
        return failure.start_after if failure.start_after != failure.start_before else None
