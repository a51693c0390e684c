"""Two kubesched replicas with Lease leader election, restarts and shutdown, on the real API server.

Short lease timings (4 s / 3 s / 1 s) keep the failover tests quick; the rules are the same as with
the defaults. "Never bound twice" is checked from outside: every pod ends with exactly one `Scheduled`
Event, and the replicas' `scheduler_schedule_attempts_total{result="scheduled"}` add up to the pods.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from test_live_scheduler import Kubesched, bound, pod_events, wait_for

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_pod

FAST = {"lease_duration": "4s", "renew_deadline": "3s", "retry_period": "1s"}


def lease(api: ApiClient, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = api.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{name}").get(
        "spec", {}
    )
    return spec


def holder(api: ApiClient, name: str) -> str:
    try:
        return str(lease(api, name).get("holderIdentity", ""))
    except Exception:
        return ""


def scheduled(ks: Kubesched) -> float:
    return ks.metric("scheduler_schedule_attempts_total", result="scheduled")


def one_event_per_pod(api: ApiClient, namespace: str, count: int) -> None:
    events = wait_for(
        lambda: pod_events(api, namespace, reason="Scheduled"),
        lambda e: len(e) >= count,
        30,
        "Scheduled events",
    )
    names = [e["regarding"]["name"] for e in events]
    assert len(names) == len(set(names)) == count, sorted(names)
    for e in events:
        assert e.get("series") is None


def test_only_the_leader_binds_and_the_standby_takes_over_when_it_is_killed(
    api: ApiClient, control_plane: ControlPlane, fake_node_names: list[str], namespace: str, tmp_path: Path
) -> None:
    name = f"kubesched-{uuid.uuid4().hex[:8]}"
    a = Kubesched(control_plane, tmp_path, leader_elect=True, lease=name, name="a", **FAST)
    b = Kubesched(control_plane, tmp_path, leader_elect=True, lease=name, name="b", **FAST)
    try:
        a.wait_ready(path="/livez")
        b.wait_ready(path="/livez")
        leader_id = wait_for(lambda: holder(api, name), bool, 30, "a leader")
        wait_for(
            lambda: (a.metric("leader_election_master_status"), b.metric("leader_election_master_status")),
            lambda v: sorted(v) == [0, 1],
            10,
            "one leader gauge",
        )
        leader, standby = (a, b) if a.metric("leader_election_master_status") == 1 else (b, a)
        # Both are ready, as kube-scheduler's replicas are (a rolling update waits for the new pod,
        # a standby, to become ready); the standby is alive, with warm caches, and does not bind.
        leader.wait_ready()
        standby.wait_ready()
        code, text = standby.get("/readyz?verbose")
        assert code == 200 and "[+]informer-sync ok" in text and "[+]leader ok" not in text, text
        assert standby.get("/livez")[0] == 200

        for i in range(30):
            create_pod(api, f"first-{i}", namespace=namespace, scheduler_name="kubesched")
        wait_for(lambda: bound(api, namespace), lambda p: len(p) == 30, 60, "30 pods bound")
        wait_for(lambda: scheduled(leader), lambda v: v == 30, 10, "leader counted 30")
        assert scheduled(standby) == 0

        killed_at = time.monotonic()
        leader.kill()  # SIGKILL: no release; the standby must wait the lease out
        wait_for(lambda: holder(api, name), lambda h: h not in ("", leader_id), 30, "a new leader")
        takeover = time.monotonic() - killed_at
        # leaseDuration (4 s) + up to one jittered retry period (1 s * 2.2) + polling slack.
        assert takeover < 4 + 2.2 + 2.0, takeover

        for i in range(20):
            create_pod(api, f"second-{i}", namespace=namespace, scheduler_name="kubesched")
        wait_for(lambda: bound(api, namespace), lambda p: len(p) == 50, 60, "50 pods bound")
        wait_for(lambda: scheduled(standby), lambda v: v == 20, 10, "new leader counted 20")
        one_event_per_pod(api, namespace, 50)
    finally:
        a.stop()
        b.stop()


def test_sigterm_stops_binding_releases_the_lease_and_exits_zero_promptly(
    api: ApiClient, control_plane: ControlPlane, fake_node_names: list[str], namespace: str, tmp_path: Path
) -> None:
    name = f"kubesched-{uuid.uuid4().hex[:8]}"
    ks = Kubesched(control_plane, tmp_path, leader_elect=True, lease=name, **FAST)
    try:
        ks.wait_ready()
        wait_for(lambda: holder(api, name), bool, 30, "leader")
        for i in range(40):
            create_pod(api, f"p-{i}", namespace=namespace, scheduler_name="kubesched")
        wait_for(lambda: bound(api, namespace), lambda p: len(p) >= 5, 60, "binding under way")
        signalled = time.monotonic()
        code = ks.terminate(30)
        assert code == 0, ks.log_text()
        assert time.monotonic() - signalled < 5.0  # 2 s by design; slack for a loaded machine
        spec = lease(api, name)
        assert spec.get("holderIdentity", "") == "" and spec["leaseDurationSeconds"] == 1
        assert "released lease" in ks.log_text()
        # Whatever was assumed was bound before exit: every pod is bound or untouched, none half-done.
        n = len(bound(api, namespace))
        assert n == len(pod_events(api, namespace, reason="Scheduled"))
    finally:
        ks.stop()


def test_a_restarted_scheduler_picks_up_where_it_was(
    api: ApiClient, control_plane: ControlPlane, fake_node_names: list[str], namespace: str, tmp_path: Path
) -> None:
    first = Kubesched(control_plane, tmp_path, name="first")
    try:
        first.wait_ready()
        for i in range(60):
            create_pod(api, f"p-{i}", namespace=namespace, scheduler_name="kubesched")
        wait_for(lambda: bound(api, namespace), lambda p: len(p) >= 10, 60, "some pods bound")
        assert first.terminate(30) == 0
    finally:
        first.stop()
    second = Kubesched(control_plane, tmp_path, name="second")
    try:
        second.wait_ready()
        wait_for(lambda: bound(api, namespace), lambda p: len(p) == 60, 60, "all 60 bound")
        one_event_per_pod(api, namespace, 60)
    finally:
        second.stop()
