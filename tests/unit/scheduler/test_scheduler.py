"""The scheduling and binding cycles end to end on the MemoryCluster, with observable fake plugins."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework import CycleState, NodeInfo, PreFilterResult, QueuedPodInfo, Status
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod


class Sort:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return (a.pod.spec.priority or 0) > (b.pod.spec.priority or 0)


class Binder:
    """Binds through the handle; fails the first `failures` binds."""

    name = "Binder"
    failures = 0

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if Binder.failures > 0:
            Binder.failures -= 1
            raise RuntimeError("connection reset")
        self.handle.bind(pod, node_name)
        return None


class OnePodPerNode:
    """A node holds one pod: makes double placement visible."""

    name = "OnePodPerNode"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("node(s) were full") if node_info.pods else None


class Harness:
    def __init__(
        self,
        nodes: int,
        pods: list[Pod],
        extra: dict[str, list[tuple[str, int]]],
        plugins: list[type],
        seed: int = 0,
        args: dict[str, Any] | None = None,
    ) -> None:
        self.clock = VirtualClock()
        objects = LoadedObjects(nodes=[make_node(f"n{i}") for i in range(nodes)], pods=pods)
        self.cluster = MemoryCluster(objects, self.clock.now)
        points: dict[str, list[tuple[str, int]]] = {"queueSort": [("Sort", 1)], "bind": [("Binder", 1)]}
        points.update(extra)
        self.attempts: list[Attempt] = []
        self.scheduler = Scheduler(
            [ProfileSpec("default-scheduler", points, args or {})],
            Registry([Sort, Binder, *plugins]),
            self.cluster,
            self.clock,
            SchedulerOptions(seed=seed, explain=True),
            observer=self.attempts.append,
        )
        self.cluster.subscribe(self.scheduler)

    def run(self) -> None:
        run_until_settled(self.scheduler, self.clock, self.cluster)

    def node_of(self, name: str) -> str:
        return next(p.spec.node_name for p in self.cluster.pods.values() if p.metadata.name == name)

    def events(self, reason: str) -> list[str]:
        return [e.note for e in self.cluster.events if e.reason == reason]


@pytest.fixture(autouse=True)
def _reset_binder() -> None:
    Binder.failures = 0


def test_each_pod_bound_once_and_capacity_never_double_booked() -> None:
    h = Harness(3, [make_pod(f"p{i}") for i in range(5)], {"filter": [("OnePodPerNode", 1)]}, [OnePodPerNode])
    h.run()
    bound = [p for p in h.cluster.pods.values() if p.spec.node_name]
    assert len(bound) == 3 and len({p.spec.node_name for p in bound}) == 3
    assert all(count == 1 for count in h.cluster.bind_count.values())
    assert h.events("FailedScheduling") == ["0/3 nodes are available: 3 node(s) were full."] * 2
    assert sorted(h.events("Scheduled"))[0].startswith("Successfully assigned default/p")


def test_failed_pod_gets_condition_and_is_scheduled_when_capacity_appears() -> None:
    h = Harness(1, [make_pod("a"), make_pod("b")], {"filter": [("OnePodPerNode", 1)]}, [OnePodPerNode])
    h.run()
    pending = [p for p in h.cluster.pods.values() if not p.spec.node_name]
    assert len(pending) == 1
    cond = pending[0].status.conditions[-1]
    assert (cond.type, cond.status, cond.reason) == ("PodScheduled", "False", "Unschedulable")
    assert cond.message == "0/1 nodes are available: 1 node(s) were full."
    running = next(p for p in h.cluster.pods.values() if p.spec.node_name)
    h.cluster.delete_pod(running, reason="test", message="")  # frees the node: AssignedPodDelete
    h.run()
    assert h.cluster.pods[pending[0].metadata.uid].spec.node_name == "n0"


def test_no_score_plugins_means_first_feasible_node_from_a_rotating_start() -> None:
    h = Harness(4, [make_pod(f"p{i}", priority=10 - i) for i in range(4)], {}, [])
    h.run()
    assert [h.node_of(f"p{i}") for i in range(4)] == ["n0", "n1", "n2", "n3"]


def test_ties_are_broken_by_the_seeded_rng() -> None:
    class Flat:
        name = "Flat"

        def score(self, state: Any, pod: Any, ni: NodeInfo) -> int:
            return 50

    def placements(seed: int) -> list[str]:
        h = Harness(
            10,
            [make_pod(f"p{i}", priority=100 - i) for i in range(20)],
            {"score": [("Flat", 1)]},
            [Flat],
            seed=seed,
        )
        h.run()
        return [h.node_of(f"p{i}") for i in range(20)]

    assert placements(1) == placements(1)
    assert placements(1) != placements(2)


def test_reserve_failure_unreserves_in_reverse_and_forgets_the_pod() -> None:
    log: list[str] = []

    def reserve_plugin(name: str, fail: bool) -> type:
        def reserve(self: Any, state: Any, pod: Any, node: str) -> Status | None:
            log.append(f"reserve {name}")
            return Status.unschedulable("volume taken") if fail else None

        def unreserve(self: Any, state: Any, pod: Any, node: str) -> None:
            log.append(f"unreserve {name}")

        return type(name, (), {"name": name, "reserve": reserve, "unreserve": unreserve})

    a, b = reserve_plugin("A", False), reserve_plugin("B", True)
    h = Harness(1, [make_pod("p")], {"reserve": [("A", 1), ("B", 1)]}, [a, b])
    h.scheduler.schedule_one()
    assert log == ["reserve A", "reserve B", "unreserve B", "unreserve A"]
    assert not h.scheduler.cache.has_pod("default-p")
    assert h.attempts[-1].result == "Unschedulable"
    assert h.attempts[-1].message == "0/1 nodes are available: 1 volume taken."


def test_one_cycle_in_ten_is_sampled_for_plugin_metrics_and_its_binding_cycle_too() -> None:
    seen: list[tuple[str, bool]] = []

    class Sampled:
        name = "Sampled"

        def reserve(self, state: CycleState, pod: Pod, node: str) -> None:
            seen.append(("reserve", state.record_plugin_metrics))

        def pre_bind(self, state: CycleState, pod: Pod, node: str) -> None:
            seen.append(("preBind", state.record_plugin_metrics))

    h = Harness(25, [make_pod(f"p{i:02}") for i in range(25)], {"reserve": [("Sampled", 1)],
                "preBind": [("Sampled", 1)]}, [Sampled])  # fmt: skip
    h.run()
    assert len(seen) == 50
    assert [i for i, (point, on) in enumerate(seen) if point == "reserve" and on] == [0, 20, 40]
    assert [i for i, (point, on) in enumerate(seen) if point == "preBind" and on] == [1, 21, 41]


class WaitForPair:
    """Permit holds pods until two are waiting, then allows both (a tiny gang)."""

    name = "WaitForPair"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def permit(self, state: Any, pod: Pod, node: str) -> tuple[Status | None, float]:
        waiting = self.handle.iterate_waiting_pods()
        if waiting:
            for wp in waiting:
                wp.allow(self.name)
            return None, 0.0
        return Status.wait(), 10.0


def test_permit_wait_then_allow_binds_both() -> None:
    h = Harness(2, [make_pod("a"), make_pod("b")], {"permit": [("WaitForPair", 1)]}, [WaitForPair])
    h.run()
    assert h.node_of("a") and h.node_of("b")
    assert [a.result for a in h.attempts] == ["Waiting", "Scheduled", "Scheduled"]
    assert h.clock.now() == 0.0  # nothing had to time out


def test_permit_timeout_rejects_in_virtual_time_and_unreserves() -> None:
    unreserved: list[str] = []

    class Res:
        name = "Res"

        def reserve(self, *a: Any) -> None:
            return None

        def unreserve(self, state: Any, pod: Pod, node: str) -> None:
            unreserved.append(pod.metadata.name)

    h = Harness(
        1, [make_pod("lonely")], {"permit": [("WaitForPair", 1)], "reserve": [("Res", 1)]}, [WaitForPair, Res]
    )
    h.scheduler.schedule_one()
    assert h.scheduler.cache.is_assumed("default-lonely")
    h.clock.advance_to(10.0)
    h.scheduler.release_waiting_pods()
    assert unreserved == ["lonely"]
    assert not h.scheduler.cache.has_pod("default-lonely")
    assert h.attempts[-1].message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin WaitForPair."
    )
    assert h.cluster.pods["default-lonely"].spec.node_name == ""


def test_bind_failure_requeues_and_a_later_attempt_binds() -> None:
    Binder.failures = 1
    h = Harness(1, [make_pod("p")], {}, [])
    h.run()
    assert h.node_of("p") == "n0"
    assert [a.result for a in h.attempts] == ["Error", "Scheduled"]
    assert "connection reset" in (h.attempts[0].message or "")
    assert h.clock.now() >= 1.0  # waited out the error backoff in virtual time
    assert h.cluster.bind_count == {"default-p": 1}


def test_prefilter_narrowing_reports_absent_nodes() -> None:
    class Only:
        name = "Only"

        def pre_filter(self, state: Any, pod: Any, nodes: Any) -> Any:
            return PreFilterResult(frozenset({"n1"})), None

    h = Harness(
        3,
        [make_pod("a"), make_pod("b")],
        {"preFilter": [("Only", 1)], "filter": [("OnePodPerNode", 1)]},
        [Only, OnePodPerNode],
    )
    h.run()
    assert h.node_of("a") == "n1" or h.node_of("b") == "n1"
    assert h.events("FailedScheduling") == [
        "0/3 nodes are available: 1 node(s) were full, 2 node(s) didn't satisfy plugin(s) [Only]."
    ]


def test_prefilter_rejection_message_lists_no_node_reasons() -> None:
    class No:
        name = "No"

        def pre_filter(self, state: Any, pod: Any, nodes: Any) -> Status:
            return Status.unschedulable_and_unresolvable("pod has unbound immediate PersistentVolumeClaims")

    h = Harness(2, [make_pod("a")], {"preFilter": [("No", 1)]}, [No])
    h.run()
    assert h.events("FailedScheduling") == [
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    ]


def test_invalid_quantity_pod_is_refused_without_stopping_others() -> None:
    bad = make_pod("bad", memory="12XB")
    h_objects = LoadedObjects(nodes=[make_node("n0")], pods=[bad, make_pod("good")])
    clock = VirtualClock()
    cluster = MemoryCluster(h_objects, clock.now)
    scheduler = Scheduler(
        [ProfileSpec("default-scheduler", {"queueSort": [("Sort", 1)], "bind": [("Binder", 1)]}, {})],
        Registry([Sort, Binder]),
        cluster,
        clock,
    )
    refused: list[str] = []
    cluster.subscribe(scheduler, on_error=lambda pod, exc: refused.append(f"{pod.metadata.name}: {exc}"))
    run_until_settled(scheduler, clock, cluster)
    assert refused and refused[0].startswith("bad: spec.containers[0].resources.requests.memory")
    assert cluster.pods["default-good"].spec.node_name == "n0"
