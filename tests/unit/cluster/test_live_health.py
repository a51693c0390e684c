"""What /livez and /readyz of `kubesched run` report: a standby is alive but not ready, a stuck
scheduling loop fails liveness, shutdown fails readiness."""

from __future__ import annotations

import threading
import time

from kube_fakes import FakeKube, ScriptedListWatch, list_page, node_json, pod_json
from test_kube_live import CONFIG, PerKind, wait_until

from kubesched.cluster.kube.health import LiveHealth
from kubesched.cluster.kube.informer import KINDS
from kubesched.cluster.kube.leader import LeaderElector
from kubesched.cluster.kube.live import LiveCluster
from kubesched.config import decode_config
from kubesched.plugins import default_registry


class NoLease:
    def describe(self) -> str:
        return "kube-system/kubesched"


def make_cluster() -> tuple[LiveCluster, PerKind]:
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "test.yaml", registry)
    source = PerKind(
        {
            "Node": ScriptedListWatch([[list_page([node_json("n1")], rv="1")]], []),
            "Pod": ScriptedListWatch([[list_page([pod_json("a", scheduler="kubesched")], rv="1")]], []),
        }
    )
    return LiveCluster(cfg, registry, FakeKube(), source=source), source  # type: ignore[arg-type]


def failing(checks: dict[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, check in checks.items():
        problem = check()  # type: ignore[operator]
        if problem:
            out[name] = problem
    return out


def test_readiness_needs_sync_not_leadership_and_fails_from_shutdown_on() -> None:
    cluster, source = make_cluster()
    stopping = threading.Event()
    elector = LeaderElector(NoLease(), "me", lease_duration=15, renew_deadline=10)  # type: ignore[arg-type]
    health = LiveHealth(cluster, elector, lease="kube-system/kubesched", stopping=stopping)
    assert failing(health.ready_checks()) == {"informer-sync": "informers not started"}
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    cluster.wait_for_sync(5)
    cluster.start_loop()
    try:
        # A synced standby is alive and ready, as kube-scheduler's is: a rolling update of two
        # replicas must not wait for ever for the new pod (a standby) to become ready.
        assert not cluster.leading
        assert failing(health.ready_checks()) == {} and failing(health.live_checks()) == {}
        cluster.set_leading(True)
        assert failing(health.ready_checks()) == {}
        stopping.set()
        assert failing(health.ready_checks()) == {"shutdown": "shutting down"}
    finally:
        for s in source.sources.values():
            s.release.set()
        cluster.stop(1.0)


def test_liveness_fails_while_the_scheduling_loop_is_stuck_and_recovers_after() -> None:
    cluster, source = make_cluster()
    health = LiveHealth(cluster, None, lease="", stopping=threading.Event())
    cluster.loop.stall_seconds = 0.5
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    cluster.wait_for_sync(5)
    cluster.start_loop()
    cluster.set_leading(True)
    try:
        wait_until(lambda: cluster.scheduled == 1)
        assert failing(health.live_checks()) == {}
        with cluster._lock:  # a thread that never lets go of the state lock: the loop cannot step
            cluster._wake.set()
            time.sleep(1.5)
            problems = failing(health.live_checks())
        assert "scheduling-loop" in problems and "stuck" in problems["scheduling-loop"]
        wait_until(lambda: not failing(health.live_checks()))
    finally:
        for s in source.sources.values():
            s.release.set()
        cluster.stop(1.0)
