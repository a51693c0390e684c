"""Asynchronous preemption (kube-scheduler v1.37's SchedulerAsyncPreemption, on by default).

Where the cluster evicts in the background (live mode), PostFilter nominates the preemptor at once and
returns; the victims are evicted later (DisruptionTarget, then deletion, the last victim only after
the others), and until then DefaultPreemption's PreEnqueue holds the preemptor back with upstream's
message. `DeferredEvictionCluster` is the in-memory cluster with that capability, whose background
work runs only when the test says so, so each step can be looked at. The same flow against the real
API server, side by side with kube-scheduler v1.37.2, is in tests/differential/test_v137_deltas.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from tests.unit.plugins.test_default_preemption import preemption_scheduler

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework.interfaces import BackgroundEvictionPort
from kubesched.framework.node_info import pod_key
from kubesched.framework.status import Code
from kubesched.plugins.default_preemption import WAITING_FOR_PREEMPTION, DefaultPreemption
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import Attempt
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod

WHY = "default-scheduler: preempting to accommodate a higher priority pod"


class DeferredEvictionCluster(MemoryCluster):
    """The in-memory cluster evicting in the background, the background being `finish()`."""

    def __init__(self, objects: LoadedObjects, now: Any) -> None:
        super().__init__(objects, now)
        self.pending: list[tuple[Callable[[], None], Callable[[], None]]] = []
        #: (victim, condition reason, message) for every DisruptionTarget written, in order.
        self.disruptions: list[tuple[str, str, str]] = []
        self.failing: set[str] = set()

    def evict_now(self, pod: Pod, *, reason: str, message: str) -> bool:
        if pod.metadata.name in self.failing:
            raise RuntimeError(f'pods "{pod.metadata.name}" is forbidden: 500')
        if pod_key(pod) not in self.pods:
            return False
        self.disruptions.append((pod.metadata.name, reason, message))
        self.delete_pod(pod, reason=reason, message=message)
        return True

    def run_in_background(self, work: Callable[[], None], then: Callable[[], None]) -> None:
        self.pending.append((work, then))

    def finish(self) -> None:
        while self.pending:
            work, then = self.pending.pop(0)
            try:
                work()
            except Exception:
                pass  # the live port logs it; `then` still runs
            finally:
                then()


class Harness:
    def __init__(self, nodes: Sequence[Node], pods: Iterable[Pod]) -> None:
        self.clock = VirtualClock()
        self.cluster = DeferredEvictionCluster(
            LoadedObjects(nodes=list(nodes), pods=list(pods)), self.clock.now
        )
        self.attempts: list[Attempt] = []
        self.scheduler = preemption_scheduler(self.cluster, self.clock, self.attempts, pre_enqueue=True)

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.scheduler.frameworks["default-scheduler"].plugins["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def pod(self, name: str) -> Pod:
        return self.cluster.pods[f"default-{name}"]

    def preempted_notes(self) -> list[str]:
        return [e.regarding for e in self.cluster.events if e.reason == "Preempted"]


def small(name: str, node: str, cpu: str = "2", priority: int = 1) -> Pod:
    return make_pod(name, cpu=cpu, priority=priority, node_name=node)


def test_the_live_port_offers_background_eviction_and_the_simulator_does_not() -> None:
    from kubesched.cluster.kube.live import LiveCluster

    assert all(hasattr(LiveCluster, m) for m in ("evict_now", "run_in_background"))
    assert not isinstance(MemoryCluster(LoadedObjects(), lambda: 0.0), BackgroundEvictionPort)


def test_preemptor_is_nominated_at_once_and_held_back_until_its_victims_are_evicted() -> None:
    h = Harness(
        [make_node("n0", cpu="4")],
        [small("a", "n0"), small("b", "n0"), make_pod("vip", cpu="2", priority=100)],
    )
    assert h.scheduler.schedule_one()
    first = h.attempts[0]
    assert (first.result, first.nominated_node, first.victims) == ("Unschedulable", "n0", ["default/b"])
    assert h.pod("vip").status.nominated_node_name == "n0"
    # Nothing evicted yet: the evictions wait for the background.
    assert "default-b" in h.cluster.pods and h.cluster.disruptions == [] and h.preempted_notes() == []
    st = h.plugin.pre_enqueue(h.pod("vip"))
    assert st is not None and (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        WAITING_FOR_PREEMPTION,
    )
    # Forced back to activeQ meanwhile, the pod is gated by DefaultPreemption, not scheduled.
    h.scheduler.queue.activate(["default-vip"])
    assert h.scheduler.queue.where("default-vip") == "gated"
    assert h.scheduler.queue.get("default-vip").gating_plugin == "DefaultPreemption"  # type: ignore[union-attr]

    h.cluster.finish()
    assert h.cluster.disruptions == [("b", "PreemptionByScheduler", WHY)]
    assert "default-b" not in h.cluster.pods and "default-a" in h.cluster.pods
    assert h.preempted_notes() == ["default/b"]
    assert h.plugin.pre_enqueue(h.pod("vip")) is None
    run_until_settled(h.scheduler, h.clock, h.cluster)
    last = h.attempts[-1]
    assert (last.pod.metadata.name, last.result, last.node) == ("vip", "Scheduled", "n0")
    assert h.cluster.bind_count == {"default-vip": 1}


def test_a_failed_eviction_stops_before_the_last_victim_and_reactivates_the_preemptor() -> None:
    victims = [small(f"v{i}", "n0", cpu="1") for i in range(3)]
    h = Harness([make_node("n0", cpu="3")], [*victims, make_pod("vip", cpu="3", priority=100)])
    assert h.scheduler.schedule_one()
    assert sorted(h.attempts[0].victims) == ["default/v0", "default/v1", "default/v2"]
    order = [v.split("/")[1] for v in h.attempts[0].victims]
    h.cluster.failing = {order[0]}
    assert h.scheduler.queue.where("default-vip") == "unschedulable"
    h.cluster.finish()
    # Upstream's goroutine: the first error stops the evictions, and the last victim is never touched
    # (kubesched evicts one by one, so nothing after the failure is; upstream's parallel calls may
    # have finished some of the others).
    assert h.cluster.disruptions == [] and h.preempted_notes() == []
    assert all(f"default-{name}" in h.cluster.pods for name in order)
    # ... and the preemptor goes back to activeQ at once, no longer gated.
    assert h.scheduler.queue.where("default-vip") == "active"
    assert h.plugin.pre_enqueue(h.pod("vip")) is None


def test_a_victim_already_gone_is_skipped_without_an_event() -> None:
    h = Harness(
        [make_node("n0", cpu="4")],
        [small("a", "n0"), small("b", "n0"), make_pod("vip", cpu="2", priority=100)],
    )
    assert h.scheduler.schedule_one()
    h.cluster.delete_pod(h.pod("b"), reason="", message="")  # deleted by someone else meanwhile
    h.cluster.finish()
    assert h.cluster.disruptions == [] and h.preempted_notes() == []
    assert h.plugin.pre_enqueue(h.pod("vip")) is None
    run_until_settled(h.scheduler, h.clock, h.cluster)
    assert h.cluster.pods["default-vip"].spec.node_name == "n0"


@pytest.mark.parametrize("last_victim_state", ["deleted", "running"])
def test_the_gate_opens_once_the_last_victims_eviction_has_begun(last_victim_state: str) -> None:
    """Upstream's lastVictimsPendingPreemption: a deletion event that arrives before the eviction
    thread ends must not leave the preemptor held back."""
    victims = [small("v0", "n0", cpu="1"), small("v1", "n0", cpu="1")]
    h = Harness([make_node("n0", cpu="2")], [*victims, make_pod("vip", cpu="2", priority=100)])
    assert h.scheduler.schedule_one()
    work, then = h.cluster.pending.pop()
    seen: list[object] = []
    original = h.cluster.evict_now

    def evict_and_look(pod: Pod, *, reason: str, message: str) -> bool:
        if len(seen) == 1 and last_victim_state == "running":  # the last one, not yet deleted
            seen.append(h.plugin.pre_enqueue(h.pod("vip")))
        done = original(pod, reason=reason, message=message)
        seen.append(h.plugin.pre_enqueue(h.pod("vip")))
        return done

    h.cluster.evict_now = evict_and_look  # type: ignore[method-assign]
    work()
    first_gate, *rest = seen
    assert first_gate is not None  # after the first victim: the last is still to go
    if last_victim_state == "running":
        assert rest[0] is not None and rest[1] is None
    else:
        assert rest == [None]  # the last victim left the cache: done, though `then` has not run
    then()
    assert h.plugin.pre_enqueue(h.pod("vip")) is None
