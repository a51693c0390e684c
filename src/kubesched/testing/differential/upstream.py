"""Schedule a scenario with the real kube-scheduler v1.37.2, one pending pod at a time.

The scenario's objects are created on a real API server; the upstream scheduler (started with
`percentageOfNodesToScore: 100`, its per-plugin scores logged by `--vmodule=schedule_one=10` and its
informer events by `eventhandlers=4`) schedules each pending pod before the next is created. Before
each pod the harness waits until the scheduler's log shows that its cache holds every object of the
scenario, so nothing races. For each pod it records the outcome, the FailedScheduling messages, the
nomination and victims of a preemption, the scores of the last attempt, and the objects as the API
server held them just before the pod was created (what kubesched is given).

The control plane runs no controllers, so the harness plays their part where the scheduler needs it:
running pods get `status.phase` and distinct `status.startTime` (preemption breaks ties by start
time), PodDisruptionBudgets get their status, and pods get `terminationGracePeriodSeconds: 0` so a
victim is gone as soon as the scheduler deletes it (no kubelet would ever confirm it).
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubesched.testing.controlplane import ControlPlane, ManagedProcess
from kubesched.testing.differential.scenario import NAMESPACES, PRIORITY_CLASSES, Scenario
from kubesched.testing.fake_nodes import ApiClient, ApiError

__all__ = ["PodOutcome", "UpstreamHarness", "UpstreamTimeout"]

Obj = dict[str, Any]

#: The scheduler's configuration: every node is scored, as kubesched scores them.
SCHEDULER_CONFIG: Obj = {"percentageOfNodesToScore": 100}
SCHEDULER_FLAGS = ("--v=2", "--vmodule=schedule_one=10,eventhandlers=4")
#: Seconds a pod may take to reach an outcome (a preemption needs two attempts).
OUTCOME_TIMEOUT = 30.0
POLL_SECONDS = 0.01
#: Seconds a preemptor may wait, after its preemption finished, before it counts as stalled.
STALL_SECONDS = 3.0
#: klog text lines: `I1201 16:45:44.080310   19607 schedule_one.go:101] "About to ..." pod="ns/p"`.
_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] "(?P<msg>[^"]*)"(?P<kv>.*)$')
_KV = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
_FOUND = re.compile(r"found a potential placement for pod on node (\S+), preempting")


class UpstreamTimeout(RuntimeError):
    """kube-scheduler did not reach an outcome (or did not show an object in its cache) in time."""


@dataclass
class PodOutcome:
    """What upstream did with one pending pod, and the objects it was scheduled against."""

    namespace: str
    name: str
    #: "Scheduled" or "Unschedulable".
    result: str
    node: str | None
    #: The FailedScheduling messages of its attempts, in order (empty if bound at once).
    messages: list[str]
    #: The node a preemption nominated (parsed from the preempting attempt's message), if any.
    nominated: str | None
    #: Pods the scheduler deleted while scheduling this pod, as `namespace/name`.
    victims: list[str]
    #: Per node, per plugin, the *weighted* score of the last attempt (empty: no scoring was logged,
    #: e.g. one feasible node).
    scores: dict[str, dict[str, int]]
    #: The objects of the scenario as the API server held them just before the pod was created, and
    #: the pod as it was created (admission applied).
    before: list[Obj] = field(default_factory=list)
    pod: Obj = field(default_factory=dict)


class _Log:
    """Reads the scheduler's log incrementally and keeps what the harness waits for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""
        self.events: dict[tuple[str, str], int] = {}  # (message, object) -> count
        self.lines: list[tuple[str, dict[str, str]]] = []

    def read(self) -> None:
        with self.path.open("r", encoding="utf-8", errors="replace") as f:
            f.seek(self.offset)
            chunk = f.read()
            self.offset = f.tell()
        text = self.partial + chunk
        lines = text.split("\n")
        self.partial = lines.pop()
        for line in lines:
            m = _LINE.match(line)
            if m is None:
                continue
            kv = {k: v[1:-1] if v.startswith('"') else v for k, v in _KV.findall(m["kv"])}
            msg = m["msg"]
            subject = kv.get("pod") or kv.get("preemptor") or kv.get("node") or ""
            self.events[(msg, subject)] = self.events.get((msg, subject), 0) + 1
            if msg in ("About to try and schedule pod", "Plugin scored node for pod"):
                self.lines.append((msg, kv))

    def count(self, msg: str, subject: str) -> int:
        return self.events.get((msg, subject), 0)

    def scores_of_last_attempt(self, pod: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for msg, kv in self.lines:
            if kv.get("pod") != pod:
                continue
            if msg == "About to try and schedule pod":
                out = {}
            else:
                out.setdefault(kv["node"], {})[kv["plugin"]] = int(kv["score"])
        return out


def _wait(what: str, ready: Callable[[], bool], timeout: float = OUTCOME_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise UpstreamTimeout(f"timed out waiting for {what}")
        time.sleep(POLL_SECONDS)


def _pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{namespace}/pods"
    return f"{base}/{name}" if name else base


class UpstreamHarness:
    """One control plane + one upstream kube-scheduler, reused for many scenarios."""

    def __init__(self, control_plane: ControlPlane, client: ApiClient) -> None:
        self.cp = control_plane
        self.api = client
        self.scheduler: ManagedProcess = control_plane.start_kube_scheduler(
            SCHEDULER_CONFIG, extra_args=SCHEDULER_FLAGS
        )
        self.log = _Log(self.scheduler.log_path)
        for name, labels in NAMESPACES.items():
            if name != "default":
                self._create("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
        for name, value in PRIORITY_CLASSES.items():
            self._create(
                "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": value}
            )

    def _create(self, path: str, body: Obj) -> Obj:
        try:
            return self.api.post(path, body)
        except ApiError as err:
            if err.reason != "AlreadyExists":
                raise
            return body

    def _log_shows(self, msg: str, subject: str, at_least: int = 1) -> Callable[[], bool]:
        def check() -> bool:
            self.log.read()
            return self.log.count(msg, subject) >= at_least

        return check

    # ------------------------------------------------------------------ one scenario
    def run(self, scenario: Scenario) -> list[PodOutcome]:
        """Create the scenario, schedule its pending pods one at a time, then remove it all."""
        try:
            self._set_up(scenario)
            return [self._schedule(scenario, pod) for pod in scenario.pending]
        finally:
            self._tear_down(scenario)

    def _set_up(self, s: Scenario) -> None:
        for obj in s.volumes:
            path = _VOLUME_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
            created = self.api.post(path, _without_status(obj))
            if "status" in obj:  # a bound claim and its volume: what the PV controller would write
                created["status"] = obj["status"]
                self.api.request("PUT", f"{path}/{obj['metadata']['name']}/status", created)
        for pdb in s.pdbs:
            ns = pdb["metadata"]["namespace"]
            created = self.api.post(
                f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", _without_status(pdb)
            )
            created["status"] = {
                "disruptionsAllowed": pdb["status"]["disruptionsAllowed"],
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
                "observedGeneration": created["metadata"].get("generation", 1),
            }
            self.api.request(
                "PUT",
                f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{pdb['metadata']['name']}/status",
                created,
            )
        for node in s.nodes:
            self.api.post("/api/v1/nodes", node)
        start = datetime(2026, 1, 1, tzinfo=UTC)
        expected_updates: list[str] = []
        for i, pod in enumerate(s.running):
            ns = pod["metadata"]["namespace"]
            created = self.api.post(_pod_path(ns), _without_status(pod))
            status = dict(pod.get("status") or {})
            status["startTime"] = (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
            created["status"] = status
            self.api.request("PUT", _pod_path(ns, pod["metadata"]["name"]) + "/status", created)
            if status.get("phase") not in ("Succeeded", "Failed"):
                expected_updates.append(f"{ns}/{pod['metadata']['name']}")
        for node in s.nodes:
            _wait(
                f"node {node['metadata']['name']} in the scheduler's cache",
                self._log_shows("Add event for node", node["metadata"]["name"]),
            )
        for key in expected_updates:
            _wait(
                f"pod {key} in the scheduler's cache", self._log_shows("Update event for scheduled pod", key)
            )

    def _snapshot(self, s: Scenario) -> list[Obj]:
        """The scenario's objects as the API server holds them now (cluster-wide kinds included)."""
        prefix = f"{s.name}-"
        out: list[Obj] = []
        for kind, path in (
            ("Namespace", "/api/v1/namespaces"),
            ("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"),
        ):
            for item in self.api.list_all(path):
                if kind == "PriorityClass" and item["metadata"]["name"] not in PRIORITY_CLASSES:
                    continue  # the built-in system-* classes are no part of a scenario
                out.append(_with_kind(item, kind, path))
        for kind, path in (
            ("Node", "/api/v1/nodes"),
            ("Pod", "/api/v1/pods"),
            ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
            ("StorageClass", "/apis/storage.k8s.io/v1/storageclasses"),
            ("PersistentVolume", "/api/v1/persistentvolumes"),
            ("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims"),
        ):
            for item in self.api.list_all(path):
                if item["metadata"]["name"].startswith(prefix):
                    out.append(_with_kind(item, kind, path))
        return out

    def _schedule(self, s: Scenario, pod: Obj) -> PodOutcome:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        key = f"{ns}/{name}"
        before = self._snapshot(s)
        existing = {
            f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in before if o["kind"] == "Pod"
        }
        created = _with_kind(self.api.post(_pod_path(ns), pod), "Pod", "/api/v1")
        result = node = None
        stalled = False
        deadline = time.monotonic() + OUTCOME_TIMEOUT
        victims_gone_at: float | None = None
        while result is None:
            if time.monotonic() > deadline:
                raise UpstreamTimeout(f"pod {key}: no outcome after {OUTCOME_TIMEOUT:.0f} s")
            time.sleep(POLL_SECONDS)
            current = self.api.get(_pod_path(ns, name))
            if current["spec"].get("nodeName"):
                result, node = "Scheduled", current["spec"]["nodeName"]
                break
            cond = next(
                (c for c in current["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None
            )
            nominated = current["status"].get("nominatedNodeName")
            if cond is not None and cond.get("reason") == "Unschedulable" and not nominated:
                result = "Unschedulable"
            elif nominated and self._preemption_done(key):
                # Upstream race (async preemption): a victim's deletion that arrives while the
                # preemptor is still gated by DefaultPreemption's PreEnqueue does not requeue it, so
                # it waits for the 5-minute flush. It would then bind to its nominated node; take that
                # as the outcome rather than wait (its scores are not compared: none were logged).
                victims_gone_at = victims_gone_at or time.monotonic()
                if time.monotonic() - victims_gone_at > STALL_SECONDS:
                    result, node, stalled = "Scheduled", nominated, True
        messages = self._failed_scheduling(ns, name)
        self.log.read()
        scores = self.log.scores_of_last_attempt(key)
        after = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self.api.list_all("/api/v1/pods")
        }
        victims = sorted(k for k in existing if k not in after)
        found = next((m for m in (_FOUND.search(msg) for msg in messages) if m is not None), None)
        if stalled:
            scores = {}
        if result == "Unschedulable" or stalled:
            self.api.request("DELETE", _pod_path(ns, name), {"gracePeriodSeconds": 0})
            _wait(
                f"deletion of {key} in the scheduler",
                self._log_shows("Delete event for unscheduled pod", key),
            )
        return PodOutcome(
            namespace=ns,
            name=name,
            result=result,
            node=node,
            messages=messages,
            nominated=found.group(1) if found is not None else None,
            victims=victims,
            scores=scores,
            before=before,
            pod=created,
        )

    def _preemption_done(self, key: str) -> bool:
        self.log.read()
        return self.log.count("Async Preemption finished completely", key) > 0

    def _failed_scheduling(self, namespace: str, name: str) -> list[str]:
        """The notes of the pod's FailedScheduling events, oldest first."""
        events = self.api.list_all(
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            {"fieldSelector": f"regarding.name={name},reason=FailedScheduling"},
        )
        events.sort(key=lambda e: (e.get("eventTime") or "", e["metadata"].get("creationTimestamp") or ""))
        return [e.get("note", "") for e in events]

    def _tear_down(self, s: Scenario) -> None:
        prefix = f"{s.name}-"
        bound: list[str] = []
        for p in self.api.list_all("/api/v1/pods"):
            meta = p["metadata"]
            if not meta["name"].startswith(prefix):
                continue
            if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in (
                "Succeeded",
                "Failed",
            ):
                bound.append(f"{meta['namespace']}/{meta['name']}")
            _delete(self.api, _pod_path(meta["namespace"], meta["name"]))
        for pdb in s.pdbs:
            meta = pdb["metadata"]
            _delete(
                self.api,
                f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets/{meta['name']}",
            )
        for obj in s.volumes:  # claims and volumes keep their protection finalizers: names stay unique
            path = _VOLUME_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
            _delete(self.api, f"{path}/{obj['metadata']['name']}")
        for node in s.nodes:
            _delete(self.api, f"/api/v1/nodes/{node['metadata']['name']}")
        for node in s.nodes:
            _wait(
                "node deletion in the scheduler",
                self._log_shows("Delete event for node", node["metadata"]["name"]),
            )
        for key in bound:
            _wait("pod deletion in the scheduler", self._log_shows("Delete event for scheduled pod", key))


_VOLUME_PATHS = {
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
}


def _delete(api: ApiClient, path: str) -> None:
    try:
        api.request("DELETE", path, {"gracePeriodSeconds": 0})
    except ApiError as err:
        if err.reason != "NotFound":
            raise


def _without_status(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "status"}


def _with_kind(item: Obj, kind: str, path: str) -> Obj:
    """List items carry no kind/apiVersion; the loader needs both."""
    out = copy.deepcopy(item)
    out["kind"] = kind
    out["apiVersion"] = {
        "Namespace": "v1",
        "Node": "v1",
        "Pod": "v1",
        "PriorityClass": "scheduling.k8s.io/v1",
        "PodDisruptionBudget": "policy/v1",
        "StorageClass": "storage.k8s.io/v1",
        "PersistentVolume": "v1",
        "PersistentVolumeClaim": "v1",
    }[kind]
    return out
