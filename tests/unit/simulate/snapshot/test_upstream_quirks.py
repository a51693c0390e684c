"""Whole-scheduler behaviours of kube-scheduler v1.37.2 that no single plugin table shows.

Each case was checked against the binary (tests/differential runs the same kind of scenario on a real
API server); each assertion fails on kubesched's behaviour before the fix that matched it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.simulate.simulate_helpers import by_name, node, pod, simulate_json, write_yaml

Obj = dict[str, Any]


def _priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _port_pod(name: str, cpu: str, priority_class: str, node_name: str | None = None) -> Obj:
    out = pod(name, requests={"cpu": cpu}, priorityClassName=priority_class)
    out["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    if node_name:
        out["spec"]["nodeName"] = node_name
    return out


def test_preemption_frees_a_host_port_shared_by_two_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream keeps a node's host ports as a set: evicting one of two pods bound to port 80 frees
    it in the dry run, so the preemptor gets the node (its Filter then sees the port free too)."""
    files = write_yaml(
        tmp_path / "objects.yaml",
        _priority_class("low", 0),
        _priority_class("mid", 100),
        _priority_class("top", 1000),
        node("n", cpu="4"),
        _port_pod("keeper", "1", "top", "n"),
        _port_pod("victim", "3", "low", "n"),
        _port_pod("preemptor", "2", "mid"),
    )
    pods = by_name(simulate_json(capsys, str(files)))
    assert pods["preemptor"]["result"] == "Scheduled"
    assert pods["preemptor"]["node"] == "n"
    assert pods["preemptor"]["victims"] == ["default/victim"]
