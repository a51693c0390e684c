"""What a scheduler keeps for a pod it has bound: nothing that holds the pod object (a replay of
100,000 events schedules ~68,000 pods, and each kept Pod costs kilobytes), and an in-memory
cluster told to keep no Events records none."""

from __future__ import annotations

from kubesched.api.loader import LoadedObjects
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import default_config
from kubesched.framework.node_info import pod_key
from kubesched.plugins import default_registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod


def _run(keep_events: bool) -> tuple[Scheduler, MemoryCluster, list[str]]:
    clock = VirtualClock()
    # One node full at first: the pending pods fail (their shape and verdicts are kept), then
    # the running pod goes and they are retried and bound.
    running = make_pod("big", cpu="2", node_name="n0")
    pending = [make_pod(f"p{i}", cpu="500m") for i in range(3)]
    objects = LoadedObjects(nodes=[make_node("n0", cpu="2")], pods=[running, *pending])
    cluster = MemoryCluster(objects, clock.now, keep_events=keep_events)
    registry = default_registry()
    scheduler = Scheduler(
        profiles_from_config(default_config(registry), registry), registry, cluster, clock, SchedulerOptions()
    )
    cluster.subscribe(scheduler)
    run_until_settled(scheduler, clock, cluster)
    cluster.delete_pod(cluster.pods[pod_key(cluster.admit(running))], reason="test", message="gone")
    run_until_settled(scheduler, clock, cluster)
    return scheduler, cluster, [pod_key(cluster.admit(p)) for p in pending]


def test_bound_pods_leave_no_shape_in_the_filter_memo() -> None:
    scheduler, cluster, keys = _run(keep_events=True)
    assert all(cluster.pods[k].spec.node_name == "n0" for k in keys)
    assert not any(k in scheduler.filter_memo._shapes for k in keys)
    assert any(e.reason == "FailedScheduling" for e in cluster.events)


def test_a_cluster_keeping_no_events_records_none() -> None:
    _, cluster, keys = _run(keep_events=False)
    assert all(cluster.pods[k].spec.node_name == "n0" for k in keys)
    assert cluster.events == []
