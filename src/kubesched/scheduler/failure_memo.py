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
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Status
from kubesched.framework.types import Diagnosis, StatusColumns

__all__ = ["FailureMemo", "RepeatableFailure", "pod_content"]

#: Failures kept in one frame; past this the memo forgets them all (memory stays bounded).
MAX_FAILURES = 4096
#: ...and at most about this many per-node status codes in all (two int32 arrays a failure).
MEMORY_CODES = 4_000_000

_encode = msgspec.msgpack.Encoder().encode


def pod_content(pod: Pod) -> bytes:
    """The pod without what tells it from its siblings (name, uid, status, timestamps): two pods
    with equal content get the same answer from plugins that read only content and cluster."""
    meta = pod.metadata
    return _encode((meta.namespace, meta.labels, meta.annotations, meta.owner_references, pod.spec))


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
        self._frame: tuple[Any, ...] = ()
        self._failures: dict[tuple[str, bytes], RepeatableFailure] = {}

    def get(self, frame: tuple[Any, ...], profile: str, content: bytes) -> RepeatableFailure | None:
        """The failure kept for pods of `content` in `profile`, if the cluster is still in `frame`."""
        if frame != self._frame:
            return None
        return self._failures.get((profile, content))

    def put(self, frame: tuple[Any, ...], profile: str, content: bytes, failure: RepeatableFailure) -> None:
        """Keep a failure made in `frame`; failures kept in any other frame are dropped."""
        limit = min(MAX_FAILURES, max(1, MEMORY_CODES // max(1, failure.num_all_nodes)))
        if frame != self._frame or len(self._failures) >= limit:
            self._failures = {}
            self._frame = frame
        self._failures[(profile, content)] = failure

    def __len__(self) -> int:
        return len(self._failures)
