"""The scheduling queue: activeQ, backoffQ and the unschedulable pool (upstream PriorityQueue,
`pkg/scheduler/backend/queue/scheduling_queue.go`).

Synchronous and single-threaded: the caller serialises access (live mode wraps it in a lock and a
condition), and time comes from the injected clock, so a simulation replays exactly. Every tie is
broken by an insertion sequence number for the same reason.

Where a pod can be:

* activeQ — ready to be popped, ordered by the QueueSort plugin's `less`.
* backoffQ — rejected or failed recently; waits out `backoff_expiry` (two heaps: rejections and
  errors, because only the rejection heap may be popped early).
* unschedulable pool — waits for a cluster event whose queueing hint says it may help; pods held by
  a PreEnqueue plugin also live here, with `gating_plugin` set, and are counted as `gated`.
* in flight — popped and being scheduled; cluster events seen meanwhile are kept so that a pod
  rejected by a now-stale snapshot is not parked forever.

Whether an event may help a pod, and how soon to retry it, is queueing_hints.py's answer.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from kubesched.api.objects import Pod
from kubesched.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    ClusterEventWithHint,
)
from kubesched.framework.node_info import PodInfo
from kubesched.framework.status import Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.scheduler.active_items import ActiveItem, Less, RankedItem, SortKey
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.queueing_hints import Strategy, pod_update_events, worth_requeuing
from kubesched.scheduler.unschedulable_pool import UnschedulablePool

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "GATED",
    "IN_FLIGHT",
    "UNSCHEDULABLE",
    "QueueProfile",
    "SchedulingQueue",
]

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

# Event labels for `scheduler_queue_incoming_pods_total`.
POD_ADD = "PodAdd"
POD_UPDATE = "PodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
#: A decision dropped just before its bind (stale, or the scheduler stopped leading): retried at once.
BIND_ABANDONED = "BindAbandoned"

#: activeQ's heap is rebuilt without its stale entries once they are more than half of it (and more
#: than this many): a pop then no longer walks through them one by one.
STALE_HEAP_SLACK = 64


class QueueProfile(Protocol):
    """What the queue needs from a scheduling profile (one per `spec.schedulerName`)."""

    @property
    def enqueue_events(self) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        """Plugin name -> the cluster events (with hints) that may make its rejections stale.

        Read once per profile. A plugin absent from the mapping (no EnqueueExtensions) is moved by
        any event, as upstream registers such plugins for the wildcard event; a plugin mapped to an
        empty list is moved by no event (only by the leftover flush).
        """
        ...

    def run_pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        """Run the PreEnqueue plugins: `("", None)` admits; else the gating plugin and its status."""
        ...


@dataclass(slots=True)
class _BackoffEntry:
    qpi: QueuedPodInfo
    expiry: float
    seq: int
    errors: bool


@dataclass(slots=True)
class _InFlight:
    """A popped pod: where its event window starts, plus what happened to it meanwhile."""

    qpi: QueuedPodInfo
    first_event: int
    latest: PodInfo | None = None
    deleted: bool = False
    activated: bool = False


@dataclass(slots=True)
class _Event:
    seq: int
    event: ClusterEvent
    old_obj: Any
    new_obj: Any


class SchedulingQueue:
    """activeQ + backoffQ + unschedulable pool, moved between by cluster events and queueing hints."""

    def __init__(
        self,
        less: Less,
        clock: Clock,
        *,
        profiles: Mapping[str, QueueProfile],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = 300.0,
        pop_from_backoff: bool = True,
        nominator: Nominator | None = None,
        sort_key: SortKey | None = None,
    ) -> None:
        if initial_backoff < 0 or max_backoff < 0 or max_in_unschedulable < 0:
            raise ValueError("queue durations must not be negative")
        self._less = less
        #: `less` as a key, when the QueueSort plugin has one: the heap then compares tuples.
        self._sort_key = sort_key
        self._clock = clock
        self._profiles = profiles
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.pop_from_backoff = pop_from_backoff
        #: Nominations follow the pod through update and delete, as upstream keeps them in the queue.
        self.nominator = nominator
        #: (queue, event label) -> pods that entered that queue; `scheduler_queue_incoming_pods_total`.
        self.incoming: Counter[tuple[str, str]] = Counter()

        self._seq = 0
        self._active: dict[str, ActiveItem] = {}
        self._active_heap: list[ActiveItem] = []
        self._active_dirty = False
        self._backoff: dict[str, _BackoffEntry] = {}
        self._backoff_heap: list[tuple[float, int, str]] = []
        self._error_backoff_heap: list[tuple[float, int, str]] = []
        self._registered: dict[str, Mapping[str, Sequence[ClusterEventWithHint]]] = {}
        self._pool = UnschedulablePool(self._registrations)
        self._in_flight: dict[str, _InFlight] = {}
        self._events: deque[_Event] = deque()
        self._event_seq = 0
        self._scheduling_cycle = 0
        self._move_request_cycle = -1

    # ------------------------------------------------------------------ pending pods in

    def add(self, pod_info: PodInfo) -> str:
        """A new pending pod: PreEnqueue decides between activeQ and the gated pool. Returns where it went.

        A pod the queue already holds is treated as an update, so a replayed informer Add is harmless.
        """
        pod = pod_info.pod
        if pod.spec.scheduler_name not in self._profiles:
            raise ValueError(
                f"pod {pod.key} names scheduler {pod.spec.scheduler_name!r}, which has no profile"
            )
        if pod_info.key in self._in_flight or self.where(pod_info.key) is not None:
            self.update(pod, pod_info)
            return self.where(pod_info.key) or IN_FLIGHT
        if self.nominator is not None:
            self.nominator.add(pod_info)
        return self._move_to_active(QueuedPodInfo(pod_info, timestamp=self._clock.now()), POD_ADD)

    def update(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        """A pending pod changed: update it where it is, and requeue it if the change may help.

        Gated pods go through PreEnqueue again (e.g. their scheduling gates were removed). Pods in the
        pool are requeued per the hints registered for the Pod update events the change produces. A
        pod now bound (`spec.nodeName` set) leaves the queue: someone else placed it. An unknown pod
        is added as new.
        """
        key = new_pod_info.key
        new_pod = new_pod_info.pod
        if new_pod.spec.node_name:
            self.delete(key)
            return
        if self.nominator is not None:
            self.nominator.update(old_pod, new_pod_info)

        if (item := self._active.get(key)) is not None:
            item.qpi.pod_info = new_pod_info
            # `less` may read anything in the pod, so its heap position may be wrong now: rebuild the
            # heap (once, at the next pop) rather than guess.
            self._active_dirty = True
            return
        if (entry := self._backoff.get(key)) is not None:
            entry.qpi.pod_info = new_pod_info
            return
        if (qpi := self._pool.get(key)) is not None:
            events = pod_update_events(
                old_pod, new_pod, old_requests=qpi.pod_info.requests, new_requests=new_pod_info.requests
            )
            qpi.pod_info = new_pod_info
            self._pool.add(qpi)  # filed again: a HintIndex may key it by what changed
            if qpi.gating_plugin:
                self._remove_from_pool(key)
                self._move_to_active(qpi, events[0].label if events else POD_UPDATE)
                return
            best, label = Strategy.SKIP, ""
            for event in events:
                strategy = self._worth_requeuing(qpi, event, old_pod, new_pod)
                if strategy > best:
                    best, label = strategy, event.label
            if best != Strategy.SKIP:
                self._remove_from_pool(key)
                self._requeue(qpi, best, label)
            return
        if (rec := self._in_flight.get(key)) is not None:
            # Being scheduled: keep the newest object for its requeue and let its update count as an
            # event that happened during the attempt.
            old_requests = (rec.latest or rec.qpi.pod_info).requests
            rec.latest = new_pod_info
            for event in pod_update_events(
                old_pod, new_pod, old_requests=old_requests, new_requests=new_pod_info.requests
            ):
                self._record_event(event, old_pod, new_pod)
            return
        self._move_to_active(QueuedPodInfo(new_pod_info, timestamp=self._clock.now()), POD_UPDATE)

    def delete(self, pod_key: str) -> None:
        """The pod is gone (or bound elsewhere): drop it from every queue and from the nominator."""
        if self.nominator is not None:
            self.nominator.delete(pod_key)
        # Heap entries without a matching dict entry are skipped when they surface.
        self._active.pop(pod_key, None)
        self._backoff.pop(pod_key, None)
        if pod_key in self._pool:
            self._remove_from_pool(pod_key)
        if (rec := self._in_flight.get(pod_key)) is not None:
            rec.deleted = True

    # ------------------------------------------------------------------ the scheduling cycle

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None when activeQ is empty (never blocks).

        With `pop_from_backoff` (SchedulerPopFromBackoffQ) an idle scheduler takes the rejection
        backoffQ head early rather than sit idle; pods backing off after an Error are never taken.
        """
        qpi = self._pop_active()
        if qpi is None and self.pop_from_backoff:
            qpi = self._pop_rejection_backoff()
        if qpi is None:
            return None
        now = self._clock.now()
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        self._scheduling_cycle += 1
        self._in_flight[qpi.key] = _InFlight(qpi, self._event_seq)
        return qpi

    def take(self, pod_keys: Iterable[str]) -> list[QueuedPodInfo]:
        """The other queued pods of the pod group whose member `pop` returned, in flight with it.

        Upstream queues a PodGroup's pods as one entity and pops them together; here each member is
        queued on its own and the pod-group cycle takes the rest when the first is popped: out of
        activeQ, backoffQ or the pool, counted as attempted, their events kept as for a popped pod.
        A gated member is asked PreEnqueue again and stays gated if still held. Unknown keys and
        pods already in flight are skipped.
        """
        taken: list[QueuedPodInfo] = []
        now = self._clock.now()
        for key in pod_keys:
            qpi: QueuedPodInfo | None = None
            if (item := self._active.pop(key, None)) is not None:
                qpi = item.qpi  # its heap entry is skipped when it surfaces
            elif (entry := self._backoff.pop(key, None)) is not None:
                qpi = entry.qpi
            elif key in self._pool:
                qpi = self._remove_from_pool(key)
                if qpi.gating_plugin and not self._admit(qpi):
                    continue
            if qpi is None:
                continue
            qpi.attempts += 1
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = now
            self._in_flight[key] = _InFlight(qpi, self._event_seq)
            taken.append(qpi)
        return taken

    def in_flight(self, pod_key: str) -> bool:
        """Whether the pod was popped (or taken with its group) and its cycle is not over."""
        return pod_key in self._in_flight

    def done(self, pod_key: str) -> None:
        """The pod's cycle is over (bound, requeued or dropped): forget it and events only it needed."""
        if self._in_flight.pop(pod_key, None) is None:
            return
        if not self._in_flight:
            self._events.clear()
            return
        oldest = min(rec.first_event for rec in self._in_flight.values())
        while self._events and self._events[0].seq < oldest:
            self._events.popleft()

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> str | None:
        """Requeue a pod after a failed attempt; returns the queue it went to (None: dropped).

        The queue owns the backoff counters: a failure with no rejecting plugin is an Error
        (`consecutive_errors` += 1, always backs off); otherwise `unschedulable_count` += 1 and the
        events seen while the pod was in flight decide between activeQ, backoffQ and the pool. A pod
        deleted during its attempt is dropped; one updated meanwhile comes back as its newest object.
        """
        settled, where, rec = self._prepare_return(qpi)
        if settled:
            return where
        if not (qpi.unschedulable_plugins or qpi.pending_plugins):
            qpi.consecutive_errors += 1
            strategy = Strategy.AFTER_BACKOFF
        else:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors = 0
            strategy = self._strategy_for_in_flight(qpi, rec, scheduling_cycle)
        return self._requeue(qpi, strategy, SCHEDULE_ATTEMPT_FAILURE)

    def requeue_group_member(
        self, qpi: QueuedPodInfo, *, unschedulable_count: int, consecutive_errors: int, backoff: bool
    ) -> str | None:
        """A pod of a PodGroup back after its group's cycle (upstream AddAttemptedPodGroupIfNeeded):
        it carries the group's counters and goes to backoffQ while the group backs off (`backoff`),
        else to activeQ through PreEnqueue; never to the pool. Returns the queue (None: deleted).
        Upstream's group entity carries no rejecting plugins, so no cluster event moves it early."""
        settled, where, _ = self._prepare_return(qpi)
        if settled:
            return where
        qpi.unschedulable_count = unschedulable_count
        qpi.consecutive_errors = consecutive_errors
        if backoff and self.is_backing_off(qpi):
            # The group entity has no rejecting plugins of its own, so upstream keeps it in the
            # error backoff heap, which an idle scheduler does not pop early.
            return self._push_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE, errors=True)
        return self._move_to_active(qpi, SCHEDULE_ATTEMPT_FAILURE)

    def retry_now(self, qpi: QueuedPodInfo) -> str | None:
        """Straight back to activeQ (through PreEnqueue), no backoff and no failure counted: for a pod
        whose decision was dropped before its bind was sent. Returns the queue it went to (None: it
        was deleted meanwhile); a pod already queued again (e.g. by an update) stays where it is."""
        settled, where, _ = self._prepare_return(qpi)
        if settled:
            return where
        return self._move_to_active(qpi, BIND_ABANDONED)

    @property
    def scheduling_cycle(self) -> int:
        """How many pods have been popped; pass the value seen at pop to add_unschedulable_if_not_present."""
        return self._scheduling_cycle

    # ------------------------------------------------------------------ moves

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old_obj: Any = None, new_obj: Any = None, *, exclude: str | None = None
    ) -> int:
        """A cluster event: requeue the pool pods whose rejecting plugins' hints say it may help.

        Returns how many pods left the pool (to activeQ or backoffQ). The event is also remembered
        for the pods in flight, which are judged against it when they come back. `exclude` names a
        pod the event must not move (a failed bind's own pod, which caused the event).
        """
        self._record_event(event, old_obj, new_obj)
        self._move_request_cycle = self._scheduling_cycle
        if not self._pool:  # every bind and delete lands here; most find nobody waiting
            return 0
        return self._move_pool_pods(
            self._pool.candidates(event, exclude, old_obj, new_obj), event, old_obj, new_obj
        )

    def flush_backoff_completed(self) -> int:
        """Backoff over -> activeQ (through PreEnqueue). Returns the number of pods moved."""
        now = self._clock.now()
        due: list[tuple[float, int, str]] = []
        for heap in (self._backoff_heap, self._error_backoff_heap):
            while heap and heap[0][0] <= now:
                expiry, seq, key = heapq.heappop(heap)
                entry = self._backoff.get(key)
                if entry is not None and entry.seq == seq:
                    due.append((expiry, seq, key))
        due.sort()
        for _, _, key in due:
            self._move_to_active(self._backoff.pop(key).qpi, BACKOFF_COMPLETE)
        return len(due)

    def flush_unschedulable_leftover(self) -> int:
        """Pods parked longer than `max_in_unschedulable` are retried as if any event had happened.

        This is the safety net for plugins whose events never come. Gated pods are left alone: they
        wait on their gating plugin, not on a retry. Returns the number of pods moved.
        """
        now = self._clock.now()
        stale = [
            qpi
            for qpi in self._pool.values()
            if not qpi.gating_plugin and now - qpi.timestamp >= self.max_in_unschedulable
        ]
        return self._move_pool_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    def activate(self, pod_keys: Iterable[str]) -> int:
        """ForceActivate (a plugin's PodsToActivate): pool or backoffQ -> activeQ, ignoring backoff.

        A pod in flight is marked so that, if its attempt fails, it is requeued as if a wildcard event
        had arrived instead of being parked. Returns the number of pods moved now.
        """
        moved = 0
        for key in pod_keys:
            qpi: QueuedPodInfo | None = None
            if (entry := self._backoff.pop(key, None)) is not None:
                qpi = entry.qpi
            elif key in self._pool:
                qpi = self._remove_from_pool(key)
            elif key not in self._active and (rec := self._in_flight.get(key)) is not None:
                rec.activated = True
                self._move_request_cycle = self._scheduling_cycle
            if qpi is not None and self._move_to_active(qpi, FORCE_ACTIVATE.label) == ACTIVE:
                moved += 1
        return moved

    def run_periodic(self) -> int:
        """Both flushes, for the scheduling loop to call (upstream: every 1 s and every 30 s)."""
        return self.flush_backoff_completed() + self.flush_unschedulable_leftover()

    def next_backoff_expiry(self) -> float | None:
        """When the earliest backoff ends (either heap); None when backoffQ is empty."""
        times: list[float] = []
        for heap in (self._backoff_heap, self._error_backoff_heap):
            self._drop_stale_backoff_heads(heap)
            if heap:
                times.append(heap[0][0])
        return min(times) if times else None

    def next_wakeup(self) -> float | None:
        """When the next backoff ends or the next leftover flush is due; None if nothing is waiting.

        The simulator advances its virtual clock to this time when activeQ is empty. Pool pods make
        a leftover flush due every `max_in_unschedulable`, so a loop that must end should also stop
        once such retries stop making progress.
        """
        backoff = self.next_backoff_expiry()
        times = [] if backoff is None else [backoff]
        pooled = [qpi.timestamp for qpi in self._pool.values() if not qpi.gating_plugin]
        if pooled:
            times.append(min(pooled) + self.max_in_unschedulable)
        return min(times) if times else None

    # ------------------------------------------------------------------ backoff

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """`initial * 2**(count-1)` capped at max; count is the error streak if any, else rejections."""
        count = qpi.consecutive_errors if qpi.consecutive_errors > 0 else qpi.unschedulable_count
        if count <= 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(count - 1):
            duration *= 2
            if duration >= self.max_backoff:
                break
        return min(duration, self.max_backoff)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self.backoff_expiry(qpi) > self._clock.now()

    # ------------------------------------------------------------------ introspection

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue for `scheduler_pending_pods{queue}` (in-flight pods are not pending)."""
        return {
            ACTIVE: len(self._active),
            BACKOFF: len(self._backoff),
            UNSCHEDULABLE: len(self._pool) - self._pool.gated,
            GATED: self._pool.gated,
        }

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        if (item := self._active.get(pod_key)) is not None:
            return item.qpi
        if (entry := self._backoff.get(pod_key)) is not None:
            return entry.qpi
        if (qpi := self._pool.get(pod_key)) is not None:
            return qpi
        rec = self._in_flight.get(pod_key)
        return None if rec is None or rec.deleted else rec.qpi

    def where(self, pod_key: str) -> str | None:
        """`active`, `backoff`, `unschedulable`, `gated`, `in_flight`, or None when unknown."""
        if pod_key in self._active:
            return ACTIVE
        if pod_key in self._backoff:
            return BACKOFF
        if (qpi := self._pool.get(pod_key)) is not None:
            return GATED if qpi.gating_plugin else UNSCHEDULABLE
        rec = self._in_flight.get(pod_key)
        return IN_FLIGHT if rec is not None and not rec.deleted else None

    def unschedulable_pods(self) -> Iterator[QueuedPodInfo]:
        """The pool, gated pods included (their `gating_plugin` is set), in arrival order."""
        return iter(list(self._pool.values()))

    def pending_pods(self) -> Iterator[QueuedPodInfo]:
        """Every queued pod: activeQ (unordered), backoffQ, then the pool."""
        active = [item.qpi for item in self._active.values()]
        backoff = [entry.qpi for entry in self._backoff.values()]
        return iter([*active, *backoff, *self._pool.values()])

    def __len__(self) -> int:
        """Queued pods (activeQ, backoffQ, pool); pods in flight are not counted."""
        return len(self._active) + len(self._backoff) + len(self._pool)

    # ------------------------------------------------------------------ internals

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _profile(self, pod: Pod) -> QueueProfile | None:
        return self._profiles.get(pod.spec.scheduler_name)

    def _admit(self, qpi: QueuedPodInfo) -> bool:
        """Every way into activeQ passes PreEnqueue; a rejected pod is parked in the pool as gated."""
        profile = self._profile(qpi.pod)
        plugin, status = profile.run_pre_enqueue(qpi.pod) if profile is not None else ("", None)
        if status is not None and not status.is_success():
            qpi.gating_plugin = plugin or status.plugin or "PreEnqueue"
            self._pool.add(qpi)
            return False
        qpi.gating_plugin = ""
        return True

    def _registrations(self, name: str) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        """The registrations of the profile `name`, read once: upstream builds its hint map at
        startup too."""
        registered = self._registered.get(name)
        if registered is None:
            profile = self._profiles.get(name)
            registered = {} if profile is None else dict(profile.enqueue_events)
            self._registered[name] = registered
        return registered

    def _prepare_return(self, qpi: QueuedPodInfo) -> tuple[bool, str | None, _InFlight | None]:
        """Ready a pod coming back from its attempt to be queued again: its newest object, a fresh
        timestamp, no gate. `(True, where, _)` when it must not be queued: already queued again
        (`where`, e.g. by an update) or deleted meanwhile (None). Else `(False, None, its in-flight
        record)`."""
        where = self.where(qpi.key)
        if where not in (None, IN_FLIGHT):
            return True, where, None
        rec = self._in_flight.get(qpi.key)
        if rec is not None:
            if rec.deleted:
                return True, None, rec
            if rec.latest is not None:
                qpi.pod_info = rec.latest
        qpi.timestamp = self._clock.now()
        qpi.gating_plugin = ""
        return False, None, rec

    def _move_to_active(self, qpi: QueuedPodInfo, label: str) -> str:
        if not self._admit(qpi):
            return GATED
        key = self._sort_key
        seq = self._next_seq()
        item = ActiveItem(qpi, seq, self._less) if key is None else RankedItem(qpi, seq, self._less, key)
        self._active[qpi.key] = item
        heapq.heappush(self._active_heap, item)
        self.incoming[ACTIVE, label] += 1
        return ACTIVE

    def _push_backoff(self, qpi: QueuedPodInfo, label: str, *, errors: bool | None = None) -> str:
        if errors is None:
            errors = qpi.consecutive_errors > 0
        entry = _BackoffEntry(qpi, self.backoff_expiry(qpi), self._next_seq(), errors)
        self._backoff[qpi.key] = entry
        heap = self._error_backoff_heap if errors else self._backoff_heap
        heapq.heappush(heap, (entry.expiry, entry.seq, qpi.key))
        self.incoming[BACKOFF, label] += 1
        return BACKOFF

    def _requeue(self, qpi: QueuedPodInfo, strategy: Strategy, label: str) -> str:
        if strategy == Strategy.SKIP:
            self._pool.add(qpi)
            self.incoming[UNSCHEDULABLE, label] += 1
            return UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self.is_backing_off(qpi):
            return self._push_backoff(qpi, label)
        return self._move_to_active(qpi, label)

    def _remove_from_pool(self, key: str) -> QueuedPodInfo:
        return self._pool.remove(key)

    def _move_pool_pods(
        self, pods: list[QueuedPodInfo], event: ClusterEvent, old_obj: Any, new_obj: Any
    ) -> int:
        moved = 0
        covering: dict[str, Mapping[str, Sequence[ClusterEventWithHint]]] = {}
        for qpi in pods:
            name = qpi.pod.spec.scheduler_name
            if (regs := covering.get(name)) is None:
                regs = covering[name] = self._pool.covering(name, event)
            strategy = worth_requeuing(qpi, event, old_obj, new_obj, regs)
            if strategy == Strategy.SKIP:
                continue
            self._remove_from_pool(qpi.key)
            if qpi.gating_plugin:
                where = self._move_to_active(qpi, event.label)
            else:
                where = self._requeue(qpi, strategy, event.label)
            moved += where in (ACTIVE, BACKOFF)
        return moved

    def _worth_requeuing(
        self, qpi: QueuedPodInfo, event: ClusterEvent, old_obj: Any, new_obj: Any
    ) -> Strategy:
        covering = self._pool.covering(qpi.pod.spec.scheduler_name, event)
        return worth_requeuing(qpi, event, old_obj, new_obj, covering)

    def _strategy_for_in_flight(
        self, qpi: QueuedPodInfo, rec: _InFlight | None, scheduling_cycle: int
    ) -> Strategy:
        """Judge a rejected pod by the events that arrived while it was being scheduled."""
        if rec is None:
            # Not popped here, or done() already called: fall back to "was anything moved since?".
            return Strategy.AFTER_BACKOFF if self._move_request_cycle >= scheduling_cycle else Strategy.SKIP
        strategy = Strategy.AFTER_BACKOFF if rec.activated else Strategy.SKIP
        for ev in self._events:
            if ev.seq < rec.first_event:
                continue
            strategy = max(strategy, self._worth_requeuing(qpi, ev.event, ev.old_obj, ev.new_obj))
            if strategy == Strategy.IMMEDIATE:
                break
        return strategy

    def _record_event(self, event: ClusterEvent, old_obj: Any, new_obj: Any) -> None:
        if not self._in_flight:
            return
        self._events.append(_Event(self._event_seq, event, old_obj, new_obj))
        self._event_seq += 1

    def _pop_active(self) -> QueuedPodInfo | None:
        heap_size = len(self._active_heap)
        if heap_size > STALE_HEAP_SLACK and heap_size > 2 * len(self._active):
            # Mostly entries of pods deleted or bound elsewhere (a standby sees every pod the
            # leader binds leave): drop them at once rather than pop them one by one. Measured on a
            # standby that took over with 1,650 such entries: its first pop took 78 ms.
            self._active_heap = [i for i in self._active_heap if self._active.get(i.qpi.key) is i]
            heapq.heapify(self._active_heap)
        if self._active_dirty:
            self._active_heap = [i for i in self._active_heap if self._active.get(i.qpi.key) is i]
            if self._sort_key is not None:
                for i in self._active_heap:
                    cast(RankedItem, i).rerank()
            heapq.heapify(self._active_heap)
            self._active_dirty = False
        while self._active_heap:
            item = heapq.heappop(self._active_heap)
            if self._active.get(item.qpi.key) is item:
                del self._active[item.qpi.key]
                return item.qpi
        return None

    def _pop_rejection_backoff(self) -> QueuedPodInfo | None:
        heap = self._backoff_heap
        while True:
            self._drop_stale_backoff_heads(heap)
            if not heap:
                return None
            _, _, key = heapq.heappop(heap)
            qpi = self._backoff.pop(key).qpi
            # Leaving backoff early is still a way into scheduling, so PreEnqueue gets its say.
            if self._admit(qpi):
                return qpi

    def _drop_stale_backoff_heads(self, heap: list[tuple[float, int, str]]) -> None:
        while heap:
            _, seq, key = heap[0]
            entry = self._backoff.get(key)
            if entry is not None and entry.seq == seq:
                return
            heapq.heappop(heap)
