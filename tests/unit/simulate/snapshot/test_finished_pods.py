"""Finished pods (phase Succeeded or Failed) hold nothing, as in live mode and kube-scheduler.

kube-scheduler's informer lists pods with `status.phase!=Succeeded,status.phase!=Failed`, so a
completed Job pod still naming its node neither uses cpu there nor can be a preemption victim, and a
finished pod without a node is never scheduled. Snapshots of real clusters are full of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.simulate.simulate_helpers import by_name, node, pod, simulate_json, write_yaml

Obj = dict[str, Any]


def _finished(name: str, phase: str, node_name: str | None, cpu: str = "3") -> Obj:
    out = pod(name, requests={"cpu": cpu})
    if node_name:
        out["spec"]["nodeName"] = node_name
    out["status"] = {"phase": phase}
    return out


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pod_frees_its_node(tmp_path: Path, capsys: pytest.CaptureFixture[str], phase: str) -> None:
    # Two equal nodes; the finished 3-cpu pod on "a" must not keep the new 3-cpu pod off it.
    files = write_yaml(
        tmp_path / "objects.yaml",
        node("a", cpu="4"),
        _finished("done", phase, "a"),
        pod("new", requests={"cpu": "3"}, nodeSelector={"kubernetes.io/hostname": "a"}),
    )
    report = simulate_json(capsys, str(files))
    pods = by_name(report)
    assert pods["new"]["result"] == "Scheduled"
    assert pods["new"]["node"] == "a"
    assert "done" not in pods  # neither pending nor running
    usage = {n["name"]: n for n in report["nodes"]}
    assert usage["a"]["pods"] == 1
    assert usage["a"]["requested"]["cpu"] == "3"


def test_finished_pods_change_no_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Without the fix "b" looks emptier (LeastAllocated) and wins; with it both are empty and the
    # tie-break decides, so compare the scores rather than the node.
    files = write_yaml(
        tmp_path / "objects.yaml",
        node("a"),
        node("b"),
        _finished("job-1", "Succeeded", "a", cpu="2"),
        pod("new", requests={"cpu": "1", "memory": "1Gi"}),
    )
    report = simulate_json(capsys, str(files), "--explain")
    scores = by_name(report)["new"]["scores"]
    assert scores["a"] == scores["b"]


def test_finished_pod_is_no_preemption_victim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = write_yaml(
        tmp_path / "objects.yaml",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        node("a", cpu="4"),
        _finished("done", "Failed", "a"),
        pod("high", requests={"cpu": "3"}, priorityClassName="high"),
    )
    pods = by_name(simulate_json(capsys, str(files)))
    assert pods["high"]["result"] == "Scheduled"
    assert pods["high"]["victims"] == []


def test_finished_pending_pod_is_not_scheduled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = write_yaml(tmp_path / "objects.yaml", node("a"), _finished("failed-early", "Failed", None))
    report = simulate_json(capsys, str(files))
    assert report["pods"] == []
    assert report["summary"]["pods"] == 0
