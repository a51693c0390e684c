"""`kubesched explain` of a pod group (GenericWorkload on): the group's cycle, its minCount arithmetic
and the members that block it, on four 4-cpu nodes each running a 3-cpu pod (1 cpu free on each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, wide_columns, write_yaml

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]
__all__ = ["wide_columns"]  # autouse: tables 200 columns wide

GATE = "--feature-gates=GenericWorkload=true"


def pod_group(name: str, min_count: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def members(group: str, count: int, cpu: str) -> list[Obj]:
    return [
        pod(f"{group}-{i}", requests={"cpu": cpu}, schedulingGroup={"podGroupName": group})
        for i in range(count)
    ]


def cluster(tmp_path: Path, *docs: Obj) -> Path:
    nodes = [node(f"n{i}", cpu="4") for i in range(4)]
    running = [pod(f"run{i}", requests={"cpu": "3"}, nodeName=f"n{i}") for i in range(4)]
    return write_yaml(tmp_path / "c.yaml", *nodes, *running, *docs)


def explain_json(capsys: Capsys, *argv: str) -> Obj:
    code, out, err = run_cli(capsys, "explain", *argv, "-o", "json")
    assert (code, err) == (0, ""), err
    report: Obj = json.loads(out)
    return report


def test_four_of_five_fit_the_fifth_is_named_with_what_its_siblings_left(
    tmp_path: Path, capsys: Capsys
) -> None:
    path = cluster(tmp_path, pod_group("five", 5), *members("five", 5, "1"))
    report = explain_json(capsys, "--pod-group", "default/five", "--snapshot", str(path), GATE)
    assert (report["verdict"], report["minCount"], report["pods"], report["bound"]) == (
        "Unschedulable",
        5,
        5,
        0,
    )
    assert report["message"] == (
        "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    assert report["placement"].startswith("the whole cluster (4 nodes)")
    outcomes = [(m["pod"], m["outcome"]) for m in report["members"]]
    assert outcomes == [
        *((f"default/five-{i}", "Placed") for i in range(4)),
        ("default/five-4", "FitsNowhere"),
    ]
    assert sorted(report["assignments"].values()) == ["n0", "n1", "n2", "n3"]  # one per node, in the trial
    blocked = report["members"][4]
    assert blocked["message"] == "0/4 nodes are available: 4 Insufficient cpu."
    assert [(r["reason"], r["count"]) for r in blocked["rejections"]] == [("Insufficient cpu", 4)]
    # On the cluster as it was each node has 1 cpu free; with its four siblings placed, none has.
    assert {n["node"]: n["missing"] for n in blocked["nearestNodes"]} == {
        f"n{i}": ["needs 1 more cpu (0 free of 4)"] for i in range(4)
    }
    assert report["plainWords"][0].startswith(
        '"minCount (5) cannot be satisfied: 4 scheduled, 0 remaining": the gang needs 5 pods placed at '
        "once; 4 have a node and 0 were left to try, so at most 4 of the 5 could be placed."
    )
    lines = run_cli(capsys, "explain", "--pod-group", "five", "--snapshot", str(path), GATE)[1]
    assert "PodGroup default/five (gang, minCount 5; 5 pod(s), 0 bound" in lines
    assert "default/five-4 fits on no node" in lines
    assert "needs 1 more cpu (0 free of 4)" in lines


def test_a_member_named_explains_its_group_the_first_fits_nowhere_the_second_is_never_tried(
    tmp_path: Path, capsys: Capsys
) -> None:
    path = cluster(tmp_path, pod_group("two", 2), *members("two", 2, "2"))
    report = explain_json(capsys, "default/two-1", "--snapshot", str(path), GATE)
    assert (report["podGroup"], report["pod"], report["verdict"]) == (
        "default/two",
        "default/two-1",
        "Unschedulable",
    )
    assert [(m["outcome"], m["message"]) for m in report["members"]] == [
        ("FitsNowhere", "0/4 nodes are available: 4 Insufficient cpu."),
        ("NotTried", "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"),
    ]
    assert "0 have a node and 1 was left to try, so at most 1 of the 2" in report["plainWords"][0]
    assert report["members"][0]["nearestNodes"][0]["missing"] == ["needs 1 more cpu (1 free of 4)"]


def test_a_gang_that_fits_gets_its_placement(tmp_path: Path, capsys: Capsys) -> None:
    path = cluster(tmp_path, pod_group("ok", 3), *members("ok", 3, "1"))
    report = explain_json(capsys, "--pod-group", "ok", "--snapshot", str(path), GATE)
    assert (report["verdict"], report["message"], report["plainWords"]) == ("Schedulable", "", [])
    assert sorted(report["assignments"]) == ["ok-0", "ok-1", "ok-2"]
    assert {m["outcome"] for m in report["members"]} == {"Placed"}


def test_too_few_pods_for_min_count_is_gated(tmp_path: Path, capsys: Capsys) -> None:
    path = cluster(tmp_path, pod_group("wait", 3), *members("wait", 2, "1"))
    report = explain_json(capsys, "--pod-group", "wait", "--snapshot", str(path), GATE)
    assert (report["verdict"], report["message"]) == (
        "Gated",
        "waiting for minCount pods from a gang to appear in scheduling queue",
    )
    assert [m["outcome"] for m in report["members"]] == ["Gated", "Gated"]
    assert report["plainWords"] == [
        '"waiting for minCount pods from a gang to appear in scheduling queue": fewer pods of the group '
        "exist than its minCount; none is tried until enough of them are created"
    ]


def test_a_podgroup_manifest_explains_that_group_with_the_snapshots_pods(
    tmp_path: Path, capsys: Capsys
) -> None:
    """A PodGroup not created yet: the pods wait for it in the cluster; given with -f, minCount 2 fits."""
    path = cluster(tmp_path, *members("late", 2, "1"))
    manifest = write_yaml(tmp_path / "pg.yaml", pod_group("late", 2))
    report = explain_json(capsys, "-f", str(manifest), "--snapshot", str(path), GATE)
    assert (report["podGroup"], report["verdict"], report["pods"]) == ("default/late", "Schedulable", 2)
    report = explain_json(capsys, "--pod-group", "late", "--snapshot", str(path), GATE)
    assert (report["verdict"], report["message"]) == (
        "Gated",
        'waiting for pods\'s pod group "late" to appear in scheduling queue',
    )


def test_a_pod_group_needs_the_gate_and_a_known_name(tmp_path: Path, capsys: Capsys) -> None:
    path = cluster(tmp_path, pod_group("five", 5), *members("five", 5, "1"))
    code, _, err = run_cli(capsys, "explain", "--pod-group", "five", "--snapshot", str(path))
    assert code == 2 and "pass --feature-gates=GenericWorkload=true" in err
    code, _, err = run_cli(capsys, "explain", "--pod-group", "fiv", "--snapshot", str(path), GATE)
    assert code == 2
    assert "pod group default/fiv not found: no PodGroup has that name and no pod names it" in err
    assert "default/five" in err  # did you mean


def test_with_topology_placements_the_placement_names_the_constraints_label(
    tmp_path: Path, capsys: Capsys
) -> None:
    group = pod_group("racked", 2) | {
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
        }
    }
    path = cluster(tmp_path, group, *members("racked", 2, "1"))
    report = explain_json(capsys, "--pod-group", "racked", "--snapshot", str(path), GATE)
    assert report["placement"].endswith("the topology constraint on rack is read only with the gate on")
    gates = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    report = explain_json(capsys, "--pod-group", "racked", "--snapshot", str(path), gates)
    assert (
        report["placement"]
        == "one placement per value of the node label rack (the group's topology constraint)"
    )


TREE_GATES = (
    "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
)


def child(name: str, min_count: int) -> Obj:
    group = pod_group(name, min_count)
    group["spec"]["parentCompositePodGroupName"] = "job"
    group["spec"]["workloadRef"] = {"workloadName": "job", "templateName": name}
    return group


def test_a_child_of_a_composite_names_its_tree_and_the_sibling_that_holds_it_back(
    tmp_path: Path, capsys: Capsys
) -> None:
    # `lead` (one 1-cpu pod) fits on any node; `work` (two 2-cpu pods) on none: 1 cpu is free on each.
    job = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "job", "templateName": "job"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    docs = [job, child("lead", 1), child("work", 2), *members("lead", 1, "1"), *members("work", 2, "2")]
    path = cluster(tmp_path, *docs)
    report = explain_json(capsys, "--pod-group", "default/lead", "--snapshot", str(path), TREE_GATES)
    assert (report["verdict"], report["tree"]) == ("Unschedulable", "default/job")
    # the tree's cycle tried `work` first (the children's order is drawn from the seed) and stopped
    assert [(m["pod"], m["outcome"]) for m in report["members"]] == [("default/lead-0", "NotTried")]
    [work] = report["siblings"]
    assert (work["podGroup"], work["verdict"], work["blocking"]) == ("default/work", "Unschedulable", True)
    assert "minCount (2) cannot be satisfied: 0 scheduled" in work["message"]
    assert report["plainWords"][0] == (
        "default/lead is a child of the composite default/job, whose tree is placed whole, all or "
        "nothing: default/work could not place enough of its own pods, so no pod of the tree binds"
    )
    code, out, _ = run_cli(
        capsys, "explain", "--pod-group", "default/lead", "--snapshot", str(path), TREE_GATES
    )
    assert code == 0
    assert "CompositePodGroup tree default/job" in out
    assert "sibling default/work: Unschedulable (holds the tree back)" in out
    # a PodGroup of its own has no tree
    alone = explain_json(capsys, "--pod-group", "default/lead", "--snapshot", str(path), GATE)
    assert (alone["tree"], alone["siblings"]) == (None, [])
