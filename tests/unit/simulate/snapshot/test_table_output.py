"""`kubesched simulate` without --output: one line per pod, node utilization, a summary line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, wide_columns, write_yaml
from tests.unit.simulate.snapshot.test_report_contract import NOT_HELPFUL, UNTOLERATED, mixed_cluster

Capsys = pytest.CaptureFixture[str]
__all__ = ["wide_columns"]  # autouse: tables 200 columns wide


def table(capsys: Capsys, *argv: str) -> list[str]:
    code, out, err = run_cli(capsys, "simulate", *argv)
    assert (code, err) == (0, "")
    return out.splitlines()


def rows(lines: list[str]) -> list[list[str]]:
    """Table rows, with the lines of a wrapped row joined cell by cell."""
    out: list[list[str]] = []
    for line in lines:
        if not line.startswith("│"):
            continue
        row = [c.strip() for c in line.strip()[1:-1].split("│")]
        if out and row[0] == "" and len(out[-1]) == len(row):
            out[-1] = [" ".join(filter(None, (a, b))) for a, b in zip(out[-1], row, strict=True)]
        else:
            out.append(row)
    return out


def cells(lines: list[str], first: str) -> list[str]:
    """The cells of the one table row whose first cell is `first`."""
    matching = [r for r in rows(lines) if r[0] == first]
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
    # Running pods are not listed.
    assert not [line for line in lines if "kube-system/sys" in line or "other-running" in line]


def test_messages_are_whole_and_wrap_to_columns_when_piped(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old table cut messages at 110 characters; now they wrap within `COLUMNS`. (The summary
    line, last, stays one line whatever the width.)"""
    monkeypatch.setenv("COLUMNS", "100")
    lines = table(capsys, str(mixed_cluster(tmp_path)))
    assert max(len(line) for line in lines[:-1]) <= 100
    assert lines[-1].startswith("1/6 pods scheduled") and lines[-1].endswith("(other schedulers)")
    big = cells(lines, "default/big")
    assert big[2:5] == ["Unschedulable", "", "4"]
    assert big[5] == (
        f"0/3 nodes are available: 1 Insufficient cpu, 2 {UNTOLERATED}."
        f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
    )
    monkeypatch.setenv("COLUMNS", "160")
    wide = table(capsys, str(mixed_cluster(tmp_path)))
    assert max(len(line) for line in wide) > 100
    assert cells(wide, "default/big")[5] == big[5]


def test_node_utilization_in_one_unit_per_resource_and_summary_line(tmp_path: Path, capsys: Capsys) -> None:
    lines = table(capsys, str(mixed_cluster(tmp_path)))
    header = next(line for line in lines if "NODE" in line and "PODS" in line)
    assert "CPU (cores)" in header and "MEMORY (GiB)" in header
    # n1: 1280Mi of 4Gi; both sides in GiB, not "1280Mi/4Gi".
    assert cells(lines, "n1") == ["n1", "2/10", "1.5/2 75%", "1.25/4 31%"]
    assert cells(lines, "n2") == ["n2", "1/10", "0.25/8 3%", "0.06/16 0%"]
    assert cells(lines, "n3") == ["n3", "0/10", "0/8 0%", "0/16 0%"]
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


def test_pods_filter_pod_selection_and_no_nodes(tmp_path: Path, capsys: Capsys) -> None:
    path = str(mixed_cluster(tmp_path))
    listed = {r[0] for r in rows(table(capsys, path, "--pods", "unschedulable", "--no-nodes"))}
    assert listed == {"default/big", "default/medium", "default/huge", "ns1/bad", "default/gated"}
    scheduled = table(capsys, path, "--pods", "scheduled")
    assert [r[0] for r in rows(scheduled) if "/" in r[0]] == ["default/small"]
    assert any(r[0] == "n1" for r in rows(scheduled))  # the node table is still there
    one = table(capsys, path, "--pod", "default/medium", "--no-nodes")
    assert [r[0] for r in rows(one)] == ["default/medium"]
    # The summary still counts every pod.
    assert one[-1].startswith("1/6 pods scheduled on 3 nodes")


def test_unknown_pod_or_selection_is_one_line_with_a_suggestion(tmp_path: Path, capsys: Capsys) -> None:
    path = str(mixed_cluster(tmp_path))
    code, out, err = run_cli(capsys, "simulate", path, "--pod", "default/meduim")
    assert (code, out) == (2, "")
    assert err == (
        "kubesched: --pod: no pod or workload 'default/meduim' in the report "
        '(did you mean "default/medium"?)\n'
    )
    # A bare name is a pod of the default namespace (before: refused with a suggestion).
    one = table(capsys, path, "--pod", "medium", "--no-nodes")
    assert [r[0] for r in rows(one)] == ["default/medium"]
