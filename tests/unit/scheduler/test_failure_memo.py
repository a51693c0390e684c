"""Repeated failures (scheduler/failure_memo): a pod of the same content as the one that just failed,
on an unchanged cluster, fails the same way without running the plugins again, and anything that
could change the answer (a pod, a node, a nomination, another object, a plugin without the promise)
makes the next pod run a full attempt."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from tests.unit.simulate.simulate_helpers import replay_json

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import default_config
from kubesched.framework import CycleState, NodeInfo, PodInfo, Status
from kubesched.framework.events import ActionType, Resource
from kubesched.plugins import default_registry
from kubesched.plugins.default_preemption import DefaultPreemption
from kubesched.plugins.dynamic_resources.plugin import DynamicResources
from kubesched.plugins.inter_pod_affinity import InterPodAffinity
from kubesched.plugins.pod_topology_spread import PodTopologySpread
from kubesched.plugins.volume_binding import VolumeBinding
from kubesched.scheduler.batch import NO_HINT
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.failure_memo import (
    MAX_FAILURES,
    MEMORY_CODES,
    FailureMemo,
    RepeatedFailures,
    pod_content,
)
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Attempt, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod, make_table
from kubesched.testing.scenarios import synthetic_scenario


class Cluster:
    """The default profile on a MemoryCluster, counting full attempts (NodeResourcesFit PreFilter)."""

    def __init__(self, pods: list[Pod], nodes: int = 3) -> None:
        self.clock = VirtualClock()
        objects = LoadedObjects(nodes=[make_node(f"n{i}", cpu="1") for i in range(nodes)], pods=pods)
        self.cluster = MemoryCluster(objects, self.clock.now)
        registry = default_registry()
        self.attempts: list[Attempt] = []
        self.scheduler = Scheduler(
            profiles_from_config(default_config(registry), registry),
            registry,
            self.cluster,
            self.clock,
            SchedulerOptions(seed=7),
            observer=self.attempts.append,
        )
        self.cluster.subscribe(self.scheduler)
        self.full = 0
        fit = self.scheduler.frameworks["default-scheduler"].plugins["NodeResourcesFit"]
        real = fit.pre_filter

        def counting(*args: Any) -> Any:
            self.full += 1
            return real(*args)

        fit.pre_filter = counting

    def run(self) -> None:
        run_until_settled(self.scheduler, self.clock, self.cluster)

    def failures(self) -> list[str]:
        return [e.note for e in self.cluster.events if e.reason == "FailedScheduling"]


def _full_nodes(n: int = 3) -> list[Pod]:
    return [make_pod(f"big{i}", cpu="1", node_name=f"n{i}") for i in range(n)]


def test_pods_of_one_content_fail_once_and_repeat_the_failure() -> None:
    c = Cluster([*_full_nodes(), *(make_pod(f"w{i}", cpu="500m") for i in range(5))])
    c.run()
    assert c.full == 1  # one full attempt; the four siblings repeat it
    assert (
        c.failures()
        == [
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod."
        ]
        * 5
    )
    assert all(a.result == "Unschedulable" and a.reasons == [("Insufficient cpu", 3)] for a in c.attempts)
    assert c.scheduler.batches["default-scheduler"].attempts == {NO_HINT: 5}  # repeats count theirs
    for p in c.cluster.pods.values():
        if not p.spec.node_name:
            assert p.status.conditions[-1].reason == "Unschedulable"


def test_content_other_than_name_makes_its_own_attempt() -> None:
    pods = [
        make_pod("a", cpu="500m"),
        make_pod("b", cpu="500m", labels={"app": "x"}),
        make_pod("c", cpu="600m"),
    ]
    c = Cluster([*_full_nodes(), *pods])
    c.run()
    assert c.full == 3
    assert pod_content(make_pod("a", cpu="500m")) == pod_content(make_pod("z", cpu="500m"))
    assert pod_content(make_pod("a", cpu="500m")) != pod_content(make_pod("a", cpu="500m", namespace="other"))


def test_a_failure_outlives_pod_changes_that_leave_each_changed_node_as_it_failed() -> None:
    c = Cluster([*_full_nodes(), *(make_pod(f"w{i}", cpu="600m") for i in range(3))])
    c.run()
    assert c.full == 1
    s = c.scheduler
    # big0 leaves: w0 takes n0 (a full attempt); n0 is the only node whose pods changed, and
    # filtered again for w1 and w2 it still says "Insufficient cpu": both repeat the failure.
    big = next(p for p in c.cluster.pods.values() if p.metadata.name == "big0")
    c.cluster.delete_pod(big, reason="test", message="")
    c.run()
    assert c.full == 2
    assert sorted(p.metadata.name for p in c.cluster.pods.values() if p.spec.node_name) == [
        "big1",
        "big2",
        "w0",
    ]
    assert c.failures()[-1] == c.failures()[0]
    waiting = [q.key for q in s.queue.pending_pods()]
    assert len(waiting) == 2
    # Retried with nothing changed: both repeat the kept failure.
    s.queue.activate(waiting)
    c.run()
    assert c.full == 2
    # Another object changed (any kind may matter to some plugin): the next one runs in full.
    s.on_object_event(Resource.STORAGE_CLASS, ActionType.ADD, None, None)
    s.queue.activate(waiting)
    c.run()
    assert c.full == 3


def test_a_changed_node_that_fails_differently_means_a_full_attempt() -> None:
    waiting = [make_pod(f"w{i}", cpu="600m", host_ports=[80]) for i in range(2)]
    c = Cluster([*_full_nodes(), *waiting])
    c.run()
    assert c.full == 1
    # n0 now has room but its port is taken: a new reason on a changed node, a new message.
    big = next(p for p in c.cluster.pods.values() if p.metadata.name == "big0")
    c.cluster.delete_pod(big, reason="test", message="")
    c.cluster.create_pod(make_pod("porty", cpu="100m", node_name="n0", host_ports=[80]))
    c.run()
    assert c.full == 2
    assert c.failures()[-1].startswith(
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "2 Insufficient cpu."
    )


def test_a_nomination_or_a_nominated_pod_means_full_attempts() -> None:
    c = Cluster([*_full_nodes(), *(make_pod(f"w{i}", cpu="500m") for i in range(3))])
    s = c.scheduler
    version = s.nominator.version
    waiting = next(p for p in c.cluster.pods.values() if p.metadata.name == "w0")
    s.nominator.add(PodInfo(waiting), "n0")
    assert s.nominator.version == version + 1
    c.run()
    # w0 is nominated: never repeated nor kept; w1 fails in full, w2 repeats w1.
    assert c.full == 2


def test_a_plugin_without_the_promise_turns_repeats_off() -> None:
    class Opinionated:
        name = "Opinionated"

        def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
            return Status.unschedulable("no")

    registry = default_registry()
    registry.register(Opinionated)
    config = default_config(registry)
    specs = profiles_from_config(config, registry)
    points = {k: list(v) for k, v in specs[0].points.items()}
    points["filter"] = [*points["filter"], ("Opinionated", 1)]
    spec = replace(specs[0], points=points)
    clock = VirtualClock()
    objects = LoadedObjects(nodes=[make_node("n0")], pods=[make_pod(f"w{i}") for i in range(3)])
    cluster = MemoryCluster(objects, clock.now)
    scheduler = Scheduler([spec], registry, cluster, clock, SchedulerOptions())
    cluster.subscribe(scheduler)
    assert not scheduler.frameworks["default-scheduler"].repeats_failures
    run_until_settled(scheduler, clock, cluster)
    assert len(scheduler.repeated_failures.memo) == 0


def test_claims_and_failed_preemptions_decide_whether_a_failure_repeats() -> None:
    state = CycleState()
    plain = make_pod("p")
    with_pvc = make_pod("p", spec={"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]})
    assert VolumeBinding.failure_repeats(VolumeBinding.__new__(VolumeBinding), state, plain)
    assert not VolumeBinding.failure_repeats(VolumeBinding.__new__(VolumeBinding), state, with_pvc)
    dra = DynamicResources.__new__(DynamicResources)
    assert dra.failure_repeats(state, plain)  # PreFilter never ran
    state.write("DynamicResources", object())  # type: ignore[arg-type]
    assert not dra.failure_repeats(state, plain)  # it had claims to look at
    state.skip_filter_plugins.add("DynamicResources")
    assert dra.failure_repeats(state, plain)
    assert not DefaultPreemption().failure_repeats(CycleState(), plain)  # never said it may


def test_which_failures_outlive_pod_changes() -> None:
    """Plugins reading other nodes' pods let a failure outlive pod changes only when they did not
    take part, and InterPodAffinity only while nobody has required anti-affinity."""
    table = make_table([make_node("n0")])
    pod = make_pod("p")
    state = CycleState()
    spread, affinity = PodTopologySpread(), InterPodAffinity()
    assert not spread.failure_survives_pod_changes(state, pod, table)  # it took part
    assert not affinity.failure_survives_pod_changes(state, pod, table)
    state.skip_filter_plugins |= {"PodTopologySpread", "InterPodAffinity"}
    assert spread.failure_survives_pod_changes(state, pod, table)
    assert affinity.failure_survives_pod_changes(state, pod, table)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    table.add_pod(0, PodInfo(make_pod("loner", node_name="n0", spec={"affinity": anti})))
    assert not affinity.failure_survives_pod_changes(state, pod, table)  # its PreFilter would now compute
    with_pvc = make_pod("v", spec={"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]})
    binding = VolumeBinding.__new__(VolumeBinding)
    assert binding.failure_survives_pod_changes(state, pod, table)
    assert not binding.failure_survives_pod_changes(state, with_pvc, table)
    assert not DefaultPreemption().failure_survives_pod_changes(state, pod, table)  # no preemption mark


def test_a_repeated_preemption_draws_its_offset_again() -> None:
    """High-priority pods that find no victims draw the preemption offset on every attempt; the
    repeats draw it too, so the generator ends where full attempts leave it."""

    def rng_after(repeats: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
        pods = [
            *(make_pod(f"big{i}", cpu="1", node_name=f"n{i}", priority=100) for i in range(3)),
            *(make_pod(f"w{i}", cpu="500m", priority=100) for i in range(4)),
        ]
        c = Cluster(pods)
        if not repeats:
            monkeypatch.setattr(c.scheduler.repeated_failures, "_repeatable_content", lambda fwk, qpi: None)
        c.run()
        plugin = c.scheduler.frameworks["default-scheduler"].plugins["DefaultPreemption"]
        return plugin.rng.getstate(), c.full

    with pytest.MonkeyPatch.context() as mp:
        full_state, full_attempts = rng_after(False, mp)
    with pytest.MonkeyPatch.context() as mp:
        repeated_state, repeated_attempts = rng_after(True, mp)
    assert (full_attempts, repeated_attempts) == (4, 1)
    assert repeated_state == full_state


def test_memo_keeps_one_cluster_state_and_a_bounded_number_of_failures() -> None:
    memo = FailureMemo()
    failure: Any = SimpleNamespace(num_all_nodes=3)
    memo.put((1,), "p", b"a", failure)
    assert memo.get((1,), "p", b"a") is failure
    assert memo.get((2,), "p", b"a") is None
    assert memo.get((1,), "q", b"a") is None
    memo.put((2,), "p", b"b", failure)
    assert len(memo) == 1 and memo.get((2,), "p", b"a") is None
    for i in range(MAX_FAILURES + 5):
        memo.put((2,), "p", str(i).encode(), failure)
    assert 0 < len(memo) <= MAX_FAILURES
    # On a big cluster each failure holds per-node arrays: fewer are kept.
    big: Any = SimpleNamespace(num_all_nodes=MEMORY_CODES // 10)
    for i in range(25):
        memo.put((2,), "p", str(i).encode(), big)
    assert 0 < len(memo) <= 10


def test_repeated_failures_change_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that fills a cluster (waiting pods, preemption) gives the same report, pod by pod,
    with failures repeated as with every attempt run in full."""
    doc = synthetic_scenario(nodes=12, events=500, seed=5, hours=1, load=1.3)

    repeats: list[int] = []
    real = RepeatedFailures.repeat

    def counting(self: RepeatedFailures, *args: Any) -> int | None:
        repeats.append(1)
        return real(self, *args)

    monkeypatch.setattr(RepeatedFailures, "repeat", counting)
    repeated = replay_json(doc)
    assert len(repeats) > 300
    assert repeated["summary"]["evictions"]["Preempted"] > 0
    monkeypatch.setattr(RepeatedFailures, "_repeatable_content", lambda self, fwk, qpi: None)
    assert replay_json(doc) == repeated
