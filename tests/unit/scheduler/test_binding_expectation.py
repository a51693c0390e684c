"""v1.37's NominatedNodeNameForExpectation: a binding that will take a while sets the pod's
`nominatedNodeName` before PreBind (or the Permit wait) starts; a quick bind writes nothing more.

Each case records, on the in-memory cluster, the order of the expectation write, the bind and the
clearing of the nomination after a failure, and what the pod's status says at the end (the API
server clears the nomination when it binds). The same rule on the real API server is compared with
kube-scheduler v1.37.2 in tests/differential/test_v137_deltas.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework import CycleState, QueuedPodInfo, Status
from kubesched.framework.node_info import pod_key
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod


class RecordingCluster(MemoryCluster):
    """The in-memory cluster, with the scheduler's writes about the pod kept in order."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.writes: list[str] = []

    def expect_binding(self, pod: Pod, node_name: str) -> None:
        self.writes.append(f"expect {node_name}")
        MemoryCluster.set_nominated_node_name(self, pod, node_name)

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        self.writes.append(f"nominate {node_name!r}")
        super().set_nominated_node_name(pod, node_name)

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        if nominated_node_name is not None:
            # The live writer skips a write equal to what the given pod says: it must say n0.
            self.writes.append(f"nominate {nominated_node_name!r} over {pod.status.nominated_node_name!r}")
        super().set_pod_scheduled_condition(
            pod, reason=reason, message=message, nominated_node_name=nominated_node_name
        )

    def bind(self, pod: Pod, node_name: str) -> None:
        self.writes.append(f"bind {node_name}")
        super().bind(pod, node_name)


class Sort:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.pod.metadata.name < b.pod.metadata.name


class Binder:
    name = "Binder"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.handle.bind(pod, node_name)
        return None


@dataclass
class PreBinder:
    """A PreBind plugin whose pre-flight answers `flight` (absent: no pre-flight at all)."""

    flight: Status | str | None = "absent"
    outcome: Status | None = None
    seen: list[str] = field(default_factory=list)

    def plugin(self, cluster: RecordingCluster) -> type:
        spec = self

        class WithFlight:
            name = "PreBinder"

            def __init__(self, handle: Any) -> None:
                pass

            def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
                assert not isinstance(spec.flight, str)
                return spec.flight

            def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
                spec.seen.append(cluster.pods[pod_key(pod)].status.nominated_node_name)
                return spec.outcome

        class WithoutFlight:
            name = "PreBinder"

            def __init__(self, handle: Any) -> None:
                pass

            def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
                spec.seen.append(cluster.pods[pod_key(pod)].status.nominated_node_name)
                return spec.outcome

        return WithoutFlight if self.flight == "absent" else WithFlight


class WaitOnce:
    """Permit makes the first pod wait; the second allows it (a pair)."""

    name = "WaitOnce"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def permit(self, state: Any, pod: Pod, node: str) -> tuple[Status | None, float]:
        waiting = self.handle.iterate_waiting_pods()
        for wp in waiting:
            wp.allow(self.name)
        return (None, 0.0) if waiting else (Status.wait(), 10.0)


def schedule(pods: list[Pod], pre_binder: PreBinder | None, permit: bool = False) -> RecordingCluster:
    clock = VirtualClock()
    cluster = RecordingCluster(LoadedObjects(nodes=[make_node("n0")], pods=pods), clock.now)
    points: dict[str, list[tuple[str, int]]] = {"queueSort": [("Sort", 1)], "bind": [("Binder", 1)]}
    plugins: list[type] = [Sort, Binder]
    if pre_binder is not None:
        points["preBind"] = [("PreBinder", 1)]
        plugins.append(pre_binder.plugin(cluster))
    if permit:
        points["permit"] = [("WaitOnce", 1)]
        plugins.append(WaitOnce)
    attempts: list[Attempt] = []
    scheduler = Scheduler(
        [ProfileSpec("default-scheduler", points, {})],
        Registry(plugins),
        cluster,
        clock,
        SchedulerOptions(seed=0),
        observer=attempts.append,
    )
    cluster.subscribe(scheduler)
    run_until_settled(scheduler, clock, cluster)
    return cluster


@pytest.mark.parametrize(
    ("pre_binder", "writes", "seen_in_pre_bind"),
    [
        # No PreBind, no Permit wait: the pod is bound at once, no extra write (upstream: no patch).
        (None, ["bind n0"], []),
        # PreBind has nothing to do for this pod (volumes all bound, no claims).
        (PreBinder(flight=Status.skip()), ["bind n0"], [""]),
        # PreBind has work: the nomination is on the pod while PreBind runs.
        (PreBinder(flight=None), ["expect n0", "bind n0"], ["n0"]),
        # A PreBind plugin without a pre-flight may have work: it counts as having it.
        (PreBinder(), ["expect n0", "bind n0"], ["n0"]),
    ],
    ids=["no-prebind", "prebind-skips", "prebind-has-work", "prebind-without-preflight"],
)
def test_nominated_node_name_is_written_before_a_prebind_with_work(
    pre_binder: PreBinder | None, writes: list[str], seen_in_pre_bind: list[str]
) -> None:
    cluster = schedule([make_pod("p")], pre_binder)
    assert cluster.writes == writes
    if pre_binder is not None:
        assert pre_binder.seen == seen_in_pre_bind
    bound = cluster.pods["default-p"]
    assert bound.spec.node_name == "n0"
    assert not bound.status.nominated_node_name  # the API server clears it when it binds


def test_a_failed_prebind_clears_the_nomination_it_wrote() -> None:
    failing = PreBinder(flight=None, outcome=Status.unschedulable("volume gone"))
    cluster = schedule([make_pod("p")], failing)
    assert cluster.writes[:2] == ["expect n0", "nominate '' over 'n0'"]
    assert "bind n0" not in cluster.writes
    assert not cluster.pods["default-p"].status.nominated_node_name


def test_a_pod_waiting_on_permit_is_nominated_before_it_waits() -> None:
    cluster = schedule([make_pod("a"), make_pod("b")], None, permit=True)
    # `a` waits (nominated first), `b` allows it and is bound at once: no expectation for `b`.
    assert cluster.writes[0] == "expect n0"
    assert cluster.writes.count("expect n0") == 1
    assert sorted(w for w in cluster.writes if w.startswith("bind")) == ["bind n0", "bind n0"]
    for name in ("a", "b"):
        assert not cluster.pods[f"default-{name}"].status.nominated_node_name
