"""The fault scenarios, and a control plane that audits Bindings to run them on."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator

from kubesched.cluster.kube.client import KubeClient
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    create_fake_nodes,
    delete_pod,
)
from kubesched.harness.faults.model import Figures, Scale
from kubesched.harness.faults.replicas import FLAVOURS
from kubesched.harness.faults.run import Run

__all__ = ["SCENARIOS", "fault_control_plane", "run_scenario"]


def split_brain(run: Run) -> None:
    """The leader is paused (SIGSTOP) past its lease while binding; the standby takes over; the old
    leader resumes. It must send nothing once resumed and exit non-zero."""
    a = run.replica()
    run.wait_leading()
    b = run.replica()
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    run.takeover_from = (a.user, time.time())
    a.signal(signal.SIGSTOP)
    duration = run.scale.lease[0]
    time.sleep(duration + 3 * run.scale.lease[2] + 2)  # the standby takes over and binds
    resumed = time.time()
    run.lost_at[a.user] = resumed
    a.signal(signal.SIGCONT)
    code = a.wait_exit(30)
    run.figures.exit_code = code
    run.figures.exit_seconds = round(a.exited_at - resumed, 2) if a.exited_at else None
    run.settle()
    assert b.proc.alive() or b.proc.popen.returncode is not None


def leader_kill(run: Run) -> None:
    """The leader is killed (-9) while binding; the standby takes over and finishes."""
    a = run.replica()
    run.wait_leading()
    run.replica()
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    run.takeover_from = (a.user, time.time())
    a.signal(signal.SIGKILL)
    a.wait_exit(10)
    run.died_unsent[a.user] = time.time()  # after the death: a Binding it sent may still be in flight
    run.settle()


def apiserver_restart(run: Run) -> None:
    """The API server is down for longer than renewDeadline while the leader binds; the standby is
    paused meanwhile, and etcd is compacted past every resourceVersion it saw before it resumes (its
    watches must relist after 410 Gone). The old leader must not bind once the server is back."""
    a = run.replica()
    run.wait_leading()
    b = run.replica()
    time.sleep(2)  # the standby's informers synced
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    b.signal(signal.SIGSTOP)
    down = run.scale.lease[1] + 2.0
    run.cp.restart_apiserver(lambda: time.sleep(down))
    back = time.time()
    run.lost_at[a.user] = back
    if not a.proc.alive():
        run.died_unsent[a.user] = back  # exited with the server down: its last try failed too
    run.create_pods(20, prefix="late")  # advance the resourceVersion past what the standby saw
    run.cp.compact_etcd()
    b.signal(signal.SIGCONT)
    code = a.wait_exit(30)
    run.figures.exit_code = code
    run.figures.exit_seconds = round(a.exited_at - back, 2) if a.exited_at else None
    run.settle()


def churn(run: Run) -> None:
    """Nodes deleted and shrunk, and pods deleted, while a backlog is being bound (one replica)."""
    names = run.own_nodes(max(6, run.scale.nodes // 2))
    run.replica(leader_elect=False)
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    doomed = names[: max(1, len(names) // 6)]
    shrink = names[len(doomed) : len(doomed) + max(1, len(names) // 6)]
    for name in doomed:
        run.api.request("DELETE", f"/api/v1/nodes/{name}")
        run.deleted_nodes[name] = time.time()
    with KubeClient.from_kubeconfig(str(run.cp.kubeconfig_path), qps=0, burst=1, name="faults") as kube:
        for name in shrink:
            patch = {"status": {"capacity": {"cpu": "1"}, "allocatable": {"cpu": "1"}}}
            kube.patch(f"/api/v1/nodes/{name}/status", patch)  # a JSON merge patch
            run.shrunk_nodes[name] = (time.time(), 1000)
    for pod in sorted(p["metadata"]["name"] for p in run.pods() if not p["spec"].get("nodeName"))[:30]:
        with contextlib.suppress(ApiError):
            delete_pod(run.api, pod, run.namespace)
        run.deleted_pods.add(pod)
    run.settle()


def sigterm_under_load(run: Run) -> None:
    """SIGTERM while a backlog is being bound: exit 0 within 2 s, the Lease released; a new replica
    finishes the work."""
    a = run.replica()
    run.wait_leading()
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    signalled = time.time()
    a.signal(signal.SIGTERM)
    code = a.wait_exit(30)
    run.figures.exit_code = code
    run.figures.exit_seconds = round(a.exited_at - signalled, 2) if a.exited_at else None
    run.lost_at[a.user] = a.exited_at or time.time()
    spec = run.api.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{run.lease}")["spec"]
    if spec.get("holderIdentity"):
        run.figures.notes.append("the Lease was not released")
    run.replica()
    run.settle()


def kill_and_restart(run: Run) -> None:
    """kill -9 of the only replica mid-run, then a restart: every pod bound once."""
    a = run.replica(leader_elect=False)
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
    a.signal(signal.SIGKILL)
    a.wait_exit(10)
    run.died_unsent[a.user] = time.time()  # after the death: a Binding it sent may still be in flight
    run.replica(leader_elect=False)
    run.settle()


SCENARIOS: dict[str, Callable[[Run], None]] = {
    "split-brain": split_brain,
    "leader-kill": leader_kill,
    "apiserver-restart-410": apiserver_restart,
    "nodes-and-pods-churn": churn,
    "sigterm-under-load": sigterm_under_load,
    "kill-9-and-restart": kill_and_restart,
}


def run_scenario(cp: ControlPlane, api: ApiClient, flavour: str, scenario: str, scale: Scale) -> Figures:
    """Run one scenario with one flavour; every replica is stopped on the way out."""
    run = Run(cp, api, FLAVOURS[flavour], scale, scenario)
    try:
        SCENARIOS[scenario](run)
        return run.judge()
    finally:
        run.stop()


@contextlib.contextmanager
def fault_control_plane(scale: Scale, users: int = 4) -> Iterator[tuple[ControlPlane, ApiClient, list[str]]]:
    """A control plane that audits Bindings, with `users` replica users and `scale.nodes` nodes."""
    users_ = [f"replica-{i}" for i in range(users)]
    with ControlPlane(users=users_, audit_bindings=True) as cp, ApiClient.for_control_plane(cp) as api:
        names = create_fake_nodes(api, scale.nodes, prefix="fault-node-", concurrency=8)
        yield cp, api, names
