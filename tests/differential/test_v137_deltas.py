"""The v1.37 deltas of the default plugins, each asked of the real kube-scheduler v1.37.2.

One tiny hand-made scenario per delta is created on the API server and scheduled by the binary; the
test states what v1.37.2 did (its message, its scores, which nodes it found feasible) and that
kubesched's simulator, given the same objects, agrees on every comparison. The matchLabelKeys cases
also run through `kubesched run`, which must not merge the keys a second time where upstream does
not (InterPodAffinity) and must where upstream does (PodTopologySpread).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.harness.differential.cluster import PodOutcome
from kubesched.harness.differential.run import Harnesses, Tally, compare_scenario
from kubesched.harness.differential.scenario import HOSTNAME, ZONE, Scenario

Obj = dict[str, Any]
DRIVER_SUFFIX = "-csi.example.com"


def node(s: Scenario, i: int, *, cpu: str = "4", zone: str | None = None, **extra: Any) -> Obj:
    name = f"{s.name}-n{i}"
    labels = {HOSTNAME: name, **extra.pop("labels", {})}
    if zone is not None:
        labels[ZONE] = zone
    allocatable = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": extra.pop("spec", {}),
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    s: Scenario, name: str, *, cpu: str | None = None, labels: dict[str, str] | None = None, **spec: Any
) -> Obj:
    container: Obj = {"name": "main", "image": "img-a:1"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{s.name}-{name}", "namespace": "default", "labels": labels or {}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0, **spec},
    }


def running(s: Scenario, p: Obj, node_index: int) -> Obj:
    p["spec"]["nodeName"] = f"{s.name}-n{node_index}"
    p["status"] = {"phase": "Running"}
    return p


def claim(s: Scenario, name: str, size: str, class_name: str, **extra: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"{s.name}-{name}", "namespace": "default", **extra.pop("metadata", {})},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": class_name,
            **extra,
        },
    }


def with_claim(p: Obj, claim_name: str) -> Obj:
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return p


def check(h: Harnesses, s: Scenario, tmp_path: Path, *, live: bool = False) -> list[PodOutcome]:
    """Schedule `s` with the binary (and `kubesched run`); every comparison must agree."""
    results, files, outcomes = compare_scenario(h, s, tmp_path, live=live)
    tally = Tally()
    tally.add(s, results, files)
    assert tally.mismatches == [], tally.mismatch_report()
    return outcomes


def feasible(outcome: PodOutcome) -> set[str]:
    """The nodes upstream scored, i.e. found feasible (scores are logged with two or more)."""
    return set(outcome.scores)


# --------------------------------------------------------------------------- NodeResourcesFit


def test_a_request_above_the_whole_allocatable_is_unresolvable(
    differential: Harnesses, tmp_path: Path
) -> None:
    """v1.34+: a node too small for the pod even when empty rejects it UnschedulableAndUnresolvable,
    so preemption calls itself not helpful there, and looks for victims on the other node only."""
    s = Scenario(seed=0, label="d-fit")
    s.nodes = [node(s, 0, cpu="1"), node(s, 1, cpu="2")]
    s.running = [running(s, pod(s, "r0", cpu="1500m", priorityClassName="high"), 1)]
    s.pending = [pod(s, "p0", cpu="1500m", priorityClassName="mid")]
    (p0,) = check(differential, s, tmp_path)
    assert p0.messages[-1] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_pod_level_requests_filter_but_do_not_score(differential: Harnesses, tmp_path: Path) -> None:
    """Pod-level `spec.resources` replace the containers' sum in Filter; Fit's scorer ignores them
    (the scores of p1 are compared node by node)."""
    s = Scenario(seed=0, label="d-podlevel")
    s.nodes = [node(s, 0, cpu="2", labels={"disk": "ssd"}), node(s, 1, cpu="4"), node(s, 2, cpu="8")]
    s.running = [running(s, pod(s, "r0", cpu="1"), 0)]
    pod_level = {"requests": {"cpu": "1500m", "memory": "1Gi"}}
    s.pending = [
        pod(s, "p0", cpu="100m", resources=pod_level, nodeSelector={"disk": "ssd"}),
        pod(s, "p1", cpu="100m", resources=pod_level),
    ]
    p0, p1 = check(differential, s, tmp_path)
    assert p0.messages[-1].startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."
    )
    assert feasible(p1) == {f"{s.name}-n1", f"{s.name}-n2"}


# --------------------------------------------------------------------------- TaintToleration


def test_the_taint_message(differential: Harnesses, tmp_path: Path) -> None:
    s = Scenario(seed=0, label="d-taint")
    s.nodes = [node(s, 0, spec={"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]})]
    s.pending = [pod(s, "p0")]
    (p0,) = check(differential, s, tmp_path)
    assert p0.messages[-1] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )


# --------------------------------------------------------------------------- VolumeBinding capacity


def test_storage_capacity_filters_and_scores_dynamic_provisioning(
    differential: Harnesses, tmp_path: Path
) -> None:
    """CSIStorageCapacity: too little room is `did not have enough free storage`; with
    StorageCapacityScoring (beta, on) the node with the most room left scores highest."""
    s = Scenario(seed=0, label="d-capacity")
    s.nodes = [node(s, 0, zone="za"), node(s, 1, zone="zb"), node(s, 2, zone="zc")]
    driver = f"{s.name}{DRIVER_SUFFIX}"
    cls = f"{s.name}-fast"
    s.volumes = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
         "spec": {"storageCapacity": True}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": cls},
         "provisioner": driver, "volumeBindingMode": "WaitForFirstConsumer"},
        claim(s, "c0", "5Gi", cls),
        claim(s, "c1", "100Gi", cls),
    ]  # fmt: skip
    for zone, size in (("za", "10Gi"), ("zb", "50Gi"), ("zc", "1Gi")):
        s.volumes.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"{s.name}-{zone}", "namespace": "default"},
                "storageClassName": cls,
                "nodeTopology": {"matchLabels": {ZONE: zone}},
                "capacity": size,
            }
        )
    s.pending = [with_claim(pod(s, "p0"), f"{s.name}-c0"), with_claim(pod(s, "p1"), f"{s.name}-c1")]
    p0, p1 = check(differential, s, tmp_path)
    # 5Gi of 10Gi -> utilization 50 -> 50; of 50Gi -> 10 -> 90; zone c cannot hold it
    assert {n: v["VolumeBinding"] for n, v in p0.scores.items()} == {f"{s.name}-n0": 50, f"{s.name}-n1": 90}
    assert p0.node == f"{s.name}-n1"
    assert p1.messages[-1].startswith("0/3 nodes are available: 3 node(s) did not have enough free storage.")


# --------------------------------------------------------------------------- NodeVolumeLimits driver check


def test_a_csi_driver_can_keep_pods_off_nodes_without_it(differential: Harnesses, tmp_path: Path) -> None:
    s = Scenario(seed=0, label="d-csidriver")
    s.nodes = [node(s, i, labels={"disk": "hdd" if i else "ssd"}) for i in range(3)]
    driver = f"{s.name}{DRIVER_SUFFIX}"
    cls = f"{s.name}-block"
    pv_name = f"{s.name}-pv"
    s.volumes = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
         "spec": {"preventPodSchedulingIfMissing": True}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": cls},
         "provisioner": driver, "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                  "csi": {"driver": driver, "volumeHandle": "h1"},
                  "claimRef": {"namespace": "default", "name": f"{s.name}-c0"}},
         "status": {"phase": "Bound"}},
        claim(s, "c0", "1Gi", cls, volumeName=pv_name,
              metadata={"annotations": {"pv.kubernetes.io/bind-completed": "yes"}}),
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": f"{s.name}-n0"},
         "spec": {"drivers": [{"name": driver, "nodeID": "n0"}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": f"{s.name}-n1"},
         "spec": {"drivers": [{"name": "other.csi.example.com", "nodeID": "n1"}]}},
    ]  # fmt: skip
    s.volumes[3]["status"] = {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
    }
    s.pending = [with_claim(pod(s, "p0", nodeSelector={"disk": "hdd"}), f"{s.name}-c0")]
    (p0,) = check(differential, s, tmp_path)
    assert p0.messages[-1].startswith(
        f"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        f"2 {driver} CSI driver is not installed on the node."
    )


# --------------------------------------------------------------------------- matchLabelKeys


def _spread(keys: list[str]) -> Obj:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": keys,
            }
        ]
    }


def test_spread_label_keys_are_merged_at_admission_and_again_by_the_scheduler(
    differential: Harnesses, tmp_path: Path
) -> None:
    """The API server merges `version In (v1)` at creation; the pod is relabelled v2 before it is
    released; v1.37.2's PodTopologySpread ANDs `version = v2` as well, so no pod matches and both
    zones are feasible (without the second merge only zone b would be)."""
    s = Scenario(seed=0, label="d-spreadkeys")
    s.nodes = [node(s, 0, zone="za"), node(s, 1, zone="zb")]
    web = {"app": "web", "version": "v1"}
    s.running = [running(s, pod(s, f"r{i}", labels=web), 0) for i in range(2)]
    gate = [{"name": "example.com/hold"}]
    s.pending = [
        pod(s, "p0", labels=web, schedulingGates=gate, **_spread(["version"])),
        pod(s, "p1", labels=web, **_spread(["version"])),
    ]
    s.relabel = {f"{s.name}-p0": {"version": "v2"}}
    p0, p1 = check(differential, s, tmp_path, live=True)
    assert feasible(p0) == {f"{s.name}-n0", f"{s.name}-n1"}
    assert p1.node == f"{s.name}-n1"
    selector = p0.pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    assert selector["matchExpressions"] == [{"key": "version", "operator": "In", "values": ["v1"]}]


def test_affinity_label_keys_are_merged_at_admission_only(differential: Harnesses, tmp_path: Path) -> None:
    """A pod created without the `version` label gets nothing merged; labelled v1 before release,
    v1.37.2's InterPodAffinity does not merge it either: web pods of any version attract it, so both
    zones are feasible (a scheduler-side merge would leave zone a only)."""
    s = Scenario(seed=0, label="d-affinitykeys")
    s.nodes = [node(s, 0, zone="za"), node(s, 1, zone="zb")]
    s.running = [
        running(s, pod(s, "r0", labels={"app": "web", "version": "v1"}), 0),
        running(s, pod(s, "r1", labels={"app": "web", "version": "v2"}), 1),
    ]
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": ZONE,
        "matchLabelKeys": ["version"],
    }
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    s.pending = [
        pod(s, "p0", labels={"app": "db"}, affinity=affinity, schedulingGates=[{"name": "example.com/hold"}])
    ]
    s.relabel = {f"{s.name}-p0": {"version": "v1"}}
    (p0,) = check(differential, s, tmp_path, live=True)
    assert feasible(p0) == {f"{s.name}-n0", f"{s.name}-n1"}
    assert (
        "matchExpressions"
        not in p0.pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
            "labelSelector"
        ]
    )


@pytest.mark.parametrize("kind", ["spread", "affinity"])
def test_the_simulators_admission_merges_as_the_api_server_does(
    differential: Harnesses, tmp_path: Path, kind: str
) -> None:
    """A manifest given to `kubesched simulate` is admitted as the API server admits it."""
    s = Scenario(seed=0, label=f"d-admit-{kind}")
    s.nodes = [node(s, 0, zone="za")]
    labels = {"app": "web", "version": "v3", "tenant": "t1"}
    if kind == "spread":
        manifest = pod(s, "p0", labels=labels, **_spread(["version", "absent"]))
    else:
        term = {
            "labelSelector": {"matchLabels": {"app": "web"}},
            "topologyKey": ZONE,
            "matchLabelKeys": ["version"],
            "mismatchLabelKeys": ["tenant"],
        }
        manifest = pod(s, "p0", labels=labels, affinity={
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": term}]}})  # fmt: skip
    s.pending = [copy.deepcopy(manifest)]
    (p0,) = check(differential, s, tmp_path)
    stored = msgspec.convert(p0.pod, Pod)
    admitted = MemoryCluster(LoadedObjects(pods=[msgspec.convert(manifest, Pod)])).pods
    (mine,) = admitted.values()
    assert mine.spec.topology_spread_constraints == stored.spec.topology_spread_constraints
    assert mine.spec.affinity == stored.spec.affinity


# --------------------------------------------------------------------------- NominatedNodeNameForExpectation


def test_a_pod_shows_its_node_while_prebind_provisions_its_volume(
    differential: Harnesses, tmp_path: Path
) -> None:
    """v1.37 writes `nominatedNodeName` at the start of a binding whose PreBind has work (here a
    volume to provision, which the harness completes as the PV controller would, after the
    scheduler asked); a plain pod is bound without it. `kubesched run` must do the same."""
    s = Scenario(seed=0, label="d-expectation")
    s.nodes = [node(s, 0)]
    cls = f"{s.name}-wffc"
    s.volumes = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": cls},
         "provisioner": f"{s.name}{DRIVER_SUFFIX}", "volumeBindingMode": "WaitForFirstConsumer"},
        claim(s, "c0", "1Gi", cls),
    ]  # fmt: skip
    s.pending = [with_claim(pod(s, "p0"), f"{s.name}-c0"), pod(s, "p1")]
    n0 = f"{s.name}-n0"
    p0, p1 = check(differential, s, tmp_path)
    assert (p0.node, p0.nominations) == (n0, {n0})
    assert (p1.node, p1.nominations) == (n0, set())
    assert differential.live is not None
    live0, live1 = differential.live.run(s)
    assert (live0.node, live0.nominations) == (n0, {n0})
    assert (live1.node, live1.nominations) == (n0, set())


# --------------------------------------------------------------------------- SchedulerAsyncPreemption


def _events(api: Any, name: str, uid: str) -> list[tuple[str, str]]:
    """(reason, note) of the Events about this very pod, oldest first."""
    items = [
        e
        for e in api.list_all(
            "/apis/events.k8s.io/v1/namespaces/default/events", {"fieldSelector": f"regarding.name={name}"}
        )
        if (e.get("regarding") or {}).get("uid") == uid
    ]
    items.sort(key=lambda e: (e.get("eventTime") or "", e["metadata"].get("creationTimestamp") or ""))
    return [(e["reason"], e.get("note", "")) for e in items]


def _preempt_and_watch(sched: Any, s: Scenario) -> dict[str, Any]:
    """Schedule `s`'s one pending pod, which must preempt `s`'s one running pod (held by a finalizer
    so its DisruptionTarget condition can be read), and record what the API server saw."""
    from kubesched.harness.differential.cluster import pod_path, wait_until

    api = sched.api
    (victim,) = s.running
    vname = victim["metadata"]["name"]
    try:
        sched._set_up(s)
        created = sched._create_pending(s, s.pending[0])
        pname, uid = created["metadata"]["name"], created["metadata"]["uid"]
        seen: list[tuple[str, str, str]] = []

        def look() -> bool:
            p = api.get(pod_path("default", pname))
            cond: Obj = next(
                (c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {}
            )
            state = (cond.get("status", ""), cond.get("reason", ""), p["status"].get("nominatedNodeName", ""))
            if any(state) and (not seen or seen[-1] != state):  # not yet tried: nothing to compare
                seen.append(state)
            # The victim's finalizer keeps the preemptor from binding: its nominated state stays.
            terminating = api.get(pod_path("default", vname))["metadata"].get("deletionTimestamp")
            return bool(terminating) and bool(state[2])

        wait_until("the victim's eviction", look)
        evicted = api.get(pod_path("default", vname))
        disruption = next(c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget")
        evicted["metadata"]["finalizers"] = []
        api.request("PUT", pod_path("default", vname), evicted)
        wait_until(
            "the preemptor's bind", lambda: bool(api.get(pod_path("default", pname))["spec"].get("nodeName"))
        )
        wait_until(
            "its Scheduled Event",
            lambda: [r for r, _ in _events(api, pname, uid)][-1:] == ["Scheduled"],
        )
        # Both schedulers send Events in the background: the victim's may come after the bind.
        vuid = evicted["metadata"]["uid"]
        wait_until("the victim's Preempted Event", lambda: bool(_events(api, vname, vuid)))
        name = sched.scheduler_name or "default-scheduler"
        return {
            "preemptor": [(r, n.replace(uid, "<uid>")) for r, n in _events(api, pname, uid)],
            "states": seen,
            "disruption": {
                k: str(disruption[k]).replace(name, "<scheduler>") for k in ("status", "reason", "message")
            },
            "victim": [
                (r, n.replace(uid, "<uid>")) for r, n in _events(api, vname, evicted["metadata"]["uid"])
            ],
        }
    finally:
        try:
            current = api.get(pod_path("default", vname))
            current["metadata"]["finalizers"] = []
            api.request("PUT", pod_path("default", vname), current)
        except Exception:
            pass  # already gone
        sched._tear_down(s)


def test_async_preemption_nominates_at_once_and_evicts_like_upstream(differential: Harnesses) -> None:
    """SchedulerAsyncPreemption (on in v1.37.2): the preemptor is nominated in its failed attempt, the
    victim gets DisruptionTarget and is deleted in the background, and the preemptor binds once the
    victim is gone. `kubesched run` must show the same Events, conditions and victim condition."""
    outcomes = []
    for sched in (differential.upstream, differential.live):
        assert sched is not None
        s = Scenario(seed=0, label="d-async-preemption")
        s.nodes = [node(s, 0, cpu="2")]
        victim = running(s, pod(s, "victim", cpu="2", priorityClassName="low"), 0)
        victim["metadata"]["finalizers"] = ["example.com/hold"]
        s.running = [victim]
        s.pending = [pod(s, "vip", cpu="2", priorityClassName="high")]
        outcomes.append(_preempt_and_watch(sched, s))
    upstream, mine = outcomes
    n0 = "d-async-preemption-n0"
    assert upstream["disruption"] == {
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "<scheduler>: preempting to accommodate a higher priority pod",
    }
    assert ("False", "Unschedulable", n0) in upstream["states"]
    assert upstream["preemptor"][-1] == (
        "Scheduled",
        f"Successfully assigned default/d-async-preemption-vip to {n0}",
    )
    for key in upstream:
        assert mine[key] == upstream[key], f"{key}: kubesched {mine[key]} != upstream {upstream[key]}"
