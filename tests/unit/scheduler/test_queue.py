"""SchedulingQueue: ordering, backoff, hints, in-flight events, gating, flushes (upstream
`pkg/scheduler/backend/queue/scheduling_queue.go`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import (
    Pod,
    PodExtendedResourceClaimStatus,
    PodResourceClaimStatus,
    PodSchedulingGate,
    PodSpec,
    PodStatus,
    Toleration,
)
from kubesched.framework.events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    WILDCARD_EVENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from kubesched.framework.node_info import PodInfo
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.plugins.priority_sort import PrioritySort
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.queueing_hints import (
    EXTENDER,
    Strategy,
    covering_registrations,
    pod_update_events,
    worth_requeuing,
)
from kubesched.scheduler.unschedulable_pool import UnschedulablePool

GATES = "SchedulingGates"
NODE_TAINT_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)
POD_LABEL_UPDATE = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)
GATES_ELIMINATED = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


def make_pod(
    name: str,
    *,
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    gates: Sequence[str] = (),
    scheduler: str = "default-scheduler",
    tolerations: Sequence[Toleration] = (),
    nominated: str = "",
    node_name: str = "",
    claim_statuses: Sequence[tuple[str, str | None]] = (),
    extended_claim: str = "",
) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", labels=labels or {}),
        spec=PodSpec(
            priority=priority,
            scheduler_name=scheduler,
            scheduling_gates=[PodSchedulingGate(name=g) for g in gates],
            tolerations=list(tolerations),
            node_name=node_name,
        ),
        status=PodStatus(
            nominated_node_name=nominated,
            resource_claim_statuses=[
                PodResourceClaimStatus(name=n, resource_claim_name=c) for n, c in claim_statuses
            ],
            extended_resource_claim_status=(
                PodExtendedResourceClaimStatus(request_mappings=[], resource_claim_name=extended_claim)
                if extended_claim
                else None
            ),
        ),
    )


def info(name: str, **kw: Any) -> PodInfo:
    return PodInfo(make_pod(name, **kw))


def key(name: str) -> str:
    return f"uid-{name}"


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier queue timestamp."""
    pa, pb = a.pod_info.priority, b.pod_info.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


@dataclass
class FakeProfile:
    """SchedulingGates-like PreEnqueue plus a table of registered events."""

    enqueue_events: Mapping[str, Sequence[ClusterEventWithHint]] = field(default_factory=dict)
    pre_enqueue_calls: int = 0

    def run_pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        self.pre_enqueue_calls += 1
        if pod.spec.scheduling_gates:
            return GATES, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates")
        return "", None


def queue_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def skip_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.SKIP


def broken_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint bug")


DEFAULT_EVENTS: dict[str, list[ClusterEventWithHint]] = {
    "Fit": [
        ClusterEventWithHint(NODE_ADD, queue_hint),
        ClusterEventWithHint(ASSIGNED_POD_DELETE, queue_hint),
    ],
    "Taint": [ClusterEventWithHint(NODE_ADD, skip_hint), ClusterEventWithHint(NODE_TAINT_UPDATE, queue_hint)],
    "Ports": [ClusterEventWithHint(ASSIGNED_POD_DELETE, queue_hint)],
    "NoHint": [ClusterEventWithHint(NODE_ADD)],
    "Broken": [ClusterEventWithHint(NODE_ADD, broken_hint)],
    "Labels": [ClusterEventWithHint(POD_LABEL_UPDATE, queue_hint)],
    GATES: [ClusterEventWithHint(GATES_ELIMINATED, queue_hint)],
    "Never": [],
}


def make_queue(
    clock: VirtualClock | None = None,
    events: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    **kw: Any,
) -> tuple[SchedulingQueue, VirtualClock]:
    clock = clock or VirtualClock()
    profile = FakeProfile(DEFAULT_EVENTS if events is None else events)
    return SchedulingQueue(priority_less, clock, profiles={"default-scheduler": profile}, **kw), clock


def fail(
    q: SchedulingQueue, qpi: QueuedPodInfo, unschedulable: Sequence[str] = (), pending: Sequence[str] = ()
) -> str | None:
    """What schedule_one does after a failed attempt: record rejectors, requeue, end the cycle."""
    qpi.unschedulable_plugins = set(unschedulable)
    qpi.pending_plugins = set(pending)
    where = q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle)
    q.done(qpi.key)
    return where


def park(
    q: SchedulingQueue, name: str, unschedulable: Sequence[str] = (), pending: Sequence[str] = (), **kw: Any
) -> QueuedPodInfo:
    """Add, pop and fail a pod so it lands in the unschedulable pool (no events in between)."""
    q.add(info(name, **kw))
    qpi = q.pop()
    assert qpi is not None and qpi.key == key(name)
    assert fail(q, qpi, unschedulable, pending) == "unschedulable"
    return qpi


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (qpi := q.pop()) is not None:
        out.append(qpi.pod.metadata.name)
        q.done(qpi.key)
    return out


# ------------------------------------------------------------------ ordering


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([("a", 0, 0.0), ("b", 10, 1.0), ("c", 5, 2.0)], ["b", "c", "a"], id="priority-first"),
        pytest.param([("a", 5, 2.0), ("b", 5, 0.0), ("c", 5, 1.0)], ["b", "c", "a"], id="then-timestamp"),
        pytest.param(
            [("x", 1, 0.0), ("y", 1, 0.0), ("z", 1, 0.0), ("w", 1, 0.0)], ["x", "y", "z", "w"], id="fifo"
        ),
        pytest.param(
            [("lo", None, 0.0), ("neg", -5, 0.0), ("hi", 1, 0.0)], ["hi", "lo", "neg"], id="none-is-0"
        ),
    ],
)
@pytest.mark.parametrize("ranked", [False, True], ids=["less", "sort-key"])
def test_pop_order_follows_less_then_insertion(
    pods: list[tuple[str, int | None, float]], expected: list[str], ranked: bool
) -> None:
    q, clock = make_queue(sort_key=PrioritySort().sort_key if ranked else None)
    for name, prio, at in sorted(pods, key=lambda p: p[2]):
        clock.advance_to(at)
        q.add(info(name, priority=prio))
    assert drain(q) == expected


@pytest.mark.parametrize("ranked", [False, True], ids=["less", "sort-key"])
def test_priority_update_in_active_reorders(ranked: bool) -> None:
    q, _ = make_queue(sort_key=PrioritySort().sort_key if ranked else None)
    q.add(info("a", priority=1))
    old = make_pod("b", priority=0)
    q.add(PodInfo(old))
    q.update(old, info("b", priority=9))
    assert drain(q) == ["b", "a"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "pop", "fail", "update", "delete"]), st.integers(0, 7), st.integers(-2, 2)
        ),
        max_size=60,
    )
)
def test_a_sort_key_pops_in_the_order_less_gives(ops: list[tuple[str, int, int]]) -> None:
    """PrioritySort's `sort_key` orders the heap as its `less` does, through adds, failed attempts
    (new timestamps), priority updates in place and deletes."""
    queues = [make_queue()[0], make_queue(clock=VirtualClock(), sort_key=PrioritySort().sort_key)[0]]
    clocks = [q._clock for q in queues]
    popped: list[list[QueuedPodInfo]] = [[], []]
    seen: list[list[str]] = [[], []]
    for step, (op, i, prio) in enumerate(ops):
        name = f"p{i}"
        for q, clock, mine, out in zip(queues, clocks, popped, seen, strict=True):
            clock.advance_to(float(step // 3))  # equal timestamps too: the insertion order decides
            if op == "add" and q.where(key(name)) is None:
                q.add(info(name, priority=prio))
            elif op == "update" and q.where(key(name)) == "active":
                q.update(make_pod(name), info(name, priority=prio))
            elif op == "delete":
                q.delete(key(name))
            elif op == "pop" and (qpi := q.pop()) is not None:
                out.append(qpi.pod.metadata.name)
                mine.append(qpi)
            elif op == "fail" and mine:
                qpi = mine.pop(0)
                if q.where(qpi.key) == "in_flight":
                    q.retry_now(qpi)
                q.done(qpi.key)
    assert seen[0] == seen[1]
    assert drain(queues[0]) == drain(queues[1])


def test_pop_bookkeeping() -> None:
    q2, clock2 = make_queue()
    clock2.advance_to(3.0)
    q2.add(info("a"))
    clock2.advance_to(4.0)
    qpi = q2.pop()
    assert qpi is not None
    assert (qpi.attempts, qpi.initial_attempt_timestamp, qpi.timestamp) == (1, 4.0, 3.0)
    assert q2.scheduling_cycle == 1 and q2.where(qpi.key) == "in_flight" and len(q2) == 0
    assert fail(q2, qpi, ["Fit"]) == "unschedulable"
    q2.move_all_to_active_or_backoff(WILDCARD_EVENT)
    clock2.advance_to(100.0)
    q2.flush_backoff_completed()
    again = q2.pop()
    assert again is qpi and (again.attempts, again.initial_attempt_timestamp) == (2, 4.0)
    assert q2.scheduling_cycle == 2
    assert q2.pop() is None and q2.scheduling_cycle == 2


def test_add_rejects_unknown_scheduler() -> None:
    q, _ = make_queue()
    with pytest.raises(ValueError, match="other-scheduler"):
        q.add(info("a", scheduler="other-scheduler"))
    assert len(q) == 0


def test_add_twice_is_an_update() -> None:
    q, _ = make_queue()
    q.add(info("a", priority=1))
    q.add(info("a", priority=2))
    assert len(q) == 1 and q.pending_counts()["active"] == 1
    qpi = q.pop()
    assert qpi is not None and qpi.pod_info.priority == 2


# ------------------------------------------------------------------ backoff


@pytest.mark.parametrize(
    ("initial", "maximum", "expected"),
    [
        (1.0, 10.0, [0.0, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]),
        (0.5, 3.0, [0.0, 0.5, 1.0, 2.0, 3.0, 3.0, 3.0]),
        (2.0, 2.0, [0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]),
    ],
)
def test_backoff_duration_doubles_and_caps(initial: float, maximum: float, expected: list[float]) -> None:
    q, clock = make_queue(initial_backoff=initial, max_backoff=maximum)
    clock.advance_to(7.0)
    for count, want in enumerate(expected):
        qpi = QueuedPodInfo(info("a"), timestamp=clock.now(), unschedulable_count=count)
        assert q.backoff_duration(qpi) == want
        assert q.backoff_expiry(qpi) == 7.0 + want


def test_backoff_duration_huge_count_does_not_overflow() -> None:
    q, _ = make_queue()
    assert q.backoff_duration(QueuedPodInfo(info("a"), unschedulable_count=100_000)) == 10.0


def test_error_and_rejection_counters() -> None:
    q, clock = make_queue()
    q.add(info("a"))
    expected = [
        # (rejecting plugins, consecutive_errors, unschedulable_count, backoff seconds, queue)
        ((), 1, 0, 1.0, "backoff"),
        ((), 2, 0, 2.0, "backoff"),
        ((), 3, 0, 4.0, "backoff"),
        (("Fit",), 0, 1, 1.0, "unschedulable"),
        ((), 1, 1, 1.0, "backoff"),
        (("Fit",), 0, 2, 2.0, "unschedulable"),
    ]
    for step, (plugins, errors, rejections, seconds, where) in enumerate(expected):
        clock.advance(100.0)
        q.move_all_to_active_or_backoff(WILDCARD_EVENT)
        q.flush_backoff_completed()
        qpi = q.pop()
        assert qpi is not None, step
        assert fail(q, qpi, plugins) == where, step
        assert (qpi.consecutive_errors, qpi.unschedulable_count) == (errors, rejections), step
        assert q.backoff_duration(qpi) == seconds, step
        assert qpi.timestamp == clock.now()


@pytest.mark.parametrize(
    ("plugins", "pop_from_backoff", "popped"),
    [
        pytest.param(("Fit",), True, True, id="rejection-popped-early"),
        pytest.param((), True, False, id="error-backoff-never"),
        pytest.param(("Fit",), False, False, id="flag-off"),
    ],
)
def test_pop_from_backoff_when_active_empty(
    plugins: tuple[str, ...], pop_from_backoff: bool, popped: bool
) -> None:
    q, clock = make_queue(pop_from_backoff=pop_from_backoff)
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    qpi.unschedulable_plugins = set(plugins)
    # An event during the attempt sends a rejected pod to backoffQ instead of the pool.
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle) == "backoff"
    q.done(qpi.key)
    clock.advance(0.5)  # still backing off
    got = q.pop()
    assert (got is qpi) is popped
    assert q.where(qpi.key) == ("in_flight" if popped else "backoff")


def test_pop_prefers_active_over_backoff() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert fail(q, qpi, ["Fit"]) == "backoff"
    q.add(info("b"))
    assert drain(q) == ["b", "a"]


def test_flush_backoff_completed_at_expiry() -> None:
    q, clock = make_queue()
    q.add(info("a"))
    q.add(info("b"))
    for _ in range(2):
        qpi = q.pop()
        assert qpi is not None
        assert fail(q, qpi) == "backoff"  # errors: 1 s backoff each
    clock.advance_to(0.999)
    assert q.flush_backoff_completed() == 0
    clock.advance_to(1.0)
    assert q.flush_backoff_completed() == 2
    assert q.pending_counts() == {"active": 2, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert q.incoming["active", "BackoffComplete"] == 2


# ------------------------------------------------------------------ events and hints


@pytest.mark.parametrize(
    ("unschedulable", "pending", "event", "expected"),
    [
        pytest.param(["Fit"], [], NODE_ADD, "backoff", id="queue-hint-after-backoff"),
        pytest.param(["Taint"], [], NODE_ADD, "unschedulable", id="skip-hint-stays"),
        pytest.param(["Taint"], [], NODE_TAINT_UPDATE, "backoff", id="other-event-queue"),
        pytest.param(["Ports"], [], NODE_ADD, "unschedulable", id="not-registered"),
        pytest.param(["Ports"], [], ASSIGNED_POD_DELETE, "backoff", id="registered-pod-delete"),
        pytest.param(["Taint", "Fit"], [], NODE_ADD, "backoff", id="any-plugin-queue"),
        pytest.param(["Unregistered"], [], NODE_ADD, "backoff", id="no-enqueue-extensions-any-event"),
        pytest.param(["Never"], [], WILDCARD_EVENT, "backoff", id="empty-registration-wildcard-only"),
        pytest.param(["Never"], [], NODE_ADD, "unschedulable", id="empty-registration"),
        pytest.param([], ["Fit"], NODE_ADD, "active", id="pending-skips-backoff"),
        pytest.param(["Fit"], ["Taint"], NODE_ADD, "backoff", id="pending-skip-unsched-queue"),
        pytest.param(["Taint"], ["Fit"], NODE_ADD, "active", id="pending-queue-wins"),
        pytest.param(["NoHint"], [], NODE_ADD, "backoff", id="no-hint-fn-is-queue"),
        pytest.param(["Broken"], [], NODE_ADD, "backoff", id="raising-hint-is-queue"),
        pytest.param(["Extender"], [], NODE_TAINT_UPDATE, "backoff", id="extender-any-event"),
        pytest.param(["Taint"], [], WILDCARD_EVENT, "backoff", id="wildcard"),
        pytest.param(["Taint"], [], UNSCHEDULABLE_TIMEOUT, "backoff", id="timeout-wildcard"),
        pytest.param(["Taint"], [], FORCE_ACTIVATE, "backoff", id="force-activate-wildcard"),
    ],
)
def test_event_moves_by_hints(
    unschedulable: list[str], pending: list[str], event: ClusterEvent, expected: str
) -> None:
    q, clock = make_queue()
    park(q, "a", unschedulable, pending)
    clock.advance(0.5)  # inside the 1 s backoff
    moved = q.move_all_to_active_or_backoff(event, None, None)
    assert q.where(key("a")) == expected
    assert moved == (expected != "unschedulable")
    if expected != "unschedulable":
        assert q.incoming[expected, event.label] == 1


def test_event_after_backoff_goes_straight_to_active() -> None:
    q, clock = make_queue()
    park(q, "a", ["Fit"])
    clock.advance(1.0)  # backoff of one rejection is over
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where(key("a")) == "active"


def test_pool_pod_without_plugins_moves_on_any_event() -> None:
    # The queue never parks such a pod (a failure without plugins is an Error, which backs off);
    # the hint and the pool's index still agree that any event would move it.
    qpi = QueuedPodInfo(info("b"))
    covering = covering_registrations(DEFAULT_EVENTS, NODE_TAINT_UPDATE)
    assert worth_requeuing(qpi, NODE_TAINT_UPDATE, None, None, covering) == Strategy.AFTER_BACKOFF
    pool = UnschedulablePool(lambda _: DEFAULT_EVENTS)
    pool.add(qpi)
    assert pool.candidates(NODE_TAINT_UPDATE) == [qpi]


def test_an_event_visits_only_pods_filed_under_a_plugin_registered_for_it() -> None:
    pool = UnschedulablePool(lambda _: DEFAULT_EVENTS)
    pods = {}
    for name, plugins in [("a", {"Fit"}), ("b", {"Ports"}), ("c", {"Taint", "Ports"}), ("d", {"Fit"})]:
        pods[name] = QueuedPodInfo(info(name), unschedulable_plugins=plugins)
        pool.add(pods[name])
    pool.add(ext := QueuedPodInfo(info("e"), unschedulable_plugins={EXTENDER, "Never"}))
    pool.add(unknown := QueuedPodInfo(info("u"), unschedulable_plugins={"Unregistered"}))
    # NODE_ADD: Fit and Taint registered for it, Ports not; in arrival order across the index.
    assert pool.candidates(NODE_ADD) == [pods["a"], pods["c"], pods["d"], ext, unknown]
    assert pool.candidates(ASSIGNED_POD_DELETE, exclude=key("b")) == [
        pods["a"],
        pods["c"],
        pods["d"],
        ext,
        unknown,
    ]
    assert pool.candidates(GATES_ELIMINATED) == [ext, unknown]
    assert pool.candidates(WILDCARD_EVENT) == [*pods.values(), ext, unknown]
    pool.remove(key("c"))
    assert pool.candidates(NODE_TAINT_UPDATE) == [ext, unknown]
    assert len(pool) == 5 and key("c") not in pool


def _label_keys(pod: Pod) -> list[str]:
    return list(pod.metadata.labels.values())


def _event_label(old: Any, new: Any) -> tuple[str] | None:
    return (new,) if isinstance(new, str) else None


def test_a_hint_index_narrows_an_event_to_the_pods_holding_its_keys() -> None:
    asked: list[str] = []

    def label_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
        asked.append(pod.metadata.name)
        return QueueingHint.QUEUE if new is None or new in pod.metadata.labels.values() else QueueingHint.SKIP

    keyed = ClusterEventWithHint(NODE_ADD, label_hint, HintIndex(_label_keys, _event_label))
    q, clock = make_queue(events={"Keyed": [keyed], "Fit": DEFAULT_EVENTS["Fit"]})
    park(q, "a", ["Keyed"], labels={"k": "x"})
    park(q, "b", ["Keyed"], labels={"k": "y"})
    park(q, "both", ["Keyed", "Fit"], labels={"k": "y"})
    clock.advance(5.0)
    # Fit has no index: its pods are all weighed; Keyed's only where the key matches.
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, "x") == 2
    assert sorted(asked) == ["a"] and q.where(key("both")) == "active"
    # The pod's keys are read again when an update leaves it in the pool.
    q.update(make_pod("b", labels={"k": "y"}), info("b", labels={"k": "z"}))
    assert q.where(key("b")) == "unschedulable"
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, "y") == 0
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, "z") == 1
    assert sorted(drain(q)) == ["a", "b", "both"]
    asked.clear()
    park(q, "c", ["Keyed"], labels={"k": "w"})
    q.move_all_to_active_or_backoff(NODE_ADD, None, 7)  # no keys for the event: every pod asked
    assert asked == ["c"]


_PLUGINS = [*DEFAULT_EVENTS, EXTENDER, "Unregistered"]
_EVENTS = [
    NODE_ADD,
    NODE_TAINT_UPDATE,
    ASSIGNED_POD_DELETE,
    POD_LABEL_UPDATE,
    GATES_ELIMINATED,
    WILDCARD_EVENT,
]


@settings(max_examples=80, deadline=None)
@given(
    rejections=st.lists(
        st.tuples(
            st.sets(st.sampled_from(_PLUGINS), max_size=3), st.sets(st.sampled_from(_PLUGINS), max_size=2)
        ),
        min_size=1,
        max_size=10,
    ),
    event=st.sampled_from(_EVENTS),
    excluded=st.integers(0, 10),
)
def test_an_event_moves_exactly_the_pods_a_scan_of_the_whole_pool_would(
    rejections: list[tuple[set[str], set[str]]], event: ClusterEvent, excluded: int
) -> None:
    q, clock = make_queue()
    for i, (unschedulable, pending) in enumerate(rejections):
        park(q, f"p{i}", sorted(unschedulable or {"Never"}), sorted(pending))
    clock.advance(0.5)
    exclude = key(f"p{excluded}")
    covering = covering_registrations(DEFAULT_EVENTS, event)
    expected = {
        qpi.key: worth_requeuing(qpi, event, None, None, covering)
        for qpi in q.unschedulable_pods()
        if qpi.key != exclude
    }
    moved = q.move_all_to_active_or_backoff(event, exclude=exclude)
    where = {
        Strategy.SKIP: "unschedulable",
        Strategy.AFTER_BACKOFF: "backoff",
        Strategy.IMMEDIATE: "active",
    }
    assert {k: q.where(k) for k in expected} == {k: where[s] for k, s in expected.items()}
    assert moved == sum(s != Strategy.SKIP for s in expected.values())


def test_event_moves_exactly_the_matching_pods() -> None:
    q, clock = make_queue()
    park(q, "fit", ["Fit"])
    park(q, "taint", ["Taint"])
    park(q, "ports", ["Ports"])
    park(q, "pending", [], ["Fit"])
    clock.advance(5.0)
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 2
    assert {n: q.where(key(n)) for n in ("fit", "taint", "ports", "pending")} == {
        "fit": "active",
        "taint": "unschedulable",
        "ports": "unschedulable",
        "pending": "active",
    }
    assert q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE) == 1
    assert q.where(key("ports")) == "active" and q.where(key("taint")) == "unschedulable"


def test_hint_receives_pod_old_and_new() -> None:
    seen: list[tuple[str, Any, Any]] = []

    def hint(pod: Any, old: Any, new: Any) -> QueueingHint:
        seen.append((pod.metadata.name, old, new))
        return QueueingHint.SKIP

    q, _ = make_queue(events={"P": [ClusterEventWithHint(NODE_ADD, hint)]})
    park(q, "a", ["P"])
    q.move_all_to_active_or_backoff(NODE_ADD, "old", "new")
    assert seen == [("a", "old", "new")]


def test_hints_from_non_rejecting_plugins_are_ignored() -> None:
    calls: list[str] = []

    def hint(pod: Any, old: Any, new: Any) -> QueueingHint:
        calls.append(pod.metadata.name)
        return QueueingHint.QUEUE

    q, _ = make_queue(
        events={"P": [ClusterEventWithHint(NODE_ADD, hint)], "Q": [ClusterEventWithHint(NODE_ADD, skip_hint)]}
    )
    park(q, "a", ["Q"])
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 0
    assert calls == []


# ------------------------------------------------------------------ in flight


@pytest.mark.parametrize(
    ("unschedulable", "pending", "event", "expected"),
    [
        pytest.param(["Fit"], [], NODE_ADD, "backoff", id="matching-event"),
        pytest.param(["Fit"], [], NODE_TAINT_UPDATE, "unschedulable", id="unrelated-event"),
        pytest.param(["Taint"], [], NODE_ADD, "unschedulable", id="skip-hint"),
        pytest.param([], ["Fit"], NODE_ADD, "active", id="pending-immediately"),
        pytest.param(["Taint"], [], WILDCARD_EVENT, "backoff", id="wildcard"),
        pytest.param(["Fit"], [], None, "unschedulable", id="no-event"),
    ],
)
def test_in_flight_events_applied_on_requeue(
    unschedulable: list[str], pending: list[str], event: ClusterEvent | None, expected: str
) -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    if event is not None:
        assert q.move_all_to_active_or_backoff(event) == 0  # nothing in the pool yet
    assert fail(q, qpi, unschedulable, pending) == expected


def test_in_flight_window_starts_at_pop_and_ends_at_done() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    q.add(info("b"))
    a = q.pop()
    assert a is not None
    q.move_all_to_active_or_backoff(NODE_ADD)  # during a's attempt only
    b = q.pop()
    assert b is not None
    assert fail(q, b, ["Fit"]) == "unschedulable"  # b was popped after the event
    assert fail(q, a, ["Fit"]) == "backoff"
    # Both done: the remembered events are gone, the next attempt starts clean.
    q.add(info("c"))
    c = q.pop()
    assert c is not None
    assert fail(q, c, ["Fit"]) == "unschedulable"


def test_events_not_recorded_without_pods_in_flight() -> None:
    q, _ = make_queue()
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    assert fail(q, qpi, ["Fit"]) == "unschedulable"


def test_requeue_after_done_uses_move_request_cycle() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    cycle = q.scheduling_cycle
    q.done(qpi.key)
    qpi.unschedulable_plugins = {"Fit"}
    q.move_all_to_active_or_backoff(NODE_TAINT_UPDATE)  # a move happened in this cycle
    assert q.add_unschedulable_if_not_present(qpi, cycle) == "backoff"


def test_update_while_in_flight_is_an_event_and_the_newest_object_is_requeued() -> None:
    q, _ = make_queue()
    old = make_pod("a", labels={"v": "1"})
    q.add(PodInfo(old))
    qpi = q.pop()
    assert qpi is not None
    q.update(old, info("a", labels={"v": "2"}))
    assert q.where(key("a")) == "in_flight"
    assert fail(q, qpi, ["Labels"]) == "backoff"
    assert qpi.pod.metadata.labels == {"v": "2"}


def test_delete_while_in_flight_drops_the_requeue() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    q.delete(qpi.key)
    assert q.where(qpi.key) is None and q.get(qpi.key) is None
    assert fail(q, qpi, ["Fit"]) is None
    assert len(q) == 0


def test_add_unschedulable_is_noop_when_already_queued() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.get(key("a"))
    assert qpi is not None
    assert q.add_unschedulable_if_not_present(qpi, 0) == "active"
    assert qpi.unschedulable_count == 0 and qpi.consecutive_errors == 0


# ------------------------------------------------------------------ gating


def test_gated_pod_released_by_update() -> None:
    q, _ = make_queue()
    old = make_pod("a", gates=["example.com/wait"])
    assert q.add(PodInfo(old)) == "gated"
    qpi = q.get(key("a"))
    assert qpi is not None and qpi.gating_plugin == GATES
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert q.pop() is None
    # An update that keeps the gate: still gated.
    still = make_pod("a", gates=["example.com/wait"], labels={"x": "y"})
    q.update(old, PodInfo(still))
    assert q.where(key("a")) == "gated"
    q.update(still, info("a"))
    assert q.where(key("a")) == "active" and qpi.gating_plugin == ""
    assert q.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


@pytest.mark.parametrize(
    ("event", "reconsidered"),
    [
        pytest.param(GATES_ELIMINATED, True, id="gating-plugin-event"),
        pytest.param(NODE_ADD, False, id="other-plugins-event"),
        pytest.param(WILDCARD_EVENT, True, id="wildcard"),
    ],
)
def test_gated_pods_reconsidered_only_for_gating_plugin_events(
    event: ClusterEvent, reconsidered: bool
) -> None:
    profile = FakeProfile(DEFAULT_EVENTS)
    q = SchedulingQueue(priority_less, VirtualClock(), profiles={"default-scheduler": profile})
    q.add(info("a", gates=["g"]))
    before = profile.pre_enqueue_calls
    assert q.move_all_to_active_or_backoff(event) == 0
    assert q.where(key("a")) == "gated"
    assert profile.pre_enqueue_calls == before + reconsidered


def test_gated_pods_skip_leftover_flush_and_wakeup() -> None:
    profile = FakeProfile(DEFAULT_EVENTS)
    clock = VirtualClock()
    q = SchedulingQueue(priority_less, clock, profiles={"default-scheduler": profile})
    q.add(info("a", gates=["g"]))
    assert q.next_wakeup() is None
    clock.advance(1000.0)
    assert q.flush_unschedulable_leftover() == 0
    assert profile.pre_enqueue_calls == 1  # only at add: a timeout is no reason to ask PreEnqueue again


# ------------------------------------------------------------------ pool updates


@pytest.mark.parametrize(
    ("new_kw", "expected"),
    [
        pytest.param({"labels": {"v": "2"}}, "backoff", id="label-change-hinted"),
        pytest.param({"labels": {"v": "1"}, "nominated": "n1"}, "unschedulable", id="status-only"),
        pytest.param(
            {"labels": {"v": "1"}, "tolerations": [Toleration(key="k")]}, "unschedulable", id="unhinted"
        ),
    ],
)
def test_unschedulable_pod_update_uses_pod_event_hints(new_kw: dict[str, Any], expected: str) -> None:
    q, _ = make_queue()
    old = make_pod("a", labels={"v": "1"})
    q.add(PodInfo(old))
    qpi = q.pop()
    assert qpi is not None
    assert fail(q, qpi, ["Labels"]) == "unschedulable"
    q.update(old, info("a", **new_kw))
    assert q.where(key("a")) == expected
    assert q.get(key("a")) is qpi and qpi.pod == make_pod("a", **new_kw)


@pytest.mark.parametrize(
    ("old_kw", "new_kw", "actions"),
    [
        ({}, {}, []),
        ({"labels": {"a": "1"}}, {"labels": {"a": "2"}}, [ActionType.UPDATE_POD_LABEL]),
        ({"gates": ["g"]}, {}, [ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED]),
        ({"gates": ["g", "h"]}, {"gates": ["h"]}, []),
        ({}, {"tolerations": [Toleration(key="k")]}, [ActionType.UPDATE_POD_TOLERATION]),
        ({"nominated": "n"}, {}, []),
        ({}, {"claim_statuses": [("gpu", "a-gpu-x")]}, [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM]),
        (
            {"claim_statuses": [("gpu", None)]},
            {"claim_statuses": [("gpu", "a-gpu-x")]},
            [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM],
        ),
        ({"claim_statuses": [("gpu", "a-gpu-x")]}, {"claim_statuses": [("gpu", "a-gpu-x")]}, []),
        ({}, {"extended_claim": "a-extended-resources-x"}, [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM]),
    ],
)
def test_pod_update_events(old_kw: dict[str, Any], new_kw: dict[str, Any], actions: list[ActionType]) -> None:
    events = pod_update_events(make_pod("a", **old_kw), make_pod("a", **new_kw))
    assert [e.action for e in events] == actions
    assert all(e.resource == Resource.TARGET_POD for e in events)


def test_pod_update_events_scale_down_and_assigned() -> None:
    old, new = make_pod("a"), make_pod("a", node_name="n1")
    assert pod_update_events(old, new, old_requests={"cpu": 200}, new_requests={"cpu": 100}) == [
        ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    ]
    assert pod_update_events(old, new, old_requests={"cpu": 100}, new_requests={"cpu": 200}) == []


def test_update_to_bound_pod_leaves_the_queue() -> None:
    q, _ = make_queue()
    old = make_pod("a")
    q.add(PodInfo(old))
    q.update(old, info("a", node_name="n1"))
    assert q.where(key("a")) is None and len(q) == 0


def test_update_of_unknown_pod_adds_it() -> None:
    q, _ = make_queue()
    q.update(make_pod("a"), info("a"))
    assert q.where(key("a")) == "active"


# ------------------------------------------------------------------ flushes, activate


def test_leftover_flush_after_five_minutes() -> None:
    q, clock = make_queue()
    park(q, "a", ["Taint"])
    clock.advance(120.0)
    park(q, "b", ["Taint"])
    assert q.next_wakeup() == 300.0
    clock.advance_to(299.9)
    assert q.run_periodic() == 0
    clock.advance_to(300.0)
    assert q.run_periodic() == 1
    assert q.where(key("a")) == "active" and q.where(key("b")) == "unschedulable"
    assert q.incoming["active", "UnschedulableTimeout"] == 1
    assert q.next_wakeup() == 420.0


def test_leftover_flush_custom_duration_respects_backoff() -> None:
    q, clock = make_queue(max_in_unschedulable=0.5)
    park(q, "a", ["Taint"])
    clock.advance(0.5)  # leftover due while the 1 s backoff still runs
    assert q.flush_unschedulable_leftover() == 1
    assert q.where(key("a")) == "backoff"


def test_activate_moves_pool_and_backoff_to_active() -> None:
    q, _ = make_queue()
    park(q, "pool", ["Taint"])
    q.add(info("boff"))
    qpi = q.pop()
    assert qpi is not None
    assert fail(q, qpi) == "backoff"
    q.add(info("act"))
    assert q.activate([key("pool"), key("boff"), key("act"), key("nobody")]) == 2
    assert q.pending_counts()["active"] == 3
    assert q.incoming["active", "ForceActivate"] == 2


def test_activate_in_flight_pod_requeues_it_on_failure() -> None:
    q, _ = make_queue()
    q.add(info("a"))
    qpi = q.pop()
    assert qpi is not None
    assert q.activate([qpi.key]) == 0
    assert fail(q, qpi, ["Taint"]) == "backoff"


def test_activate_gated_pod_runs_pre_enqueue() -> None:
    q, _ = make_queue()
    q.add(info("a", gates=["g"]))
    assert q.activate([key("a")]) == 0
    assert q.where(key("a")) == "gated"


# ------------------------------------------------------------------ delete, wakeup


@pytest.mark.parametrize("location", ["active", "backoff", "unschedulable", "gated"])
def test_delete_removes_everywhere(location: str) -> None:
    q, clock = make_queue()
    if location == "active":
        q.add(info("a"))
    elif location == "gated":
        q.add(info("a", gates=["g"]))
    else:
        q.add(info("a"))
        qpi = q.pop()
        assert qpi is not None
        assert fail(q, qpi, [] if location == "backoff" else ["Fit"]) == location
    q.add(info("other"))
    assert q.where(key("a")) == location
    q.delete(key("a"))
    assert q.where(key("a")) is None and q.get(key("a")) is None
    assert len(q) == 1 and sum(q.pending_counts().values()) == 1
    assert key("a") not in {p.key for p in q.unschedulable_pods()}
    clock.advance(1000.0)
    q.move_all_to_active_or_backoff(WILDCARD_EVENT)
    q.run_periodic()
    assert drain(q) == ["other"]
    assert q.next_wakeup() is None


def test_next_wakeup() -> None:
    q, clock = make_queue()
    assert q.next_wakeup() is None and q.next_backoff_expiry() is None
    q.add(info("active"))
    assert q.next_wakeup() is None  # activeQ needs no wakeup
    assert drain(q) == ["active"]
    clock.advance_to(10.0)
    q.add(info("err"))
    qpi = q.pop()
    assert qpi is not None
    assert fail(q, qpi) == "backoff"
    assert q.next_wakeup() == 11.0
    park(q, "parked", ["Taint"])
    assert q.next_wakeup() == q.next_backoff_expiry() == 11.0
    q.delete(key("err"))
    assert q.next_wakeup() == 310.0 and q.next_backoff_expiry() is None
    clock.advance_to(310.0)
    q.run_periodic()
    assert q.next_wakeup() is None


def test_next_wakeup_drives_a_virtual_clock_loop() -> None:
    q, clock = make_queue()
    q.add(info("a"))
    attempts = 0
    for _ in range(50):  # bounded: a wakeup that makes no progress must fail, not hang
        if attempts == 6:
            break
        qpi = q.pop()
        if qpi is None:
            wake = q.next_wakeup()
            assert wake is not None
            clock.advance_to(wake)
            q.run_periodic()
            continue
        attempts += 1
        assert fail(q, qpi) == "backoff"
    assert attempts == 6
    # Error backoff 1+2+4+8+10 seconds between the six attempts.
    assert clock.now() == 25.0


# ------------------------------------------------------------------ metrics, nominator


def test_incoming_counter_and_introspection() -> None:
    q, _ = make_queue()
    park(q, "p", ["Fit"])
    q.add(info("a"))
    q.add(info("g", gates=["x"]))
    assert q.incoming == {("active", "PodAdd"): 2, ("unschedulable", "ScheduleAttemptFailure"): 1}
    assert len(q) == 3
    assert [p.pod.metadata.name for p in q.unschedulable_pods()] == ["p", "g"]
    assert sorted(p.pod.metadata.name for p in q.pending_pods()) == ["a", "g", "p"]
    assert q.where("missing") is None and q.get("missing") is None


def test_queue_keeps_nominator_in_step() -> None:
    nominator = Nominator()
    q, _ = make_queue(nominator=nominator)
    q.add(info("a", nominated="n1"))
    assert nominator.nominated_node(key("a")) == "n1"
    q.update(make_pod("a", nominated="n1"), info("a", nominated="n2"))
    assert nominator.nominated_node(key("a")) == "n2"
    q.delete(key("a"))
    assert nominator.nominated_node(key("a")) is None


def test_rejects_negative_durations() -> None:
    with pytest.raises(ValueError, match="negative"):
        make_queue(initial_backoff=-1.0)


def test_registrations_are_read_once_per_profile() -> None:
    class CountingProfile:
        reads = 0

        @property
        def enqueue_events(self) -> Mapping[str, Sequence[ClusterEventWithHint]]:
            self.reads += 1
            return DEFAULT_EVENTS

        def run_pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
            return "", None

    profile = CountingProfile()
    q = SchedulingQueue(priority_less, VirtualClock(), profiles={"default-scheduler": profile})
    park(q, "a", ["Taint"])
    park(q, "b", ["Taint"])
    for _ in range(3):
        q.move_all_to_active_or_backoff(NODE_ADD)
    assert profile.reads == 1


def test_stale_heap_entry_of_a_deleted_then_readded_pod_is_skipped() -> None:
    q, _ = make_queue()
    q.add(info("a", priority=10))
    q.add(info("b", priority=5))
    q.delete(key("a"))
    q.add(info("a", priority=0))  # the old entry (priority 10) still sits at the top of the heap
    popped = q.pop()
    assert popped is not None and popped.pod.metadata.name == "b"
    again = q.pop()
    assert again is not None and again.pod_info.priority == 0
    assert q.pop() is None


@pytest.mark.parametrize("ranked", [False, True], ids=["less", "sort-key"])
def test_a_heap_mostly_of_deleted_pods_is_rebuilt_at_the_next_pop(ranked: bool) -> None:
    """A standby sees every pod the leader binds leave activeQ; the first pop after a takeover must
    not walk through all their heap entries one by one."""
    q, clock = make_queue(sort_key=PrioritySort().sort_key if ranked else None)
    for i in range(300):
        clock.advance_to(float(i))
        q.add(info(f"p{i:03d}", priority=i % 3))
    for i in range(300):
        if i % 10:
            q.delete(key(f"p{i:03d}"))
    assert len(q._active_heap) == 300
    left = [f"p{i:03d}" for i in range(0, 300, 10)]
    expected = sorted(left, key=lambda n: (-(int(n[1:]) % 3), int(n[1:])))
    first = q.pop()
    assert first is not None and first.pod.metadata.name == expected[0]
    assert len(q._active_heap) == len(left) - 1
    q.done(first.key)
    assert drain(q) == expected[1:]
