"""What a bound pod's update tells the queue, as v1.37.2's event handlers do.

A pod that just got bound is an AssignedPod Add with no old object (upstream's assigned-pod
informer sees it appear); a bound pod relabelled, or scaled down, is an AssignedPod update event
carrying both objects, so the hints registered for those events are asked.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework import CycleState, NodeInfo, QueuedPodInfo, Status
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import ProfileSpec, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod


class Sort:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.pod.metadata.name < b.pod.metadata.name


class Binder:
    """Never reached: every pod is refused before binding."""

    name = "Binder"

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise AssertionError(f"{pod.metadata.name} should not be bound")


class Refuse:
    """Rejects every pod, and records what its hint is asked."""

    name = "Refuse"
    asked: ClassVar[list[tuple[Any, Any]]] = []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("refused")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent(
            Resource.ASSIGNED_POD,
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_SCALE_DOWN,
        )
        return [ClusterEventWithHint(event, self._hint)]

    @staticmethod
    def _hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        Refuse.asked.append((old, new))
        return QueueingHint.SKIP


def _scheduler() -> Scheduler:
    clock = VirtualClock()
    cluster = MemoryCluster(LoadedObjects(nodes=[make_node("n1")], pods=[make_pod("pending")]), clock.now)
    points = {"queueSort": [("Sort", 1)], "filter": [("Refuse", 1)], "bind": [("Binder", 1)]}
    scheduler = Scheduler(
        [ProfileSpec("default-scheduler", points, {})],
        Registry([Sort, Refuse, Binder]),
        cluster,
        clock,
        SchedulerOptions(seed=0),
    )
    cluster.subscribe(scheduler)
    run_until_settled(scheduler, clock, cluster)  # "pending" is now unschedulable
    Refuse.asked.clear()
    return scheduler


def _relabelled(pod: Pod, **labels: str) -> Pod:
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, labels=labels))


def test_a_pod_that_just_got_bound_is_an_add_without_old_object() -> None:
    scheduler = _scheduler()
    unbound = make_pod("other", labels={"app": "web"})
    bound = make_pod("other", labels={"app": "web"}, node_name="n1")
    scheduler.on_pod_update(unbound, bound)
    assert Refuse.asked == [(None, bound)]


def test_a_bound_pod_relabelled_is_an_update_with_both_objects() -> None:
    scheduler = _scheduler()
    bound = make_pod("other", labels={"app": "web"}, node_name="n1")
    scheduler.on_pod_add(bound)
    Refuse.asked.clear()
    relabelled = _relabelled(bound, app="db")
    scheduler.on_pod_update(bound, relabelled)
    assert Refuse.asked == [(bound, relabelled)]


def test_a_bound_pod_scaled_down_is_an_update_and_a_status_change_is_nothing() -> None:
    scheduler = _scheduler()
    big = make_pod("other", cpu="2", node_name="n1")
    scheduler.on_pod_add(big)
    Refuse.asked.clear()
    small = make_pod("other", cpu="1", node_name="n1")
    scheduler.on_pod_update(big, small)
    assert Refuse.asked == [(big, small)]
    Refuse.asked.clear()
    scheduler.on_pod_update(
        small, msgspec.structs.replace(small, status=msgspec.structs.replace(small.status, phase="Running"))
    )
    assert Refuse.asked == []
