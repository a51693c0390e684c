"""The `kubesched simulate --output json` report, checked field by field against docs/simulate-report.md.

Every expected number here is worked out by hand from the scenario, so a change in a plugin, in the
report or in the run loop shows up as a precise difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.simulate.simulate_helpers import (
    NODE_KEYS,
    POD_EXTRA_KEYS,
    POD_KEYS,
    REPORT_KEYS,
    RESULTS,
    SUMMARY_EXTRA_KEYS,
    SUMMARY_KEYS,
    Obj,
    by_name,
    node,
    nodes_by_name,
    pod,
    run_cli,
    simulate_json,
    taint,
    write_json,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]

UNTOLERATED = "node(s) had untolerated taint(s)"
#: DefaultPreemption's PostFilter message, appended to FailedScheduling as upstream does: nodes
#: rejected as UnschedulableAndUnresolvable cannot be helped by evicting anything.
NOT_HELPFUL = "Preemption is not helpful for scheduling"
#: Why an unschedulable pod is tried 4 times: once at t=0, then each time it has sat 5 minutes
#: (podMaxInUnschedulablePodsDuration) in the unschedulable pool, at 300 s, 600 s and 900 s; the
#: next retry, at 1200 s, is past the 16-minute idle horizon. (The doc example's hello-on-b: 4.)
UNSCHEDULABLE_ATTEMPTS = 4


# --------------------------------------------------------------------------- a mixed cluster


def mixed_cluster(tmp_path: Path) -> Path:
    """One pod of every kind of outcome on three nodes, two of them tainted.

    n1 (2 cpu, 4Gi) holds the running `sys` (500m, 256Mi); `small` (priority 100, so it goes
    first) then takes 1 cpu and 1Gi, leaving 500m free. n2 and n3 carry NoSchedule / NoExecute taints
    nobody tolerates, so every pending pod can only use n1:

    * big (3 cpu) exceeds n1's whole allocatable cpu: Insufficient cpu, UnschedulableAndUnresolvable;
    * medium (600m) exceeds what is free but not the total: Insufficient cpu, Unschedulable;
    * huge (3 cpu, 8Gi) exceeds both: two reasons on one node;
    * bad has an invalid memory quantity, gated has two scheduling gates, other names no profile;
    * other-running names no profile either, but is bound to n2 already: running, not Ignored.
    """
    return write_yaml(
        tmp_path / "cluster.yaml",
        node("n1", cpu="2", memory="4Gi", pods="10", labels={"zone": "a"}),
        node("n2", cpu="8", memory="16Gi", pods="10", taints=[taint("dedicated", "NoSchedule", "gpu")]),
        node("n3", cpu="8", memory="16Gi", pods="10", taints=[taint("spot", "NoExecute", "true")]),
        pod("sys", namespace="kube-system", nodeName="n1", requests={"cpu": "500m", "memory": "256Mi"}),
        pod(
            "other-running", schedulerName="other", nodeName="n2", requests={"cpu": "250m", "memory": "64Mi"}
        ),
        pod("big", requests={"cpu": "3", "memory": "1Gi"}),
        pod("medium", requests={"cpu": "600m", "memory": "256Mi"}),
        pod("huge", requests={"cpu": "3", "memory": "8Gi"}),
        pod("bad", namespace="ns1", requests={"cpu": "100m", "memory": "12XB"}),
        pod("gated", schedulingGates=[{"name": "a"}, {"name": "b"}]),
        pod("other", schedulerName="other"),
        pod("small", priority=100, requests={"cpu": "1", "memory": "1Gi"}),
    )


def check_shape(report: Obj) -> None:
    """Key sets and types of every documented field."""
    assert set(report) == REPORT_KEYS
    assert report["workloads"] == []  # the input has no workload
    assert report["podGroups"] == []  # GenericWorkload is off
    for profile in report["profiles"]:
        assert set(profile) == {"schedulerName", "scoreWeights"}
        assert all(type(w) is int and w > 0 for w in profile["scoreWeights"].values())
    for p in report["pods"]:
        assert set(p) - POD_EXTRA_KEYS == POD_KEYS, p["name"]
        for key in ("namespace", "name", "schedulerName", "result"):
            assert type(p[key]) is str, (p["name"], key)
        for key in ("node", "nominatedNode", "message"):
            assert p[key] is None or type(p[key]) is str, (p["name"], key)
        assert type(p["attempts"]) is int and p["attempts"] >= 0
        assert p["result"] in RESULTS
        # node: where the pod was bound (Scheduled) or reserved (Waiting); message: null only when bound.
        assert (p["node"] is not None) == (p["result"] in ("Scheduled", "Waiting")), p["name"]
        assert (p["message"] is None) == (p["result"] == "Scheduled"), p["name"]
        assert isinstance(p["filter"], dict) and isinstance(p["scores"], dict)
        for verdict in p["filter"].values():
            assert set(verdict) == {"plugin", "code", "reasons"}
            assert type(verdict["plugin"]) is str and type(verdict["code"]) is str
            assert all(type(r) is str for r in verdict["reasons"]) and verdict["reasons"]
        for scored in p["scores"].values():
            assert set(scored) == {"plugins", "total"}
            assert type(scored["total"]) is int
            assert all(type(v) is int and 0 <= v <= 100 for v in scored["plugins"].values())
        if p["preFilter"] is not None:
            assert set(p["preFilter"]) == {"plugin", "code", "reasons"}
        explanation = p["explanation"]
        if explanation is not None:
            assert set(explanation) == {"rejectedNodes", "rejections", "scoredNodes", "topNodes"}
            for r in explanation["rejections"]:
                assert set(r) == {"plugin", "code", "reason", "count", "nodes"}
                assert 0 < len(r["nodes"]) <= min(r["count"], 10)
            for ranked in explanation["topNodes"]:
                assert set(ranked) == {"node", "total", "plugins"}
    for n in report["nodes"]:
        assert set(n) == NODE_KEYS
        assert type(n["name"]) is str and type(n["pods"]) is int
        for key in ("allocatable", "requested"):
            assert all(type(k) is str and type(v) is str for k, v in n[key].items())
        assert set(n["requested"]) == set(n["allocatable"]) - {"pods"}
    summary = report["summary"]
    assert set(summary) - SUMMARY_EXTRA_KEYS == SUMMARY_KEYS
    assert set(summary) >= SUMMARY_EXTRA_KEYS
    for key in ("scheduled", "unschedulable", "pods", "nodes", *SUMMARY_EXTRA_KEYS):
        assert type(summary[key]) is int, key
    assert type(summary["seconds"]) is float and summary["seconds"] >= 0
    assert type(summary["podsPerSecond"]) is float and summary["podsPerSecond"] >= 0


def check_summary_consistent(report: Obj) -> None:
    pods: list[Obj] = report["pods"]
    summary = report["summary"]

    def count(result: str) -> int:
        return sum(1 for p in pods if p["result"] == result)

    assert summary["scheduled"] == count("Scheduled")
    assert summary["unschedulable"] == count("Unschedulable")
    assert summary["errors"] == count("Error")
    assert summary["gated"] == count("Gated")
    assert summary["waiting"] == count("Waiting")
    assert summary["ignored"] == count("Ignored")
    assert summary["pods"] == len(pods) - count("Ignored")
    assert summary["nodes"] == len(report["nodes"])


def test_every_field_has_its_documented_name_and_type(tmp_path: Path, capsys: Capsys) -> None:
    for argv in ((), ("--explain",)):
        report = simulate_json(capsys, str(mixed_cluster(tmp_path)), *argv)
        check_shape(report)
        check_summary_consistent(report)


def test_pod_results_of_a_mixed_cluster(tmp_path: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(mixed_cluster(tmp_path)))
    pods = by_name(report)
    # Running pods (spec.nodeName) are not listed, whatever their schedulerName.
    assert set(pods) == {"small", "big", "medium", "huge", "bad", "gated", "other"}
    # Pods scheduled by a profile first, then the Ignored ones.
    assert [p["name"] for p in report["pods"]][-1] == "other"

    def expect(name: str, **fields: Any) -> None:
        got = {k: pods[name][k] for k in fields}
        assert got == fields, name

    expect(
        "small",
        namespace="default",
        schedulerName="default-scheduler",
        result="Scheduled",
        node="n1",
        nominatedNode=None,
        message=None,
        attempts=1,
        filter={},
        scores={},
    )
    expect(
        "big",
        result="Unschedulable",
        node=None,
        nominatedNode=None,
        message=(
            f"0/3 nodes are available: 1 Insufficient cpu, 2 {UNTOLERATED}."
            f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
        ),
        attempts=UNSCHEDULABLE_ATTEMPTS,
    )
    # n1 could fit medium if something left, but sys has the same priority (0): no victims.
    expect(
        "medium",
        result="Unschedulable",
        node=None,
        message=(
            f"0/3 nodes are available: 1 Insufficient cpu, 2 {UNTOLERATED}."
            f" preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod,"
            f" 2 {NOT_HELPFUL}."
        ),
        attempts=UNSCHEDULABLE_ATTEMPTS,
    )
    # One node short of two resources counts once under each reason.
    expect(
        "huge",
        result="Unschedulable",
        message=(
            f"0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 {UNTOLERATED}."
            f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
        ),
        attempts=UNSCHEDULABLE_ATTEMPTS,
    )
    expect(
        "bad",
        namespace="ns1",
        result="Error",
        node=None,
        message='spec.containers[0].resources.requests.memory: invalid quantity "12XB"',
        attempts=0,
    )
    expect("gated", result="Gated", node=None, message="waiting for scheduling gates: [a b]", attempts=0)
    expect(
        "other",
        schedulerName="other",
        result="Ignored",
        node=None,
        nominatedNode=None,
        message='no profile named "other"',
        attempts=0,
        filter={},
        scores={},
    )
    assert report["summary"] | {"seconds": 0.0, "podsPerSecond": 0.0} == {
        "scheduled": 1,
        "unschedulable": 3,
        "pods": 6,
        "nodes": 3,
        "seconds": 0.0,
        "podsPerSecond": 0.0,
        "errors": 1,
        "gated": 1,
        "waiting": 0,
        "ignored": 1,
    }


def test_running_pods_count_in_node_usage(tmp_path: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(mixed_cluster(tmp_path)))
    assert [n["name"] for n in report["nodes"]] == ["n1", "n2", "n3"]
    nodes = nodes_by_name(report)
    # n1: sys (500m, 256Mi) + small (1, 1Gi); n2: other-running (250m, 64Mi).
    assert nodes["n1"] == {
        "name": "n1",
        "pods": 2,
        "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
        "requested": {"cpu": "1500m", "memory": "1280Mi"},
    }
    assert nodes["n2"] == {
        "name": "n2",
        "pods": 1,
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "10"},
        "requested": {"cpu": "250m", "memory": "64Mi"},
    }
    assert nodes["n3"]["pods"] == 0
    assert nodes["n3"]["requested"] == {"cpu": "0", "memory": "0"}


def test_explain_filter_names_the_first_rejecting_plugin(tmp_path: Path, capsys: Capsys) -> None:
    pods = by_name(simulate_json(capsys, str(mixed_cluster(tmp_path)), "--explain"))
    tainted = {"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable", "reasons": [UNTOLERATED]}

    def fit(code: str, *reasons: str) -> Obj:
        return {"plugin": "NodeResourcesFit", "code": code, "reasons": list(reasons)}

    # A Scheduled pod shows the nodes ruled out; one feasible node means no scoring at all.
    assert pods["small"]["filter"] == {"n2": tainted, "n3": tainted}
    assert pods["small"]["scores"] == {}
    # More than n1 has at all: preemption cannot help.
    assert pods["big"]["filter"] == {
        "n1": fit("UnschedulableAndUnresolvable", "Insufficient cpu"),
        "n2": tainted,
        "n3": tainted,
    }
    # Less than n1's total but more than is free: preemption might help.
    assert pods["medium"]["filter"]["n1"] == fit("Unschedulable", "Insufficient cpu")
    assert pods["huge"]["filter"]["n1"] == fit(
        "UnschedulableAndUnresolvable", "Insufficient cpu", "Insufficient memory"
    )
    for name in ("big", "medium", "huge", "bad", "gated", "other"):
        assert pods[name]["scores"] == {}, name
    for name in ("bad", "gated", "other"):
        assert pods[name]["filter"] == {}, name


def test_without_explain_filter_and_scores_are_empty(tmp_path: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(scoring_cluster(tmp_path)))
    assert report["pods"]
    for p in report["pods"]:
        assert (p["filter"], p["scores"]) == ({}, {})


def test_failed_scheduling_reasons_are_sorted_as_strings(tmp_path: Path, capsys: Capsys) -> None:
    """`10 node(s) ...` sorts before `2 Insufficient cpu`: neither by count nor by reason."""
    nodes = [node(f"small-{i}", cpu="1") for i in range(2)]
    nodes += [node(f"tainted-{i:02}", taints=[taint("team", "NoSchedule", "x")]) for i in range(10)]
    path = write_yaml(tmp_path / "c.yaml", *nodes, pod("p", requests={"cpu": "2"}))
    (p,) = simulate_json(capsys, str(path))["pods"]
    assert p["message"] == (
        f"0/12 nodes are available: 10 {UNTOLERATED}, 2 Insufficient cpu."
        f" preemption: 0/12 nodes are available: 12 {NOT_HELPFUL}."
    )


def test_no_nodes_at_all(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(tmp_path / "c.yaml", pod("p"))
    code, out, err = run_cli(capsys, "simulate", str(path), "-o", "json")
    assert (code, err) == (0, "kubesched: note: the input has no nodes, so no pod can be scheduled\n")
    report = json.loads(out)
    (p,) = report["pods"]
    assert (p["result"], p["message"]) == ("Unschedulable", "no nodes available to schedule pods")
    assert report["nodes"] == []
    assert report["summary"]["nodes"] == 0


# --------------------------------------------------------------------------- scores by hand


def scoring_cluster(tmp_path: Path) -> Path:
    """Three feasible nodes that every default Score plugin ranks differently, and one cordoned node.

    a: 4 cpu, 8Gi, disk=ssd, holds image app:1 (500Mi), runs a pod of 1 cpu / 1Gi.
    b: 2 cpu, 8Gi, disk=hdd, holds app:1, one PreferNoSchedule taint.
    c: 4 cpu, 4Gi, disk=ssd, two PreferNoSchedule taints.
    d: cordoned (NodeUnschedulable rejects it) but still counts for ImageLocality's spread.
    """
    image = [{"names": ["app:1"], "sizeBytes": 500 * 1024 * 1024}]
    prefer = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 30,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                },
                {
                    "weight": 20,
                    "preference": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["b"]}
                        ]
                    },
                },
            ]
        }
    }
    web = {"cpu": "1", "memory": "2Gi"}
    one_taint = [taint("x", "PreferNoSchedule", "y")]
    two_taints = [*one_taint, taint("z", "PreferNoSchedule")]
    ssd, hdd = {"disk": "ssd"}, {"disk": "hdd"}
    system = {"cpu": "1", "memory": "1Gi"}
    return write_yaml(
        tmp_path / "scoring.yaml",
        node("a", cpu="4", memory="8Gi", labels=ssd, images=image),
        node("b", cpu="2", memory="8Gi", labels=hdd, images=image, taints=one_taint),
        node("c", cpu="4", memory="4Gi", labels=ssd, taints=two_taints),
        node("d", cpu="4", memory="4Gi", labels=ssd, unschedulable=True),
        pod("running", namespace="kube-system", nodeName="a", image="other:2", requests=system),
        pod("web-1", image="app:1", affinity=prefer, requests=web),
        pod("web-2", image="app:1", affinity=prefer, requests=web),
        pod("plain", image="app:1"),
    )


def scores(fit: int, balanced: int | None, image: int, affinity: int | None, taints: int) -> Obj:
    """Expected `scores[NODE]`; weights: TaintToleration 3, NodeAffinity 2, the others 1.

    VolumeBinding and DynamicResources score 0 for pods without volumes or claims, and are shown,
    as v1.37.2 logs them."""
    plugins = {
        "DynamicResources": 0,
        "ImageLocality": image,
        "NodeResourcesFit": fit,
        "TaintToleration": taints,
        "VolumeBinding": 0,
    }
    if balanced is not None:
        plugins["NodeResourcesBalancedAllocation"] = balanced
    if affinity is not None:
        plugins["NodeAffinity"] = affinity
    total = fit + (balanced or 0) + image + 2 * (affinity or 0) + 3 * taints
    return {"plugins": plugins, "total": total}


def test_explain_scores_computed_by_hand(tmp_path: Path, capsys: Capsys) -> None:
    """Normalized per-plugin scores (0-100, before weights) and weighted totals.

    ImageLocality: app:1 is on 2 of the 4 nodes, so it adds int(500Mi * 2/4) = 262144000 bytes;
    100 * (262144000 - 23Mi) // (1000Mi - 23Mi) = 23 on a and b, 0 on c.
    TaintToleration: untolerated PreferNoSchedule taints a=0, b=1, c=2, reversed over the max 2:
    100, 100 - 100*1//2 = 50, 0.
    NodeAffinity (web pods): matching preferred weights a=30 (ssd), b=20 (hostname b), c=30,
    normalized over the max 30: 100, 100*20//30 = 66, 100.
    NodeResourcesFit LeastAllocated: per resource (alloc - requested) * 100 // alloc, then averaged
    with integer division; BalancedAllocation (v1.36+): the balance b = int((1 - |f_cpu - f_mem| / 2) * 100)
    with and without the pod, scored 50 + (50 + b_with - b_without) // 2.
    """
    pods = by_name(simulate_json(capsys, str(scoring_cluster(tmp_path)), "--explain"))
    cordoned = {"plugin": "NodeUnschedulable", "code": "UnschedulableAndUnresolvable"}
    for p in pods.values():
        assert p["filter"] == {"d": cordoned | {"reasons": ["node(s) were unschedulable"]}}

    # web-1. a: cpu 2/4 -> 50, mem 3Gi/8Gi -> 62, fit (50+62)//2 = 56; balance |.5-.375|/2 -> 93,
    #           was |.25-.125|/2 -> 93: balanced 75.
    #        b: cpu 1/2 -> 50, mem 2/8 -> 75, fit 62; balance |.5-.25|/2 -> 87, was 100: 50 + 37 // 2 = 68.
    #        c: cpu 1/4 -> 75, mem 2/4 -> 50, fit 62; balanced 68.
    assert pods["web-1"]["scores"] == {
        "a": scores(fit=56, balanced=75, image=23, affinity=100, taints=100),  # 654
        "b": scores(fit=62, balanced=68, image=23, affinity=66, taints=50),  # 435
        "c": scores(fit=62, balanced=68, image=0, affinity=100, taints=0),  # 330
    }
    assert pods["web-1"]["scores"]["a"]["total"] == 654
    assert pods["web-1"]["node"] == "a"

    # web-2 sees web-1 on a. a: cpu 3/4 -> 25, mem 5Gi/8Gi -> 37, fit 31; balance |.75-.625|/2 -> 93,
    # was 93: balanced 75.
    assert pods["web-2"]["scores"] == {
        "a": scores(fit=31, balanced=75, image=23, affinity=100, taints=100),  # 629
        "b": scores(fit=62, balanced=68, image=23, affinity=66, taints=50),
        "c": scores(fit=62, balanced=68, image=0, affinity=100, taints=0),
    }
    assert pods["web-2"]["node"] == "a"

    # plain requests nothing: NodeAffinity (no preferred terms) and BalancedAllocation (best-effort)
    # skip PreScore and are left out. Fit counts the 100m / 200Mi defaults:
    # a: cpu 3100/4000 -> 22, mem (8192-5320)Mi/8192Mi -> 35, fit 28;
    # b: cpu 100/2000 -> 95, mem 200Mi/8Gi -> 97, fit 96; c: cpu 100/4000 -> 97, mem 200Mi/4Gi -> 95, fit 96.
    assert pods["plain"]["scores"] == {
        "a": scores(fit=28, balanced=None, image=23, affinity=None, taints=100),  # 351
        "b": scores(fit=96, balanced=None, image=23, affinity=None, taints=50),  # 269
        "c": scores(fit=96, balanced=None, image=0, affinity=None, taints=0),  # 96
    }
    assert pods["plain"]["node"] == "a"


def test_scores_follow_the_profile_weights(tmp_path: Path, capsys: Capsys) -> None:
    """`total` uses the profile's weights: NodeAffinity at weight 10 instead of 2 adds 8 times its
    (unweighted, unchanged) score to each node's total."""
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeAffinity, weight: 10}]\n"
    )
    pods = by_name(
        simulate_json(capsys, str(scoring_cluster(tmp_path)), "--explain", "--config", str(config))
    )
    got = {n: s["total"] for n, s in pods["web-1"]["scores"].items()}
    assert got == {"a": 654 + 800, "b": 435 + 8 * 66, "c": 330 + 800}
    assert pods["web-1"]["scores"]["b"]["plugins"]["NodeAffinity"] == 66  # before the weight


def test_node_quantities_and_extended_resources(tmp_path: Path, capsys: Capsys) -> None:
    gpu_node = node(
        "z-gpu",
        cpu="7910m",
        memory="31Gi",
        extra={"nvidia.com/gpu": "4", "ephemeral-storage": "100Gi"},
    )
    capacity_only = node("a-plain", cpu="2", memory="2048Mi", pods="20")
    capacity_only["status"] = {"capacity": capacity_only["status"]["allocatable"]}
    trainer = pod(
        "trainer",
        requests={"cpu": "1500m", "memory": "1536Mi", "nvidia.com/gpu": "2", "ephemeral-storage": "1Gi"},
    )
    path = write_yaml(tmp_path / "c.yaml", gpu_node, capacity_only, trainer)
    report = simulate_json(capsys, str(path))
    assert by_name(report)["trainer"]["node"] == "z-gpu"
    # Sorted by name; allocatable falls back to capacity; quantities in their usual spelling.
    assert report["nodes"] == [
        {
            "name": "a-plain",
            "pods": 0,
            "allocatable": {"cpu": "2", "memory": "2Gi", "pods": "20"},
            "requested": {"cpu": "0", "memory": "0"},
        },
        {
            "name": "z-gpu",
            "pods": 1,
            "allocatable": {
                "cpu": "7910m",
                "memory": "31Gi",
                "ephemeral-storage": "100Gi",
                "nvidia.com/gpu": "4",
                "pods": "110",
            },
            "requested": {
                "cpu": "1500m",
                "memory": "1536Mi",
                "ephemeral-storage": "1Gi",
                "nvidia.com/gpu": "2",
            },
        },
    ]


# --------------------------------------------------------------------------- one bad pod


def test_invalid_quantity_in_one_pod_is_that_pods_error(tmp_path: Path, capsys: Capsys) -> None:
    init_bad = pod("init-bad")
    init_bad["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "resources": {"requests": {"example.com/foo": "1.5.5"}}}
    ]
    path = write_yaml(
        tmp_path / "c.yaml",
        node("n1"),
        pod("ok-1", requests={"cpu": "100m"}),
        pod("bad-memory", requests={"cpu": "100m", "memory": "12XB"}),
        init_bad,
        pod("ok-2", requests={"memory": "1Gi"}),
    )
    report = simulate_json(capsys, str(path))
    pods = by_name(report)
    assert pods["bad-memory"]["result"] == "Error"
    assert pods["bad-memory"]["message"] == (
        'spec.containers[0].resources.requests.memory: invalid quantity "12XB"'
    )
    assert pods["init-bad"]["result"] == "Error"
    assert pods["init-bad"]["message"] == (
        'spec.initContainers[0].resources.requests[example.com/foo]: invalid quantity "1.5.5"'
    )
    assert [pods[n]["result"] for n in ("ok-1", "ok-2")] == ["Scheduled", "Scheduled"]
    assert (pods["bad-memory"]["attempts"], pods["bad-memory"]["node"]) == (0, None)
    # The bad pods hold nothing on the node.
    assert report["nodes"][0]["pods"] == 2
    assert report["nodes"][0]["requested"] == {"cpu": "100m", "memory": "1Gi"}
    assert (report["summary"]["errors"], report["summary"]["scheduled"]) == (2, 2)


# --------------------------------------------------------------------------- inputs


def test_list_typed_lists_multi_doc_json_and_directory_walking(tmp_path: Path, capsys: Capsys) -> None:
    root = tmp_path / "snapshot"
    n1, n2 = node("n1"), node("n2")
    for n in (n1, n2):
        del n["kind"], n["apiVersion"]  # items of a typed list may leave out kind
    write_json(root / "nodes.json", {"apiVersion": "v1", "kind": "NodeList", "items": [n1, n2]})
    deployment = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "skip-me"}}
    write_yaml(
        root / "sub" / "pods.yml", {"apiVersion": "v1", "kind": "List", "items": [pod("p-list"), deployment]}
    )
    multi = root / "sub" / "deeper" / "multi.yaml"
    multi.parent.mkdir(parents=True)
    multi.write_text(yaml.safe_dump(pod("p-multi-1")) + "---\n---\n" + yaml.safe_dump(pod("p-multi-2")))
    write_json(root / "single.json", pod("p-json"))
    typed = pod("p-typed")
    del typed["kind"]
    write_yaml(root / "podlist.yaml", {"apiVersion": "v1", "kind": "PodList", "items": [typed]})
    write_yaml(root / "running.yaml", pod("p-running", nodeName="n2", requests={"cpu": "1"}))
    # Left out when walking: hidden files and directories, other extensions. They would not parse.
    for skipped in (root / ".hidden" / "x.yaml", root / ".secret.yaml", root / "notes.txt"):
        skipped.parent.mkdir(parents=True, exist_ok=True)
        skipped.write_text("{ not: [valid")
    # A file named explicitly is read whatever its extension.
    explicit = write_yaml(tmp_path / "extra.manifest", pod("p-explicit"))

    code, out, err = run_cli(capsys, "simulate", str(root), str(explicit), "-o", "json")
    # Skipped kinds are said on stderr, and the run goes on.
    assert (code, err) == (
        0,
        "kubesched: note: left out 1 object(s) of kinds the scheduler does not read: Ingress (1)\n",
    )
    report = json.loads(out)
    pods = by_name(report)
    assert set(pods) == {"p-list", "p-multi-1", "p-multi-2", "p-json", "p-typed", "p-explicit"}
    assert {p["result"] for p in pods.values()} == {"Scheduled"}
    assert [n["name"] for n in report["nodes"]] == ["n1", "n2"]
    assert sum(n["pods"] for n in report["nodes"]) == 7
    assert nodes_by_name(report)["n2"]["requested"]["cpu"] != "0"


def test_json_podlist_from_kubectl(tmp_path: Path, capsys: Capsys) -> None:
    """`kubectl get pods -o json` output: a PodList with items that keep kind, nulls included."""
    item = pod("from-kubectl", namespace="web", requests={"cpu": "250m"})
    item["metadata"]["ownerReferences"] = None
    item["status"] = {"phase": "Pending", "conditions": None}
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [item]}
    write_json(tmp_path / "pods.json", doc)
    write_yaml(tmp_path / "nodes.yaml", node("n1"))
    pods = by_name(simulate_json(capsys, str(tmp_path)))
    assert (pods["from-kubectl"]["namespace"], pods["from-kubectl"]["result"]) == ("web", "Scheduled")


def test_gated_pod_with_one_gate_and_scheduler_name_default(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("n1"),
        pod("one-gate", schedulingGates=[{"name": "example.com/quota"}]),
        pod("explicit-default", schedulerName="default-scheduler"),
    )
    pods = by_name(simulate_json(capsys, str(path)))
    assert pods["one-gate"]["message"] == "waiting for scheduling gates: [example.com/quota]"
    assert pods["one-gate"]["schedulerName"] == "default-scheduler"
    assert pods["explicit-default"]["result"] == "Scheduled"


def test_negative_request_is_that_pods_error(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(tmp_path / "c.yaml", node("n1"), pod("negative", requests={"memory": "-1Gi"}))
    report = simulate_json(capsys, str(path))
    (p,) = report["pods"]
    assert p["result"] == "Error"
    assert "spec.containers[0].resources.requests.memory" in p["message"]
    assert report["nodes"][0]["requested"]["memory"] == "0"
