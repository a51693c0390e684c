"""Play a scenario on a real API server, one pending pod at a time, with whichever scheduler runs there.

`ScenarioOnCluster` creates the scenario's objects, then creates each pending pod and waits for its
outcome: bound, or left unschedulable (a preemption's nomination is waited through). It reads the
outcome back from the API server: node, FailedScheduling notes, victims, and the objects as they
were just before the pod was created (what kubesched's simulator is given). Subclasses say how to
know that *their* scheduler's cache holds the scenario (`UpstreamHarness` reads kube-scheduler's
log, `KubeschedLive` reads `kubesched run`'s cache gauges), and may add what only they can tell
(upstream's per-plugin scores).

The control plane runs no controllers, so this class plays their part where scheduling needs it:

* running pods get `status.phase` and distinct `status.startTime`, and so does each pod once the
  scheduler bound it (the kubelet's part: preemption breaks ties by start time, and upstream takes
  "now" for a pod without one, which would make its choice random); pods get
  `terminationGracePeriodSeconds: 0` so a victim is gone as soon as it is deleted;
* PodDisruptionBudgets get the status the disruption controller would write;
* the PV controller and a CSI provisioner: while a pod is being scheduled, a PersistentVolume the
  scheduler bound to a claim (`spec.claimRef`) gets the claim bound to it, and a claim the
  scheduler asked to provision (`volume.kubernetes.io/selected-node`) gets a CSI volume pinned to
  that node, bound. Without them VolumeBinding's PreBind would wait `bindTimeoutSeconds` (600 s).
* a pending pod created with `schedulingGates` is released (gates removed, `Scenario.relabel`
  applied in the same update), so a test can change what the API server merged at creation.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesched.framework.types import truncate_note
from kubesched.harness.differential.scenario import PRIORITY_CLASSES, Scenario
from kubesched.harness.fake_nodes import ApiClient, ApiError

__all__ = ["OUTCOME_TIMEOUT", "PodOutcome", "ScenarioOnCluster", "UpstreamTimeout", "gone", "wait_until"]

Obj = dict[str, Any]

#: Seconds a pod may take to reach an outcome (a preemption needs two attempts, a volume binding a
#: one-second poll).
OUTCOME_TIMEOUT = 30.0
POLL_SECONDS = 0.01
#: Seconds a harness without a log to read waits for the scheduler to see new PodGroups.
GROUPS_SEEN_PAUSE = 1.0
#: How often, while a pod is being scheduled, the harness plays the PV controller.
PV_CONTROLLER_PERIOD = 0.1
#: Seconds a bound pod whose victims are gone may wait for the Event naming its preemption.
PREEMPTING_EVENT_WAIT = 10.0
_FOUND = re.compile(r"found a potential placement for pod on node (\S+), preempting")

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


class UpstreamTimeout(RuntimeError):
    """A scheduler did not reach an outcome (or did not show an object in its cache) in time."""


@dataclass
class PodOutcome:
    """What a scheduler did with one pending pod, and the objects it was scheduled against."""

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
    #: Per node, per plugin, the *weighted* score of the last attempt (empty: not known, e.g. one
    #: feasible node, or a scheduler that does not log them).
    scores: dict[str, dict[str, int]]
    #: The objects of the scenario as the API server held them just before the pod was created, and
    #: the pod as the scheduler got it (admission applied, released from its gates).
    before: list[Obj] = field(default_factory=list)
    pod: Obj = field(default_factory=dict)
    #: Every `status.nominatedNodeName` the pod was seen with before it was bound (a preemption's
    #: nomination, or v1.37's expectation while PreBind waits for its volumes).
    nominations: set[str] = field(default_factory=set)


def wait_until(what: str, ready: Callable[[], bool], timeout: float = OUTCOME_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise UpstreamTimeout(f"timed out waiting for {what}")
        time.sleep(POLL_SECONDS)


def pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{namespace}/pods"
    return f"{base}/{name}" if name else base


#: Where each kind of a scenario's storage objects is created (`{ns}`: the object's namespace).
STORAGE_PATHS = {
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
}
#: Cluster-wide lists of the same kinds, for snapshots and teardown.
_LISTS = {
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
}
_API_VERSIONS = {
    "Namespace": "v1",
    "Node": "v1",
    "Pod": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
    "PersistentVolume": "v1",
    "PersistentVolumeClaim": "v1",
    **dict.fromkeys(("CSIDriver", "StorageClass", "CSIStorageCapacity", "CSINode"), "storage.k8s.io/v1"),
    **dict.fromkeys(("DeviceClass", "ResourceSlice", "ResourceClaim"), "resource.k8s.io/v1"),
}


def object_path(obj: Obj) -> str:
    """The URL of one storage object of a scenario."""
    base = STORAGE_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
    return f"{base}/{obj['metadata']['name']}"


class ScenarioOnCluster:
    """Create a scenario on the API server, schedule its pending pods one at a time, remove it.

    Subclasses implement the `_wait_*` hooks for their scheduler; `scheduler_name` is what the
    pending pods' `spec.schedulerName` is set to (None: left to the default).
    """

    scheduler_name: str | None = None

    def __init__(self, client: ApiClient) -> None:
        self.api = client

    # ------------------------------------------------------------------ hooks
    def _wait_cache_holds(self, s: Scenario, nodes: list[str], running: list[str]) -> None:
        """Return once the scheduler's cache holds these nodes and running pods."""
        raise NotImplementedError

    def _wait_cache_dropped(self, s: Scenario, nodes: list[str], pods: list[str]) -> None:
        """Return once the scheduler's cache no longer holds these nodes and bound pods."""
        raise NotImplementedError

    def _wait_unscheduled_pod_gone(self, key: str) -> None:
        """Return once the scheduler forgot the deleted, never-bound pod `key`."""
        raise NotImplementedError

    def _wait_pods_seen(self, keys: list[str], members: frozenset[str] = frozenset()) -> None:
        """Return once the scheduler's queue holds these just-created pods (held back or not);
        `members` are those of a PodGroup not created yet."""
        raise NotImplementedError

    def _wait_groups_seen(self, keys: list[str]) -> None:
        """Return once the scheduler has seen these just-created PodGroups (`namespace/name`); by
        default a pause long enough for a watch event."""
        time.sleep(GROUPS_SEEN_PAUSE)

    def _scores(self, key: str) -> dict[str, dict[str, int]]:
        """Per node, per plugin, the weighted scores of the pod's last attempt ({}: unknown)."""
        return {}

    def _group_cycles(self) -> dict[str, list[int]]:
        """Per PodGroup ("ns/name"), how many pods each of the scheduler's cycles for it held, in
        order, where the scheduler tells ({}: it does not)."""
        return {}

    def _group_attempts(self) -> dict[str, int]:
        """Per PodGroup ("ns/name"), how many pod-group cycles the scheduler began for it so far,
        where it tells ({}: it does not)."""
        return {}

    def _settled_on_nomination(self, key: str, nominated: str, started: float) -> bool:
        """Whether a nominated pod's outcome may be taken as bound to `nominated` (upstream race)."""
        return False

    def begin(self, scenario: Scenario, pending: list[Obj]) -> None:
        """Called before a scenario whose pods to schedule are `pending` is set up."""

    # ------------------------------------------------------------------ one scenario
    def run(self, scenario: Scenario) -> list[PodOutcome]:
        """Create the scenario, schedule its pending pods one at a time, then remove it all."""
        try:
            self._set_up(scenario)
            return [self._schedule(scenario, pod, i) for i, pod in enumerate(scenario.pending)]
        finally:
            self._tear_down(scenario)

    def _set_up(self, s: Scenario) -> None:
        for obj in s.volumes:
            created = self.api.post(object_path(obj).rsplit("/", 1)[0], _without_status(obj))
            if "status" in obj:  # a bound claim and its volume: what the PV controller would write
                created["status"] = obj["status"]
                self.api.request("PUT", f"{object_path(obj)}/status", created)
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
        running: list[str] = []
        for i, pod in enumerate(s.running):
            ns = pod["metadata"]["namespace"]
            created = self.api.post(pod_path(ns), _without_status(pod))
            status = dict(pod.get("status") or {})
            status["startTime"] = _start_time(i)
            created["status"] = status
            self.api.request("PUT", pod_path(ns, pod["metadata"]["name"]) + "/status", created)
            if status.get("phase") not in ("Succeeded", "Failed"):
                running.append(f"{ns}/{pod['metadata']['name']}")
        self._wait_cache_holds(s, [n["metadata"]["name"] for n in s.nodes], running)

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
                out.append(_with_kind(item, kind))
        for kind, path in (
            ("Node", "/api/v1/nodes"),
            ("Pod", "/api/v1/pods"),
            ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
            *_LISTS.items(),
        ):
            for item in self.api.list_all(path):
                if item["metadata"]["name"].startswith(prefix):
                    out.append(_with_kind(item, kind))
        return out

    def _create_pending(self, s: Scenario, pod: Obj) -> Obj:
        """Create the pod; release it from its gates (with its new labels) if it has any."""
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        body = copy.deepcopy(pod)
        if self.scheduler_name is not None:
            body["spec"]["schedulerName"] = self.scheduler_name
        created = self.api.post(pod_path(ns), body)
        if not created["spec"].get("schedulingGates"):
            return created
        created["spec"]["schedulingGates"] = []
        relabel = s.relabel.get(name)
        if relabel:
            created["metadata"]["labels"] = {**(created["metadata"].get("labels") or {}), **relabel}
        return self.api.request("PUT", pod_path(ns, name), created)

    def _schedule(self, s: Scenario, pod: Obj, index: int) -> PodOutcome:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        key = f"{ns}/{name}"
        before = self._snapshot(s)
        existing = {
            f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in before if o["kind"] == "Pod"
        }
        created = _with_kind(self._create_pending(s, pod), "Pod")
        plays_pv_controller = any(o["kind"] == "PersistentVolumeClaim" for o in s.volumes)
        result = node = None
        stalled = False
        nominations: set[str] = set()
        started = time.monotonic()
        next_pv_pass = started
        while result is None:
            if time.monotonic() - started > OUTCOME_TIMEOUT:
                raise UpstreamTimeout(f"pod {key}: no outcome after {OUTCOME_TIMEOUT:.0f} s")
            time.sleep(POLL_SECONDS)
            if plays_pv_controller and time.monotonic() >= next_pv_pass:
                self._play_pv_controller(s)
                next_pv_pass = time.monotonic() + PV_CONTROLLER_PERIOD
            current = self.api.get(pod_path(ns, name))
            if current["spec"].get("nodeName"):
                result, node = "Scheduled", current["spec"]["nodeName"]
                break
            cond = next(
                (c for c in current["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None
            )
            nominated = current["status"].get("nominatedNodeName")
            if nominated:
                nominations.add(nominated)
            if cond is not None and cond.get("reason") == "Unschedulable" and not nominated:
                result = "Unschedulable"
            elif nominated and self._settled_on_nomination(key, nominated, started):
                result, node, stalled = "Scheduled", nominated, True
        if result == "Scheduled" and not stalled:
            self._start(ns, name, index)
        uid = created["metadata"]["uid"]
        messages = self._failed_scheduling(ns, name, uid)
        if result == "Unschedulable" or stalled:
            # The condition can be read before the scheduler's Event is written (both schedulers
            # send Events in the background); without it the message would go uncompared.
            deadline = time.monotonic() + OUTCOME_TIMEOUT
            while not messages:
                if time.monotonic() > deadline:
                    raise UpstreamTimeout(f"pod {key}: no FailedScheduling event in {OUTCOME_TIMEOUT:.0f} s")
                time.sleep(5 * POLL_SECONDS)
                messages = self._failed_scheduling(ns, name, uid)
        if result == "Unschedulable":
            messages = self._last_attempt_event(ns, name, uid, messages)
        scores = {} if stalled else self._scores(key)
        after = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self.api.list_all("/api/v1/pods")
        }
        victims = sorted(k for k in existing if k not in after)
        if victims and not any(_FOUND.search(m) for m in messages):
            # A preemptor can be bound (its victims gone) before the Event of the attempt that
            # preempted is written: both schedulers send Events in the background.
            messages = self._preempting_event(ns, name, uid) or messages
        found = next((m for m in (_FOUND.search(msg) for msg in messages) if m is not None), None)
        if result == "Unschedulable" or stalled:
            self.api.request("DELETE", pod_path(ns, name), {"gracePeriodSeconds": 0})
            self._wait_unscheduled_pod_gone(key)
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
            nominations=nominations,
        )

    def _start(self, namespace: str, name: str, index: int) -> None:
        """What the kubelet would write: the pod runs, and started after every pod before it.

        Without a start time upstream takes "now" for it where preemption compares start times
        (`util.GetPodStartTime`), which makes its choice between equal candidates random.
        """
        status = {"phase": "Running", "startTime": _start_time(_PENDING_START + index)}
        self._update(
            pod_path(namespace, name),
            lambda pod: pod.update(status=pod.get("status", {}) | status),
            "/status",
        )

    def _update(self, path: str, change: Callable[[Obj], object], subresource: str = "") -> Obj:
        """Read the object, change it, write it (to `subresource`, e.g. "/status"), read again on a
        conflict: the scheduler (or a controller) may write it between the read and the write."""
        for _ in range(5):
            current = self.api.get(path)
            change(current)
            try:
                written: Obj = self.api.request("PUT", path + subresource, current)
                return written
            except ApiError as err:
                if err.reason != "Conflict":
                    raise
        raise UpstreamTimeout(f"could not write {path}{subresource}: in conflict 5 times")

    def _preempting_event(self, namespace: str, name: str, uid: str) -> list[str]:
        """The pod's FailedScheduling notes once the one naming a preemption is among them, or none
        if it did not come within `PREEMPTING_EVENT_WAIT` (the comparison then shows it missing)."""
        deadline = time.monotonic() + PREEMPTING_EVENT_WAIT
        while time.monotonic() < deadline:
            time.sleep(5 * POLL_SECONDS)
            messages = self._failed_scheduling(namespace, name, uid)
            if any(_FOUND.search(m) for m in messages):
                return messages
        return []

    def _last_attempt_event(self, namespace: str, name: str, uid: str, messages: list[str]) -> list[str]:
        """The pod's FailedScheduling notes once its condition's message is among them (as an
        Event's note, truncated): of a pod tried more than once, the condition of a later attempt
        can be read before that attempt's Event is written, and the last note is what is compared.
        If it never comes within `PREEMPTING_EVENT_WAIT`, the notes as they are (the comparison then
        shows the difference)."""
        deadline = time.monotonic() + PREEMPTING_EVENT_WAIT
        while True:
            pod = self.api.get(pod_path(namespace, name))
            cond: Obj = next(
                (c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {}
            )
            if truncate_note(cond.get("message") or "") in messages:
                return messages
            if time.monotonic() > deadline:
                return messages
            time.sleep(5 * POLL_SECONDS)
            messages = self._failed_scheduling(namespace, name, uid) or messages

    def _failed_scheduling(self, namespace: str, name: str, uid: str) -> list[str]:
        """The notes of the pod's FailedScheduling events, oldest first. Only this very pod's: the
        live share creates a pod of the same name again after upstream's, whose Events remain."""
        events = [
            e
            for e in self.api.list_all(
                f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                {"fieldSelector": f"regarding.name={name},reason=FailedScheduling"},
            )
            if (e.get("regarding") or {}).get("uid") == uid
        ]
        events.sort(key=lambda e: (e.get("eventTime") or "", e["metadata"].get("creationTimestamp") or ""))
        return [e.get("note", "") for e in events]

    # ------------------------------------------------------------------ the PV controller's part
    def _play_pv_controller(self, s: Scenario) -> None:
        """Complete what the scheduler's VolumeBinding PreBind started, as the PV controller and a CSI
        provisioner would: provision claims with a selected node, then bind claims to the volumes
        that name them."""
        prefix = f"{s.name}-"
        claims = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): c
            for c in self.api.list_all(_LISTS["PersistentVolumeClaim"])
            if c["metadata"]["name"].startswith(prefix)
        }
        volumes = [
            v
            for v in self.api.list_all(_LISTS["PersistentVolume"])
            if v["metadata"]["name"].startswith(prefix)
        ]
        named = {(v["spec"].get("claimRef") or {}).get("name") for v in volumes}
        for claim in claims.values():
            node = (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
            if node and not claim["spec"].get("volumeName") and claim["metadata"]["name"] not in named:
                volumes.append(self._provision(s, claim, node))
        for pv in volumes:
            ref = pv["spec"].get("claimRef") or {}
            wanted = claims.get((ref.get("namespace", ""), ref.get("name", "")))
            if wanted is not None and not wanted["spec"].get("volumeName"):
                self._bind(wanted, pv)

    def _provision(self, s: Scenario, claim: Obj, node: str) -> Obj:
        meta, spec = claim["metadata"], claim["spec"]
        class_name = spec.get("storageClassName", "")
        sc = next(
            (o for o in s.volumes if o["kind"] == "StorageClass" and o["metadata"]["name"] == class_name), {}
        )
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{meta['name']}-provisioned"},
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "storageClassName": class_name,
                "persistentVolumeReclaimPolicy": "Delete",
                "csi": {"driver": sc.get("provisioner", "example.com/csi"), "volumeHandle": meta["uid"]},
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                        ]
                    }
                },
            },
        }
        return self.api.post(_LISTS["PersistentVolume"], pv)

    def _bind(self, claim: Obj, pv: Obj) -> None:
        volume = pv["metadata"]["name"]

        def bind(current: Obj) -> None:
            annotations = current["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
            current["spec"]["volumeName"] = volume

        path = object_path(_with_kind(claim, "PersistentVolumeClaim"))
        self._update(path, bind)
        bound = {
            "phase": "Bound",
            "accessModes": pv["spec"].get("accessModes") or [],
            "capacity": pv["spec"]["capacity"],
        }
        self._update(path, lambda current: current.update(status=bound), "/status")
        self._update(
            f"{_LISTS['PersistentVolume']}/{volume}", lambda v: v.update(status={"phase": "Bound"}), "/status"
        )

    # ------------------------------------------------------------------ teardown
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
            _delete(self.api, pod_path(meta["namespace"], meta["name"]))
        for pdb in s.pdbs:
            meta = pdb["metadata"]
            _delete(
                self.api,
                f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets/{meta['name']}",
            )
        for kind, path in _LISTS.items():
            for item in self.api.list_all(path):
                if item["metadata"]["name"].startswith(prefix):
                    self._remove(_with_kind(item, kind))
        for node in s.nodes:
            _delete(self.api, f"/api/v1/nodes/{node['metadata']['name']}")
        self._wait_cache_dropped(s, [n["metadata"]["name"] for n in s.nodes], bound)

    def _remove(self, obj: Obj) -> None:
        """Delete a storage object for good: no controller would ever lift its protection finalizer,
        and the next run of the same scenario needs the name."""
        path = object_path(obj)
        _delete(self.api, path)
        for _ in range(5):
            try:
                current = self.api.get(path)
            except ApiError as err:
                if err.reason == "NotFound":
                    return
                raise
            if not current["metadata"].get("finalizers"):
                break
            current["metadata"]["finalizers"] = []
            try:
                self.api.request("PUT", path, current)
                break
            except ApiError as err:
                if err.reason not in ("NotFound", "Conflict"):
                    raise
        wait_until(f"removal of {path}", lambda: gone(self.api, path))


#: Running pods start at second i of 2026; pods scheduled during the scenario from this second on.
_PENDING_START = 1000


def _start_time(second: int) -> str:
    return (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


def gone(api: ApiClient, path: str) -> bool:
    try:
        api.get(path)
    except ApiError as err:
        if err.reason == "NotFound":
            return True
        raise
    return False


def _delete(api: ApiClient, path: str) -> None:
    try:
        api.request("DELETE", path, {"gracePeriodSeconds": 0})
    except ApiError as err:
        if err.reason != "NotFound":
            raise


def _without_status(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "status"}


def _with_kind(item: Obj, kind: str) -> Obj:
    """List items carry no kind/apiVersion; the loader needs both."""
    out = copy.deepcopy(item)
    out["kind"] = kind
    out["apiVersion"] = _API_VERSIONS[kind]
    return out
