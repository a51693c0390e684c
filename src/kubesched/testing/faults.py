"""Fault scenarios on a real control plane, judged from a ledger of what really reached the API server.

Used by the fault suite (`tests/integration/test_faults.py`, small and fast) and by the side-by-side
benchmark (`benchmarks/fault_comparison.py`, the issue's sizes, kubesched next to kube-scheduler
v1.37.2). A scenario starts scheduler replicas, creates pending pods, injects a fault (kill -9,
SIGSTOP past the lease, an API-server restart with etcd compacted meanwhile, nodes deleted or
shrunk, pods deleted, SIGTERM), waits for the cluster to settle, and returns `Figures`.

The ledger is not the schedulers' word: every `pods/binding` request is in the API server's audit
log (`ControlPlane(audit_bindings=True)`) with its user (each replica has its own), the time the
server received it, the node and the answer; the pods and `Scheduled` Events are listed at the end;
the times of the faults are the ones this module noted when it caused them. A Binding counts as
successful when answered 2xx, or when its pod is bound to its node and no Binding of the pod was
answered 2xx: a replica killed mid-request gets its Binding logged as 504 although the write can
already be in etcd (`binds_that_took`). From that:

* `double_binds`: pods with two successful Bindings;
* `lost_pods`: pods not deleted by the scenario and still unbound when it settled;
* `binds_after_loss`: successful binds by a replica after it lost the Lease (after it resumed from a
  pause past the lease, or after the API server came back from an outage longer than renewDeadline),
  beyond `ON_THE_WIRE` seconds for requests already sent;
* `binds_to_deleted_nodes`: successful binds to a node deleted more than 1 s before;
* `overfilled_nodes`: shrunk nodes pushed over their new allocatable cpu by a bind received more than
  1 s after the shrink;
* `duplicate_scheduled_events`: pods with more than one `Scheduled` Event; `bound_without_event`:
  bound pods with none, except those bound by a replica that died before it could send the Event
  (killed by SIGKILL, or exited on losing the Lease while the API server was down, as kube-scheduler
  does too): those are `events_lost_with_process`. Events that fail during an outage are retried, so
  an outage alone loses none; the ledger waits out the retry schedule for them. `without_event`
  names the first few unexplained pods (who bound them, when) and the replicas' complaints;
* `exit_code`, `exit_seconds`: how the replica that lost the Lease or got SIGTERM ended;
* `peak_rss_mib`: the largest resident set of the replicas.

Every process is started here and stopped by pid (`ManagedProcess`), also when a scenario fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.workers import RETRY_DELAYS
from kubesched.harness.ports import free_port
from kubesched.testing.controlplane import ControlPlane, ManagedProcess
from kubesched.testing.fake_nodes import (
    ApiClient,
    ApiError,
    create_fake_nodes,
    create_namespace,
    delete_pod,
    list_pods,
    pod_manifest,
)

__all__ = [
    "FLAVOURS",
    "SCENARIOS",
    "Figures",
    "Scale",
    "binds_that_took",
    "read_binds",
    "run_scenario",
]

#: Seconds after a loss during which a replica's binds count as "already on the wire".
ON_THE_WIRE = 0.5
#: A replica that died (SIGKILL, exit) sent its Bindings before it died, but on a loaded machine the
#: API server may log one as received a while later: its binds this long after the death still
#: count as sent by a process that could not send their Events. (Each replica binds as its own user,
#: so no later replica's bind is mistaken for one of these.)
DEAD_SENDER_LAG = 5.0
#: After the last bind, how long the Scheduled Events may keep arriving, and how long their count
#: must stay unchanged. They go out through the replica's rate-limited client after its Bindings,
#: and one that fails for a passing reason is tried again on the `RETRY_DELAYS` schedule (45.5 s
#: in all), so the wait covers that schedule while a bound pod still lacks an Event.
EVENTS_SETTLE = (sum(RETRY_DELAYS) + 5.0, 2.0)
#: A node deleted or shrunk more than this long before a bind made that bind stale.
STALE_AFTER = 1.0


@dataclass(frozen=True)
class Scale:
    """How big a scenario is and how fast leases turn over."""

    nodes: int = 50
    pods: int = 300
    qps: int = 50
    burst: int = 100
    lease: tuple[int, int, int] = (4, 3, 1)  # leaseDuration, renewDeadline, retryPeriod (s)
    settle_timeout: float = 120.0


@dataclass
class Figures:
    """What one scenario run came to (see module docstring)."""

    scenario: str
    flavour: str
    double_binds: int = 0
    lost_pods: int = 0
    binds_after_loss: int = 0
    binds_to_deleted_nodes: int = 0
    overfilled_nodes: int = 0
    duplicate_scheduled_events: int = 0
    bound_without_event: int = 0
    events_lost_with_process: int = 0
    #: The first few `bound_without_event` pods: who bound them, and when, against any death.
    without_event: list[str] = field(default_factory=list)
    exit_code: int | None = None
    exit_seconds: float | None = None
    peak_rss_mib: float = 0.0
    bound: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- the audit ledger


@dataclass(frozen=True)
class Bind:
    """One `pods/binding` request as the API server logged it."""

    user: str
    namespace: str
    pod: str
    node: str
    received: float  # epoch seconds, the server's clock (this machine's)
    code: int


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_binds(path: Path, namespace: str) -> list[Bind]:
    """The Binding requests for pods of `namespace`, in the order the server received them."""
    binds: list[Bind] = []
    if not path.exists():
        return binds
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        ref = event.get("objectRef") or {}
        if ref.get("subresource") != "binding" or ref.get("namespace") != namespace:
            continue
        target = ((event.get("requestObject") or {}).get("target") or {}).get("name", "")
        binds.append(
            Bind(
                user=(event.get("user") or {}).get("username", ""),
                namespace=namespace,
                pod=ref.get("name", ""),
                node=target,
                received=_epoch(event["requestReceivedTimestamp"]),
                code=int((event.get("responseStatus") or {}).get("code", 0)),
            )
        )
    binds.sort(key=lambda b: b.received)
    return binds


def binds_that_took(binds: list[Bind], bound_to: dict[str, str]) -> list[Bind]:
    """The Bindings that bound their pod: every 2xx one, and for a pod bound (`bound_to`: pod ->
    node) with no 2xx Binding, its last Binding to that node whatever the answer. A client that dies
    mid-request gets its Binding logged as 504 although the write may already be in etcd; the
    server's answer is not the last word on what happened."""
    took = [b for b in binds if 200 <= b.code < 300]
    answered = {b.pod for b in took}
    unanswered: dict[str, Bind] = {}
    for b in binds:
        if b.pod not in answered and bound_to.get(b.pod) == b.node:
            unanswered[b.pod] = b
    return sorted(took + list(unanswered.values()), key=lambda b: b.received)


# --------------------------------------------------------------------------- replicas


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        pass
    return 0.0


@dataclass
class Replica:
    """One scheduler process, authenticating as its own user."""

    user: str
    proc: ManagedProcess
    rss: float = 0.0
    exited_at: float | None = None

    def note_rss(self) -> None:
        if self.proc.alive():
            self.rss = max(self.rss, peak_rss_mib(self.proc.pid))

    def signal(self, sig: int) -> None:
        self.note_rss()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.proc.alive() and time.monotonic() < deadline:
            self.note_rss()
            time.sleep(0.02)
        if self.proc.alive():
            return None
        if self.exited_at is None:
            self.exited_at = time.time()
        return self.proc.popen.returncode


class Flavour:
    """How to start a replica of one scheduler implementation."""

    name = ""
    scheduler_name = ""

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        raise NotImplementedError


class Kubesched(Flavour):
    name = "kubesched"
    scheduler_name = "kubesched"

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        duration, deadline, retry = scale.lease
        port = free_port()
        config = cp.workdir / f"{user}-{port}.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection: {{qps: {scale.qps}, burst: {scale.burst}}}\n"
            f"leaderElection: {{leaderElect: {str(leader_elect).lower()}, resourceName: {lease}, "
            f"resourceNamespace: default, leaseDuration: {duration}s, renewDeadline: {deadline}s, "
            f"retryPeriod: {retry}s}}\n"
            f"profiles:\n- schedulerName: {self.scheduler_name}\n"
        )
        args = [
            sys.executable, "-m", "kubesched.cli", "run", "--config", str(config),
            "--kubeconfig", str(cp.kubeconfig_for(user)),
            "--secure-port", "0", "--insecure-listen", f"127.0.0.1:{port}",
        ]  # fmt: skip
        log = cp.workdir / "logs" / f"kubesched-{user}-{port}.log"
        proc = ManagedProcess(f"kubesched-{user}", args, log, port=port, env={"PYTHONUNBUFFERED": "1"})
        _wait_http(f"http://127.0.0.1:{port}/livez", proc)
        return Replica(user, proc)


class Upstream(Flavour):
    name = "kube-scheduler"
    scheduler_name = "default-scheduler"

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        duration, deadline, retry = scale.lease
        proc = cp.start_kube_scheduler(
            {
                "clientConnection": {
                    "kubeconfig": str(cp.kubeconfig_for(user)),
                    "qps": scale.qps,
                    "burst": scale.burst,
                },
                "leaderElection": {
                    "leaderElect": leader_elect,
                    "resourceName": lease,
                    "resourceNamespace": "default",
                    "leaseDuration": f"{duration}s",
                    "renewDeadline": f"{deadline}s",
                    "retryPeriod": f"{retry}s",
                },
                "profiles": [{"schedulerName": self.scheduler_name}],
            },
            wait_ready=False,
        )
        _wait_http(f"https://127.0.0.1:{proc.port}/livez", proc)
        return Replica(user, proc)


FLAVOURS: dict[str, Flavour] = {"kubesched": Kubesched(), "kube-scheduler": Upstream()}


def _wait_http(url: str, proc: ManagedProcess, timeout: float = 90.0) -> None:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{proc.name} not alive after {timeout:.0f} s:\n{proc.log_tail()}")


# --------------------------------------------------------------------------- a scenario's run


class Run:
    """The shared machinery of one scenario: namespace, pods, replicas, fault times, the ledger."""

    def __init__(self, cp: ControlPlane, api: ApiClient, flavour: Flavour, scale: Scale, name: str):
        self.cp, self.api, self.flavour, self.scale = cp, api, flavour, scale
        self.figures = Figures(name, flavour.name)
        self.namespace = f"fault-{uuid.uuid4().hex[:8]}"
        self.lease = f"lease-{uuid.uuid4().hex[:8]}"
        self.replicas: list[Replica] = []
        self.deleted_pods: set[str] = set()
        self.deleted_nodes: dict[str, float] = {}
        self.shrunk_nodes: dict[str, tuple[float, int]] = {}  # name -> (when, new cpu in milli)
        self.lost_at: dict[str, float] = {}  # user -> when its leadership was gone for sure
        #: user -> when it died with Events maybe unsent (SIGKILL, or exit while the API was down).
        self.died_unsent: dict[str, float] = {}
        self.selector: dict[str, str] | None = None
        self.started = time.monotonic()
        self.started_epoch = time.time()
        create_namespace(api, self.namespace)

    # -- set-up

    def own_nodes(self, count: int) -> list[str]:
        """Nodes of this run only (4 cpu each); its pods are then kept to them by a nodeSelector."""
        names = create_fake_nodes(
            self.api, count, prefix=f"{self.namespace}-", labels={"fault-run": self.namespace}, concurrency=8
        )
        self.selector = {"fault-run": self.namespace}
        return names

    def replica(self, leader_elect: bool = True) -> Replica:
        user = f"replica-{len(self.replicas)}"
        r = self.flavour.start(self.cp, user, self.lease, self.scale, leader_elect)
        self.replicas.append(r)
        return r

    def create_pods(self, count: int, prefix: str = "p") -> None:
        from concurrent.futures import ThreadPoolExecutor

        def make(i: int) -> None:
            manifest = pod_manifest(
                f"{prefix}-{i:05d}",
                namespace=self.namespace,
                cpu="100m",
                memory="64Mi",
                scheduler_name=self.flavour.scheduler_name,
                node_selector=self.selector,
            )
            self.api.post(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, range(count)))

    # -- observation

    def pods(self) -> list[dict[str, Any]]:
        for _ in range(30):
            try:
                return list_pods(self.api, self.namespace)
            except (ApiError, OSError):
                time.sleep(1)  # the API server may be restarting
        return list_pods(self.api, self.namespace)

    def bound_count(self) -> int:
        return sum(1 for p in self.pods() if p["spec"].get("nodeName"))

    def wait_bound(self, at_least: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        n = 0
        while time.monotonic() < deadline:
            for r in self.replicas:
                r.note_rss()
            n = self.bound_count()
            if n >= at_least:
                return n
            time.sleep(0.2)
        return n

    def holder(self) -> str:
        try:
            lease = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{self.lease}")
        except (ApiError, OSError):
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def wait_leading(self, timeout: float = 60.0) -> None:
        """Until someone holds the Lease: with one replica started, that one leads."""
        deadline = time.monotonic() + timeout
        while not self.holder():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no leader for {self.lease} within {timeout:.0f} s")
            time.sleep(0.2)

    # -- the verdict

    def settle(self, expected_unbound: int = 0) -> None:
        """Wait for every pod still expected to be bound (or the settle timeout)."""
        deadline = time.monotonic() + self.scale.settle_timeout
        while time.monotonic() < deadline:
            for r in self.replicas:
                r.note_rss()
            pods = self.pods()
            unbound = [p for p in pods if not p["spec"].get("nodeName")]
            if len(unbound) <= expected_unbound:
                break
            time.sleep(0.5)
        self._wait_for_events()

    def _wait_for_events(self) -> None:
        """Until the Scheduled Events stop arriving (bounded): they trail the Bindings. Quiet is
        not enough while a bound pod still has no Event that no dead replica explains: on a loaded
        machine a live replica's rate-limited Events can pause longer than the quiet period."""
        limit, quiet = EVENTS_SETTLE
        deadline = time.monotonic() + limit
        seen, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            scheduled = self._scheduled_events()
            count = sum(scheduled.values())
            if count != seen:
                seen, since = count, time.monotonic()
            elif time.monotonic() - since >= quiet:
                _, bound_to, took = self._ledger()
                if not self._events_missing(scheduled, bound_to, took)[1]:
                    return
            time.sleep(0.25)

    def _ledger(self) -> tuple[dict[str, dict[str, Any]], dict[str, str], list[Bind]]:
        """The run's pods by name, the bound ones' nodes, and the Bindings that bound them."""
        pods = {p["metadata"]["name"]: p for p in self.pods()}
        bound_to = {name: p["spec"]["nodeName"] for name, p in pods.items() if p["spec"].get("nodeName")}
        return pods, bound_to, binds_that_took(read_binds(self.cp.audit_log_path, self.namespace), bound_to)

    def _events_missing(
        self, scheduled: dict[str, int], bound_to: dict[str, str], took: list[Bind]
    ) -> tuple[int, list[str]]:
        """(how many bound pods lack a Scheduled Event that a replica which died took with it, the
        other bound pods without one: pod, who bound it and when, against that replica's death)."""
        bound_by = {b.pod: b for b in took}
        lost, unexplained = 0, []
        for name in bound_to:
            if scheduled.get(name):
                continue
            bind = bound_by.get(name)
            if bind is None:
                unexplained.append(f"{name}: no Binding to its node in the audit log")
                continue
            died = self.died_unsent.get(bind.user)
            if died is not None and bind.received <= died + DEAD_SENDER_LAG:
                lost += 1
                continue
            when = f"{bind.received - self.started_epoch:.1f} s into the run (answer {bind.code})"
            if died is not None:
                when += f", {bind.received - died:+.1f} s from its death"
            unexplained.append(f"{name}: bound by {bind.user} {when}")
        return lost, unexplained

    def _event_complaints(self, most: int = 5) -> list[str]:
        """The replicas' last log lines about Events that failed or were dropped (for a verdict
        that counts bound pods without one)."""
        lines: list[str] = []
        for r in self.replicas:
            try:
                text = r.proc.log_path.read_text(errors="replace")
            except OSError:
                continue
            said = [
                line.strip()
                for line in text.splitlines()
                if ("event" in line and "not recorded" in line) or "events: queue full" in line
                or "events: call failed" in line
            ]  # fmt: skip
            lines += [f"{r.user}: {line}" for line in said[-most:]]
        return lines

    def _scheduled_events(self) -> dict[str, int]:
        """Pod name -> how many Scheduled Events it got (an Event series counts its repeats)."""
        events = self.api.list_all(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        scheduled: dict[str, int] = {}
        for e in events:
            if e.get("reason") == "Scheduled":
                name = (e.get("regarding") or {}).get("name", "")
                scheduled[name] = scheduled.get(name, 0) + int((e.get("series") or {}).get("count", 1))
        return scheduled

    def judge(self) -> Figures:
        f = self.figures
        f.seconds = round(time.monotonic() - self.started, 1)
        pods, bound_to, ok = self._ledger()
        per_pod: dict[str, int] = {}
        for b in ok:
            per_pod[b.pod] = per_pod.get(b.pod, 0) + 1
        f.double_binds = sum(1 for n in per_pod.values() if n > 1)
        f.bound = len(bound_to)
        f.lost_pods = sum(
            1 for name, p in pods.items() if not p["spec"].get("nodeName") and name not in self.deleted_pods
        )
        for user, lost in self.lost_at.items():
            f.binds_after_loss += sum(1 for b in ok if b.user == user and b.received > lost + ON_THE_WIRE)
        f.binds_to_deleted_nodes = sum(
            1
            for b in ok
            if b.node in self.deleted_nodes and b.received > self.deleted_nodes[b.node] + STALE_AFTER
        )
        f.overfilled_nodes = self._overfilled(ok)
        scheduled = self._scheduled_events()
        f.duplicate_scheduled_events = sum(1 for n in scheduled.values() if n > 1)
        f.events_lost_with_process, unexplained = self._events_missing(scheduled, bound_to, ok)
        f.bound_without_event = len(unexplained)
        if unexplained:
            f.without_event = unexplained[:10] + self._event_complaints()
        for r in self.replicas:
            r.note_rss()
            f.peak_rss_mib = max(f.peak_rss_mib, r.rss)
        return f

    def _overfilled(self, ok: list[Bind]) -> int:
        """Shrunk nodes pushed over their new cpu by a bind received > STALE_AFTER after the shrink."""
        over: set[str] = set()
        used: dict[str, int] = {}
        for b in ok:
            if b.pod in self.deleted_pods:
                continue  # deleted by the scenario: its room came back
            used[b.node] = used.get(b.node, 0) + 100  # every pod asks for 100m
            shrink = self.shrunk_nodes.get(b.node)
            if shrink is not None and b.received > shrink[0] + STALE_AFTER and used[b.node] > shrink[1]:
                over.add(b.node)
        return len(over)

    def stop(self) -> None:
        """Stop every replica, then delete the run's pods: the next run gets the nodes' room back."""
        for r in self.replicas:
            r.note_rss()
            r.proc.stop()
        with contextlib.suppress(ApiError, OSError):
            self.api.request(
                "DELETE",
                f"/api/v1/namespaces/{self.namespace}/pods",
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            )


# --------------------------------------------------------------------------- scenarios


def split_brain(run: Run) -> None:
    """The leader is paused (SIGSTOP) past its lease while binding; the standby takes over; the old
    leader resumes. It must send nothing once resumed and exit non-zero."""
    a = run.replica()
    run.wait_leading()
    b = run.replica()
    run.create_pods(run.scale.pods)
    run.wait_bound(run.scale.pods // 10, 60)
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
