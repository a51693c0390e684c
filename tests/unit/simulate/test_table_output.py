"""`kubesched simulate` without --output: one line per pod, node utilization, a summary line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from simulate_helpers import node, pod, run_cli, write_yaml
from test_report_contract import mixed_cluster

from kubesched.simulate.table import REASON_WIDTH

Capsys = pytest.CaptureFixture[str]


def table(capsys: Capsys, *argv: str) -> list[str]:
    code, out, err = run_cli(capsys, "simulate", *argv)
    assert (code, err) == (0, "")
    return out.splitlines()


def cells(lines: list[str], first: str) -> list[str]:
    """The cells of the one table row whose first cell is `first`."""
    rows = [[c.strip() for c in line.strip()[1:-1].split("│")] for line in lines if line.startswith("│")]
    matching = [r for r in rows if r[0] == first]
    assert len(matching) == 1, (first, matching)
    return matching[0]


def test_one_line_per_pod_with_result_node_and_reason(tmp_path: Path, capsys: Capsys) -> None:
    lines = table(capsys, str(mixed_cluster(tmp_path)))
    assert cells(lines, "default/small") == ["default/small", "default-scheduler", "Scheduled", "n1", "1", ""]
    assert cells(lines, "ns1/bad")[2:] == [
        "Error",
        "",
        "0",
        'spec.containers[0].resources.requests.memory: invalid quantity "12XB"',
    ]
    # Square brackets in a message are text, not console markup.
    assert cells(lines, "default/gated")[2:] == ["Gated", "", "0", "waiting for scheduling gates: [a b]"]
    assert cells(lines, "default/other")[1:] == ["other", "Ignored", "", "0", 'no profile named "other"']
    # Long FailedScheduling messages are cut to REASON_WIDTH characters.
    big = cells(lines, "default/big")
    assert big[2:4] == ["Unschedulable", ""]
    assert len(big[5]) == REASON_WIDTH and big[5].endswith("...")
    assert big[5].startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    )
    # Running pods are not listed.
    assert not [line for line in lines if "kube-system/sys" in line or "other-running" in line]


def test_node_utilization_and_summary_line(tmp_path: Path, capsys: Capsys) -> None:
    lines = table(capsys, str(mixed_cluster(tmp_path)))
    assert cells(lines, "n1") == ["n1", "2/10", "1.5/2 75%", "1280Mi/4Gi 31%"]
    assert cells(lines, "n2") == ["n2", "1/10", "0.25/8 3%", "64Mi/16Gi 0%"]
    assert cells(lines, "n3") == ["n3", "0/10", "0/8 0%", "0/16Gi 0%"]
    summary = re.compile(
        r"1/6 pods scheduled on 3 nodes in \d+\.\d\ds \([\d.e+]+ pods/s\); "
        r"3 unschedulable, 1 error, 1 gated, 0 waiting, 1 ignored \(other schedulers\)"
    )
    assert summary.fullmatch(lines[-1]), lines[-1]


def test_extended_resources_get_a_column(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("gpu-1", extra={"nvidia.com/gpu": "4"}),
        node("cpu-1"),
        pod("trainer", requests={"cpu": "1", "nvidia.com/gpu": "1"}),
    )
    lines = table(capsys, str(path))
    header = next(line for line in lines if "NODE" in line and "PODS" in line)
    assert "NVIDIA.COM/GPU" in header
    assert cells(lines, "gpu-1")[-1] == "1/4 25%"
    assert cells(lines, "cpu-1")[-1] == "-"
