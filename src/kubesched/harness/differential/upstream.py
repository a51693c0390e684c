"""Schedule a scenario with the real kube-scheduler v1.37.2, one pending pod at a time.

The scenario's objects are created on a real API server; the upstream scheduler (started with
`percentageOfNodesToScore: 100`, its per-plugin scores logged by `--vmodule=schedule_one=10` and its
informer events by `eventhandlers=4`) schedules each pending pod before the next is created. Before
each pod the harness waits until the scheduler's log shows that its cache holds every object of the
scenario, so nothing races. For each pod it records the outcome, the FailedScheduling messages, the
nomination and victims of a preemption, the scores of the last attempt, and the objects as the API
server held them just before the pod was created (what kubesched is given).

What the harness does in place of the controllers a control plane without them lacks (statuses,
start times, the PV controller) is `ScenarioOnCluster`'s (kubesched.harness.differential.cluster).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.differential.cluster import (
    PodOutcome,
    ScenarioOnCluster,
    UpstreamTimeout,
    wait_until,
)
from kubesched.harness.differential.gated import NO_GATES, Gates
from kubesched.harness.differential.scenario import NAMESPACES, Scenario, priority_class_manifests
from kubesched.harness.fake_nodes import ApiClient, ApiError

__all__ = ["PodOutcome", "UpstreamHarness", "UpstreamTimeout"]

Obj = dict[str, Any]

#: The scheduler's configuration: every node is scored, as kubesched scores them.
SCHEDULER_CONFIG: Obj = {"percentageOfNodesToScore": 100}
SCHEDULER_FLAGS = ("--v=2", "--vmodule=schedule_one=10,eventhandlers=4")
#: With the pod-group cycle on, the queue's log too: it says when a pod of a group that is not yet
#: observed has been put aside for it, which the event handler's "Add event" line (written before the
#: queue is touched) does not.
GROUP_SCHEDULER_FLAGS = (
    "--v=2",
    "--vmodule=schedule_one=10,eventhandlers=4,scheduling_queue=5,schedule_one_podgroup=5",
)
#: The lines a pod-group cycle writes as it submits its outcome: one per PodGroup of the group or
#: tree it popped, each with the key-values that sum to how many of that PodGroup's pods the cycle
#: held. Not the algorithm's own line ("Running a pod group scheduling algorithm", once per
#: placement tried): a composite stops trying its children once its minGroupCount is out of reach,
#: so a child it never tried has no such line in that cycle (composite seed 30 wave 1: the tree's
#: first cycle held none of `c2`'s pods and tried only `c0` and `c1`; `c2`'s first line, from the
#: next cycle, read as whole). The submit lines cover every PodGroup of the tree, tried or not.
_GROUP_SUBMITTED: dict[str, tuple[str, ...]] = {
    "Successfully scheduled a pod group": ("scheduledPods", "unschedulablePods"),
    "Unable to schedule a pod group": ("unschedulablePods",),
    "Pod group is waiting for preemption": ("unschedulablePods",),
    "Error scheduling pod group": ("errorPods",),
}
#: The line written once at the start of each pod-group cycle.
_GROUP_ATTEMPT = "Attempting to schedule pod group"
#: The queue's line for a pod held until its PodGroup is observed (`_wait_pods_seen`).
_HELD_FOR_GROUP = (
    "Pod with pod group added to incompletePodGroupPods, "
    "waiting for one or more parent pod group objects to be observed"
)
#: Seconds a preemptor may wait, after its preemption finished, before it counts as stalled.
STALL_SECONDS = 3.0
#: klog text lines: `I1201 16:45:44.080310   19607 schedule_one.go:101] "About to ..." pod="ns/p"`.
_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] "(?P<msg>[^"]*)"(?P<kv>.*)$')
_KV = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


class _Log:
    """Reads the scheduler's log incrementally and keeps what the harness waits for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""
        self.events: dict[tuple[str, str], int] = {}  # (message, object) -> count
        self.lines: list[tuple[str, dict[str, str]]] = []
        #: Per PodGroup, the pods each of its cycles held (`_GROUP_SUBMITTED` lines), in order.
        self.group_cycles: dict[str, list[int]] = {}

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
            subject = kv.get("pod") or kv.get("preemptor") or kv.get("node") or kv.get("podGroup") or ""
            self.events[(msg, subject)] = self.events.get((msg, subject), 0) + 1
            counted = _GROUP_SUBMITTED.get(msg)
            if counted is not None and "podGroup" in kv:
                held = sum(int(kv.get(key, "0")) for key in counted)
                self.group_cycles.setdefault(kv["podGroup"], []).append(held)
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


class UpstreamHarness(ScenarioOnCluster):
    """One upstream kube-scheduler on a control plane, reused for many scenarios."""

    def __init__(self, control_plane: ControlPlane, client: ApiClient, gates: Gates = NO_GATES) -> None:
        super().__init__(client)
        self.cp = control_plane
        self.scheduler: ManagedProcess = control_plane.start_kube_scheduler(
            SCHEDULER_CONFIG,
            extra_args=(*(GROUP_SCHEDULER_FLAGS if gates.workloads else SCHEDULER_FLAGS), *gates.flags()),
        )
        self.log = _Log(self.scheduler.log_path)
        #: When a nominated preemptor was first seen with its preemption finished (see below).
        self._preempted_at: dict[str, float] = {}
        #: Per log message, per subject: how often the log showed it when the scenario began.
        self._seen: dict[str, dict[str, int]] = {}
        for name, labels in NAMESPACES.items():
            if name != "default":
                self._create("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
        for priority_class in priority_class_manifests():
            self._create("/apis/scheduling.k8s.io/v1/priorityclasses", priority_class)

    def _create(self, path: str, body: Obj) -> Obj:
        try:
            return self.api.post(path, body)
        except ApiError as err:
            if err.reason != "AlreadyExists":
                raise
            return body

    def _counts(self, msg: str, subjects: list[str]) -> dict[str, int]:
        self.log.read()
        return {s: self.log.count(msg, s) for s in subjects}

    def _wait_log(self, what: str, msg: str, subjects: list[str]) -> None:
        """Wait until the log shows `msg` once more for every subject than when the scenario began."""
        before = self._seen.get(msg, {})
        for subject in subjects:
            wanted = before.get(subject, 0) + 1

            def shown(subject: str = subject, wanted: int = wanted) -> bool:
                self.log.read()
                return self.log.count(msg, subject) >= wanted

            wait_until(f"{what} {subject} in the scheduler's log", shown)

    # ------------------------------------------------------------------ hooks
    def run(self, scenario: Scenario) -> list[PodOutcome]:
        self.begin(scenario, scenario.pending)
        return super().run(scenario)

    def begin(self, scenario: Scenario, pending: list[Obj]) -> None:
        # The log may already show these names (a scenario run twice): wait for *new* lines only.
        nodes = [n["metadata"]["name"] for n in scenario.nodes]
        pods = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in scenario.running + pending]
        self._seen = {
            msg: self._counts(msg, nodes if "node" in msg.split()[-1] else pods)
            for msg in (
                "Add event for node",
                "Delete event for node",
                "Update event for scheduled pod",
                "Delete event for scheduled pod",
                "Delete event for unscheduled pod",
                "Add event for unscheduled pod",
                _HELD_FOR_GROUP,
            )
        }
        groups: list[Obj] = getattr(scenario, "groups", [])
        keys = [f"default/{g['metadata']['name']}" for g in groups if g["kind"] == "PodGroup"]
        self._seen["Add event for pod group"] = self._counts("Add event for pod group", keys)

    def _wait_cache_holds(self, s: Scenario, nodes: list[str], running: list[str]) -> None:
        self._wait_log("node", "Add event for node", nodes)
        self._wait_log("pod", "Update event for scheduled pod", running)

    def _wait_cache_dropped(self, s: Scenario, nodes: list[str], pods: list[str]) -> None:
        self._wait_log("deletion of node", "Delete event for node", nodes)
        self._wait_log("deletion of pod", "Delete event for scheduled pod", pods)

    def _wait_unscheduled_pod_gone(self, key: str) -> None:
        # A pod read as unbound (a preemptor taken as stalled after STALL_SECONDS, a wave's pod) may
        # have been bound before the harness deleted it, which a loaded machine makes likelier: the
        # scheduler then logs its deletion as that of a scheduled pod.
        either = ("Delete event for unscheduled pod", "Delete event for scheduled pod")
        wanted = sum(self._seen.get(msg, {}).get(key, 0) for msg in either) + 1

        def shown() -> bool:
            self.log.read()
            return sum(self.log.count(msg, key) for msg in either) >= wanted

        wait_until(f"deletion of {key} in the scheduler's log", shown)

    def _wait_pods_seen(self, keys: list[str], members: frozenset[str] = frozenset()) -> None:
        # The handler logs "Add event" before it queues the pod: under load a PodGroup created just
        # after that line overtook the pod, and the group was popped without it (CI, seed 1 wave 3).
        self._wait_log("arrival of", "Add event for unscheduled pod", [k for k in keys if k not in members])
        self._wait_log("queueing of", _HELD_FOR_GROUP, [k for k in keys if k in members])

    def _group_cycles(self) -> dict[str, list[int]]:
        self.log.read()
        return {group: list(sizes) for group, sizes in self.log.group_cycles.items()}

    def _group_attempts(self) -> dict[str, int]:
        self.log.read()
        return {subject: n for (msg, subject), n in self.log.events.items() if msg == _GROUP_ATTEMPT}

    def _wait_groups_seen(self, keys: list[str]) -> None:
        self._wait_log("arrival of", "Add event for pod group", keys)

    def _scores(self, key: str) -> dict[str, dict[str, int]]:
        self.log.read()
        return self.log.scores_of_last_attempt(key)

    def _settled_on_nomination(self, key: str, nominated: str, started: float) -> bool:
        """Upstream race (async preemption): a victim's deletion that arrives while the preemptor is
        still gated by DefaultPreemption's PreEnqueue does not requeue it, so it waits for the
        5-minute flush. It would then bind to its nominated node; take that as the outcome rather
        than wait (its scores are not compared: none were logged)."""
        self.log.read()
        if self.log.count("Async Preemption finished completely", key) == 0:
            return False
        first = self._preempted_at.setdefault(f"{key}@{started}", time.monotonic())
        return time.monotonic() - first > STALL_SECONDS
