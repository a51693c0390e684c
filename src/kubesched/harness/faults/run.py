"""One scenario's run: its namespace, pods, replicas and the times of its faults, and the
judging of the ledger into Figures (the rules are in the package docstring)."""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

from kubesched.cluster.kube.workers import RETRY_DELAYS
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    create_fake_nodes,
    create_namespace,
    list_pods,
    pod_manifest,
)
from kubesched.harness.faults.ledger import Bind, binds_that_took, epoch_seconds, first_bind_after, read_binds
from kubesched.harness.faults.model import Figures, Scale
from kubesched.harness.faults.replicas import Flavour, Replica

__all__ = ["Run"]

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
        #: (user, when) of a leader lost on purpose, for the takeover figures.
        self.takeover_from: tuple[str, float] | None = None
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

    def _lease_spec(self) -> dict[str, Any]:
        try:
            lease = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{self.lease}")
        except (ApiError, OSError):
            return {}
        return dict(lease.get("spec") or {})

    def holder(self) -> str:
        return str(self._lease_spec().get("holderIdentity") or "")

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
        self._takeover(f)
        return f

    def _takeover(self, f: Figures) -> None:
        if self.takeover_from is None:
            return
        user, since = self.takeover_from
        first = first_bind_after(read_binds(self.cp.audit_log_path, self.namespace), since, not_by=user)
        if first is None:
            return
        f.takeover_seconds = round(first.received - since, 2)
        acquired = self._lease_spec().get("acquireTime")
        if acquired:
            f.acquired_to_first_bind_seconds = round(first.received - epoch_seconds(str(acquired)), 3)

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
