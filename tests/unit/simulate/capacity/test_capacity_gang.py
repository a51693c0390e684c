"""`kubesched capacity` of a gang (GenericWorkload on): how many more nodes of a shape until the whole
gang fits, counted all or nothing; worked out by hand on two 4-cpu nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, pod, run_cli, write_yaml

Capsys = pytest.CaptureFixture[str]
GATE = "--feature-gates=GenericWorkload=true"
GANG_KEYS = {
    "podGroup",
    "minCount",
    "pods",
    "requests",
    "nodeShape",
    "nodesNeeded",
    "limited",
    "reason",
    "nodes",
}


def gang(tmp_path: Path, *, pods: int, min_count: int, cpu: str) -> Path:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    members = [
        pod(f"train-{i}", requests={"cpu": cpu}, schedulingGroup={"podGroupName": "train"})
        for i in range(pods)
    ]
    return write_yaml(tmp_path / "gang.yaml", group, *members)


def files(tmp_path: Path, node_cpu: str = "4") -> tuple[Path, Path]:
    cluster = write_yaml(tmp_path / "cluster.yaml", node("a", cpu="4"), node("b", cpu="4"))
    shape = write_yaml(
        tmp_path / "node.yaml", node("big", cpu=node_cpu, labels={"kubernetes.io/hostname": "big"})
    )
    return cluster, shape


def gangs_json(capsys: Capsys, *argv: str) -> list[Obj]:
    code, out, err = run_cli(capsys, "capacity", *argv, GATE, "--output", "json")
    assert (code, err) == (0, ""), err
    report = json.loads(out)
    assert report["shapes"] == []  # the gang's pods are not counted one by one
    for answer in report["gangs"]:
        assert set(answer) == GANG_KEYS
    gangs: list[Obj] = report["gangs"]
    return gangs


def test_three_3cpu_pods_on_two_4cpu_nodes_need_one_more_node_all_or_nothing(
    tmp_path: Path, capsys: Capsys
) -> None:
    """Two of the three would fit today; counted all or nothing that is not a fit: one more node."""
    cluster, shape = files(tmp_path)
    (answer,) = gangs_json(
        capsys, str(gang(tmp_path, pods=3, min_count=3, cpu="3")), str(cluster), "--node-shape", str(shape)
    )
    assert answer == {
        "podGroup": "PodGroup default/train",
        "minCount": 3,
        "pods": 3,
        "requests": {"cpu": "9"},
        "nodeShape": "Node big",
        "nodesNeeded": 1,
        "limited": False,
        "reason": "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
        "deallocation and deletion of ResourceClaims completed, "
        "pod group preemption: not eligible due to preemptionPolicy=Never.",
        "nodes": {"a": 1, "b": 1, "big-0": 1},
    }


def test_the_search_finds_the_fewest_nodes_past_a_power_of_two(tmp_path: Path, capsys: Capsys) -> None:
    """Seven 3-cpu pods: two on the cluster, five on new nodes; doubling tries 1, 2, 4, 8, then the
    bisection settles on 5 with 4 as the largest that fails."""
    cluster, shape = files(tmp_path)
    (answer,) = gangs_json(
        capsys, str(gang(tmp_path, pods=7, min_count=7, cpu="3")), str(cluster), "--node-shape", str(shape)
    )
    assert (answer["nodesNeeded"], sum(answer["nodes"].values())) == (5, 7)
    assert answer["reason"].startswith("minCount (7) cannot be satisfied: 6 scheduled, 0 remaining")


def test_a_gang_that_fits_already_needs_no_node_and_one_that_never_fits_is_limited(
    tmp_path: Path, capsys: Capsys
) -> None:
    cluster, shape = files(tmp_path, node_cpu="2")
    (answer,) = gangs_json(capsys, str(gang(tmp_path, pods=2, min_count=2, cpu="3")), str(cluster))
    assert (answer["nodesNeeded"], answer["reason"], answer["nodeShape"]) == (0, None, None)
    assert answer["nodes"] == {"a": 1, "b": 1}
    # 3-cpu pods never fit a 2-cpu node: the search stops at --max nodes.
    path = gang(tmp_path, pods=3, min_count=3, cpu="3")
    (answer,) = gangs_json(capsys, str(path), str(cluster), "--node-shape", str(shape), "--max", "3")
    assert (answer["nodesNeeded"], answer["limited"], answer["nodes"]) == (None, True, {})
    assert answer["reason"].startswith("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    out = run_cli(
        capsys, "capacity", str(path), str(cluster), "--node-shape", str(shape), "--max", "3", GATE
    )[1]
    assert "more than --max" in out and "PodGroup default/train (3 pods, minCount 3)" in out


def test_a_gang_needs_the_gate_and_its_pods(tmp_path: Path, capsys: Capsys) -> None:
    cluster, shape = files(tmp_path)
    path = gang(tmp_path, pods=2, min_count=3, cpu="1")
    code, _, err = run_cli(capsys, "capacity", str(path), str(cluster))
    assert code == 2 and "a gang is counted with --feature-gates=GenericWorkload=true" in err
    code, _, err = run_cli(capsys, "capacity", str(path), str(cluster), GATE)
    assert code == 2
    assert "PodGroup default/train: has 2 pod(s) naming it, fewer than its minCount 3" in err
    lone = write_yaml(tmp_path / "lone.yaml", pod("p", requests={"cpu": "1"}))
    code, _, err = run_cli(capsys, "capacity", str(lone), str(cluster), "--node-shape", str(shape), GATE)
    assert code == 2 and "--node-shape" in err
