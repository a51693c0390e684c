"""Answers at workload scale: `--explain` tells identical pods of one workload once, with their
count; every pod knows its workload in the JSON; `--pod` takes every name the report prints, the
pods controllers made and the workloads themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, simulate_json, wide_columns, write_yaml
from tests.unit.simulate.test_workloads import deployment, stateful_set

from kubesched.simulate.snapshot.run import PER_NODE_MAX_NODES

Capsys = pytest.CaptureFixture[str]
__all__ = ["wide_columns"]  # autouse: tables 200 columns wide


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """Two 2-cpu nodes; 40 replicas of 4 cpu (none fit), 2 of 1 cpu (fit), a bare pod too big."""
    return write_yaml(
        tmp_path / "cluster.yaml",
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        deployment("big", replicas=40, cpu="4"),
        stateful_set("db", replicas=2, cpu="1"),
        pod("lonely", requests={"cpu": "3"}),
    )


def test_explain_tells_identical_pods_of_a_workload_once(cluster: Path, capsys: Capsys) -> None:
    code, out, _ = run_cli(capsys, "simulate", str(cluster), "--explain", "--no-nodes")
    assert code == 0
    heads = [line for line in out.splitlines() if " Unschedulable after " in line]
    assert len(heads) == 2, heads  # before: 41 blocks, one per pod
    lonely, big = heads
    rejected = r"Unschedulable after [\d-]+ attempt\(s\): 2 node\(s\) rejected"
    assert re.fullmatch(rf"default/lonely is {rejected}", lonely)
    assert re.fullmatch(
        rf"40 pods of Deployment default/big \((big-\w+-\w+, ){{2}}big-\w+-\w+, \.\.\.\) are {rejected}",
        big,
    ), big


def test_every_pod_names_its_workload(cluster: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(cluster))
    workloads = {p["name"]: p["workload"] for p in report["pods"]}
    assert workloads["db-0"] == workloads["db-1"] == "StatefulSet default/db"
    assert workloads["lonely"] is None
    assert {w for name, w in workloads.items() if name.startswith("big-")} == {"Deployment default/big"}


def test_pod_takes_every_name_the_report_prints(cluster: Path, capsys: Capsys) -> None:
    def picked(*names: str) -> list[str]:
        argv = [arg for name in names for arg in ("--pod", name)]
        report = simulate_json(capsys, str(cluster), *argv)
        return sorted(p["name"] for p in report["pods"])

    # controller-made pods, by namespace/name and by name (before: "no pending pod ... in the input")
    assert picked("default/db-1") == picked("db-1") == ["db-1"]
    # a workload as the table prints it, or as namespace/name
    assert picked("StatefulSet default/db") == picked("default/db") == ["db-0", "db-1"]
    assert len(picked("Deployment default/big")) == 40
    code, out, err = run_cli(capsys, "simulate", str(cluster), "--pod", "StatefulSet default/dv")
    assert (code, out) == (2, "")
    assert err == (
        "kubesched: --pod: no pod or workload 'StatefulSet default/dv' in the report "
        '(did you mean "StatefulSet default/db"?)\n'
    )


def test_pod_naming_a_workload_keeps_its_pods_detail_on_big_clusters(tmp_path: Path, capsys: Capsys) -> None:
    """Past PER_NODE_MAX_NODES only the pods `--pod` picks keep every node's verdict; before, a
    workload's name (or a controller-made pod's bare name) picked its pods for the listing only."""
    count = PER_NODE_MAX_NODES + 5
    path = write_yaml(
        tmp_path / "big.yaml",
        *(node(f"n{i:03}", cpu="2") for i in range(count)),
        deployment("big", replicas=3, cpu="4"),
        stateful_set("db", replicas=2, cpu="4"),
        pod("lonely", requests={"cpu": "3"}),
    )

    def filtered(*names: str) -> dict[str, int]:
        argv = [arg for name in names for arg in ("--pod", name)]
        report = simulate_json(capsys, str(path), "--explain", "--no-nodes", *argv)
        return {p["name"]: len(p["filter"]) for p in report["pods"]}

    for name in ("Deployment default/big", "deployment default/big", "default/big"):
        detail = filtered(name)
        assert len(detail) == 3 and set(detail.values()) == {count}, (name, detail)
    # OrderedReady: db-1 waits for db-0, which fits nowhere
    assert filtered("db-0") == filtered("StatefulSet default/db") == {"db-0": count}
    # unpicked pods keep the summary only
    everyone = filtered()
    assert set(everyone.values()) == {0} and len(everyone) == 5
