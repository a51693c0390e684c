"""Re-validation just before a bind: a decision whose node went away or no longer has room (resources,
host ports), whose pod went away, or that the gate refuses is dropped (undone, requeued at once, no
FailedScheduling); one that still holds is bound. Binding cycles are held back and run later, as the
live scheduler's pipeline runs them, so the cluster can change between decision and bind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.plugins import default_registry
from kubesched.scheduler.binding_cycle import BindingJob
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.ports import BindRefused
from kubesched.scheduler.scheduler import Abandoned, Attempt, ProfileSpec, Scheduler, SchedulerOptions
from kubesched.testing.builders import make_node, make_pod

FULL = {
    "queueSort": [("PrioritySort", 1)],
    "preFilter": [("NodeResourcesFit", 1), ("NodePorts", 1)],
    "filter": [("NodeResourcesFit", 1), ("NodePorts", 1)],
    "bind": [("DefaultBinder", 1)],
}
NO_FIT = {
    "queueSort": [("PrioritySort", 1)],
    "bind": [("DefaultBinder", 1)],
}


class Held:
    """A scheduler whose binding cycles wait in `cycles` until the test runs them."""

    def __init__(
        self,
        nodes: list[Node],
        pods: list[Pod],
        points: dict[str, list[tuple[str, int]]] | None = None,
        gate: Callable[[], str | None] | None = None,
        cluster: type[MemoryCluster] = MemoryCluster,
    ) -> None:
        self.clock = VirtualClock()
        self.cluster = cluster(LoadedObjects(nodes=nodes, pods=pods), self.clock.now)
        self.cycles: list[Callable[[], None]] = []
        self.attempts: list[Attempt] = []
        self.abandoned: list[Abandoned] = []
        self.scheduler = Scheduler(
            [ProfileSpec("default-scheduler", points or FULL, {})],
            default_registry(entry_points=False),
            self.cluster,
            self.clock,
            SchedulerOptions(),
            observer=self.attempts.append,
            run_binding=self.cycles.append,
            bind_gate=gate,
            on_abandoned=self.abandoned.append,
        )
        self.cluster.subscribe(self.scheduler)

    def place_all(self) -> None:
        while self.scheduler.schedule_one():
            pass

    def bind_held(self) -> None:
        cycles, self.cycles[:] = list(self.cycles), []
        for cycle in cycles:
            cycle()

    def bound(self) -> dict[str, str]:
        return {p.metadata.name: p.spec.node_name for p in self.cluster.pods.values() if p.spec.node_name}

    def reasons(self) -> list[tuple[str, str]]:
        return [(a.pod.metadata.name, a.reason) for a in self.abandoned]

    def failed_scheduling(self) -> list[str]:
        return [e.regarding for e in self.cluster.events if e.reason == "FailedScheduling"]


def shrunk(node: Node, cpu: str) -> Node:
    alloc = dict(node.status.allocatable)
    alloc["cpu"] = cpu
    status = msgspec.structs.replace(node.status, allocatable=alloc, capacity=alloc)
    return msgspec.structs.replace(node, status=status)


def test_a_decision_still_valid_is_bound() -> None:
    h = Held([make_node("n1")], [make_pod("a", cpu="1")])
    h.place_all()
    h.bind_held()
    assert h.bound() == {"a": "n1"}
    assert h.abandoned == []


def test_node_deleted_before_the_bind_drops_the_decision_and_requeues_the_pod_at_once() -> None:
    n1 = make_node("n1")
    h = Held([n1], [make_pod("a", cpu="1")])
    h.place_all()
    del h.cluster.nodes["n1"]
    h.scheduler.on_node_delete(n1)
    h.bind_held()
    assert h.bound() == {}
    assert h.reasons() == [("a", "NodeGone")]
    assert h.failed_scheduling() == []  # nothing failed but the timing: no FailedScheduling
    assert h.scheduler.cache.assumed_count == 0
    assert h.scheduler.queue.where("default-a") == "active"  # no backoff
    n2 = h.cluster.nodes["n2"] = make_node("n2")
    h.scheduler.on_node_add(n2)
    h.place_all()
    h.bind_held()
    assert h.bound() == {"a": "n2"}


def test_node_shrunk_drops_only_the_decisions_that_no_longer_fit() -> None:
    """Two pods assumed on a node that then shrinks to room for one: one is dropped, the other is
    bound, and the node is never overfilled."""
    n1 = make_node("n1", cpu="4")
    h = Held([n1], [make_pod("a", cpu="600m"), make_pod("b", cpu="600m")])
    h.place_all()
    assert len(h.cycles) == 2
    h.scheduler.on_node_update(n1, shrunk(n1, "1"))
    h.bind_held()
    assert len(h.bound()) == 1
    (dropped,) = h.abandoned
    assert dropped.reason == "NoLongerFits" and "Insufficient cpu" in dropped.message
    assert h.scheduler.cache.assumed_count == 0


def test_host_port_taken_meanwhile_drops_the_decision() -> None:
    h = Held([make_node("n1")], [make_pod("a", host_ports=[8080])])
    h.place_all()
    other = make_pod("other", host_ports=[8080], node_name="n1", scheduler_name="someone-else")
    h.scheduler.on_pod_add(other)  # bound by another scheduler while our bind waited
    h.bind_held()
    assert h.bound() == {}
    assert h.reasons() == [("a", "NoLongerFits")]
    assert "free ports" in h.abandoned[0].message


def test_pod_deleted_before_the_bind_is_not_bound_nor_requeued() -> None:
    pod = make_pod("a", cpu="1")
    h = Held([make_node("n1")], [pod])
    h.place_all()
    h.scheduler.on_pod_delete(pod)
    h.bind_held()
    assert h.bound() == {}
    assert h.reasons() == [("a", "PodGone")]
    assert h.scheduler.queue.where("default-a") is None


def test_a_refusing_gate_drops_every_held_decision_without_binding() -> None:
    refusal: list[str] = []
    h = Held(
        [make_node("n1")],
        [make_pod("a", cpu="1"), make_pod("b", cpu="1")],
        gate=lambda: refusal[0] if refusal else None,
    )
    h.place_all()
    refusal.append("not leading")
    h.bind_held()
    assert h.bound() == {}
    assert sorted(h.reasons()) == [("a", "Refused"), ("b", "Refused")]
    assert all(a.message == "not leading" for a in h.abandoned)
    assert [a.result for a in h.attempts] == []  # neither Scheduled nor a failure was reported
    assert h.failed_scheduling() == []


def test_only_the_profiles_own_filters_are_rechecked() -> None:
    """A profile without NodeResourcesFit never filtered on resources: a shrink does not drop its pod."""
    n1 = make_node("n1", cpu="4")
    h = Held([n1], [make_pod("a", cpu="2")], points=NO_FIT)
    h.place_all()
    h.scheduler.on_node_update(n1, shrunk(n1, "1"))
    h.bind_held()
    assert h.bound() == {"a": "n1"}


def test_a_dropped_decision_frees_its_room_for_the_next_cycle() -> None:
    n1 = make_node("n1", cpu="1")
    h = Held([n1], [make_pod("a", cpu="600m")])
    h.place_all()
    h.scheduler.on_node_update(n1, shrunk(n1, "500m"))
    h.bind_held()
    assert h.reasons() == [("a", "NoLongerFits")]
    assert h.scheduler.cache.node_info("n1") is not None
    info: Any = h.scheduler.cache.node_info("n1")
    assert info.requested.get("cpu", 0) == 0


class RefusingCluster(MemoryCluster):
    """The gate closes between the last look and the POST: the port refuses the bind itself."""

    def bind(self, pod: Pod, node_name: str) -> None:
        raise BindRefused("lost leadership")


def test_a_bind_the_port_refuses_is_abandoned_not_failed() -> None:
    """`BindRefused` raised by the port's bind reaches the core through DefaultBinder and the Bind
    plugins' runner; it is still a refusal: undone and requeued at once, no FailedScheduling, no
    backoff, whether the cycle runs whole or split as the live pipeline splits it."""
    for split in (False, True):
        h = Held([make_node("n1")], [make_pod("a", cpu="1")], cluster=RefusingCluster)
        h.place_all()
        (job,) = h.cycles
        assert isinstance(job, BindingJob)
        if split:
            assert job.splittable() and job.prepare()
            job.finish(job.bind())
        else:
            job()
        assert h.bound() == {}
        assert h.reasons() == [("a", "Refused")]
        assert h.abandoned[0].message == "lost leadership"
        assert [a.result for a in h.attempts] == []
        assert h.failed_scheduling() == []
        assert h.scheduler.cache.assumed_count == 0
        assert h.scheduler.queue.where("default-a") == "active"  # no backoff
