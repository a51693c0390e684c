"""`kubesched simulate` with no PATH: the bundled demo cluster, run as a user runs it.

The demo is generated, so these are invariants rather than exact numbers: whatever the generator
draws, nothing may be over-committed, the labelled nodes stay free of `nodelabelfilter` pods, and
the planted bad pods show up as documented.
"""

from __future__ import annotations

import filecmp
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.quantity import parse_quantity
from kubesched.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "demo"
BUNDLED = REPO / "src" / "kubesched" / "simulate" / "demo"

Obj = dict[str, Any]


def kubesched(*argv: str, stderr: str = "") -> str:
    """Run kubesched; it must succeed and print exactly `stderr` there."""
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, stderr), done.stderr
    return done.stdout


def items(path: Path) -> list[Obj]:
    """The objects of a demo file: one list or a stream of documents."""
    out: list[Obj] = []
    for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
        if doc is None:
            continue
        out.extend(doc["items"] if doc.get("kind", "").endswith("List") else [doc])
    return out


@pytest.fixture(scope="module")
def report() -> Obj:
    # bare `simulate` is the demo, and says so on stderr
    note = f"kubesched: note: no PATH given: using the bundled demo cluster ({BUNDLED / 'cluster'})\n"
    parsed: Obj = json.loads(kubesched("simulate", "--output", "json", stderr=note))
    return parsed


@pytest.fixture(scope="module")
def demo_nodes() -> dict[str, Obj]:
    return {n["metadata"]["name"]: n for n in items(EXAMPLE / "cluster" / "nodes.yaml")}


@pytest.fixture(scope="module")
def pending() -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in items(EXAMPLE / "cluster" / "pending-pods.yaml")}


@pytest.fixture(scope="module")
def running() -> list[Obj]:
    return items(EXAMPLE / "cluster" / "running-pods.yaml")


def test_the_bundled_demo_is_the_example_demo() -> None:
    """README: without PATH, simulate uses the same files as examples/demo/."""
    for name in (
        "scheduler-config.yaml",
        *(f"cluster/{p.name}" for p in (EXAMPLE / "cluster").glob("*.yaml")),
    ):
        assert filecmp.cmp(EXAMPLE / name, BUNDLED / name, shallow=False), name


def test_most_pods_are_scheduled(report: Obj, demo_nodes: dict[str, Obj]) -> None:
    summary = report["summary"]
    assert summary["scheduled"] >= 250
    assert summary["nodes"] == len(demo_nodes) == len(report["nodes"])
    assert (
        summary["scheduled"]
        + summary["unschedulable"]
        + summary["errors"]
        + summary["gated"]
        + summary["waiting"]
        == summary["pods"]
    )


def test_every_pending_pod_is_reported(report: Obj, pending: dict[str, Obj]) -> None:
    assert sorted(p["name"] for p in report["pods"]) == sorted(pending)
    for p in report["pods"]:
        assert (p["node"] is None) == (p["result"] != "Scheduled"), p["name"]
        assert (p["message"] is None) == (p["result"] == "Scheduled"), p["name"]
        assert (p["filter"], p["scores"]) == ({}, {}), p["name"]  # no --explain
    assert report["summary"]["pods"] + report["summary"]["ignored"] == len(pending)


def test_the_bad_quantity_pod_is_an_error(report: Obj) -> None:
    errors = [p for p in report["pods"] if p["result"] == "Error"]
    assert [p["name"].startswith("bad-quantity-") for p in errors] == [True]
    assert errors[0]["message"] == 'spec.containers[0].resources.requests.memory: invalid quantity "12XB"'
    assert (errors[0]["node"], errors[0]["attempts"]) == (None, 0)


def test_other_schedulers_pods_are_ignored(report: Obj, pending: dict[str, Obj]) -> None:
    theirs = {n for n, p in pending.items() if p["spec"].get("schedulerName") == "some-other-scheduler"}
    assert theirs
    for p in report["pods"]:
        assert (p["name"] in theirs) == (p["result"] == "Ignored"), p["name"]
        if p["result"] == "Ignored":
            assert p["message"] == 'no profile named "some-other-scheduler"'
    # Listed after the pods of the configured profiles.
    results = [p["result"] for p in report["pods"]]
    assert results[-len(theirs) :] == ["Ignored"] * len(theirs)


def test_gated_pods_stay_gated(report: Obj, pending: dict[str, Obj]) -> None:
    gated = {n: p["spec"]["schedulingGates"] for n, p in pending.items() if p["spec"].get("schedulingGates")}
    assert gated
    for p in report["pods"]:
        assert (p["name"] in gated) == (p["result"] == "Gated"), p["name"]
        if p["name"] in gated:
            names = " ".join(g["name"] for g in gated[p["name"]])
            assert p["message"] == f"waiting for scheduling gates: [{names}]"


def test_nodelabelfilter_pods_avoid_nodes_labelled_hello(report: Obj, demo_nodes: dict[str, Obj]) -> None:
    hello = {n for n, node in demo_nodes.items() if node["metadata"].get("labels", {}).get("node") == "hello"}
    assert hello
    theirs = [p for p in report["pods"] if p["schedulerName"] == "nodelabelfilter"]
    assert theirs and all(p["result"] == "Scheduled" for p in theirs)
    assert not [p["name"] for p in theirs if p["node"] in hello]


def test_no_node_is_over_committed(report: Obj) -> None:
    for n in report["nodes"]:
        for resource, used in n["requested"].items():
            assert parse_quantity(used) <= parse_quantity(n["allocatable"][resource]), (n["name"], resource)
        assert n["pods"] <= int(n["allocatable"]["pods"]), n["name"]


def test_node_pod_counts_add_up(report: Obj, running: list[Obj], demo_nodes: dict[str, Obj]) -> None:
    assert sum(n["pods"] for n in report["nodes"]) == len(running) + report["summary"]["scheduled"]
    placed = {p["name"]: p["node"] for p in report["pods"] if p["result"] == "Scheduled"}
    already = [p["spec"]["nodeName"] for p in running]
    for n in report["nodes"]:
        assert n["pods"] == already.count(n["name"]) + list(placed.values()).count(n["name"]), n["name"]
    # Nothing new lands on a cordoned node.
    cordoned = [name for name, node in demo_nodes.items() if node.get("spec", {}).get("unschedulable")]
    assert cordoned
    assert not [p for p, node in placed.items() if node in cordoned]


def test_unschedulable_pods_carry_the_failed_scheduling_message(
    report: Obj, demo_nodes: dict[str, Obj]
) -> None:
    stuck = [p for p in report["pods"] if p["result"] == "Unschedulable"]
    assert stuck
    for p in stuck:
        assert p["message"].startswith(f"0/{len(demo_nodes)} nodes are available: "), p["message"]
        assert p["node"] is None and p["attempts"] >= 1


def test_table_output_ends_with_the_summary_line(report: Obj, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 0  # in-process: one interpreter start is enough for this file
    lines = capsys.readouterr().out.splitlines()
    s = report["summary"]
    summary = re.compile(
        rf"{s['scheduled']}/{s['pods']} pods scheduled on {s['nodes']} nodes in \d+\.\d\ds "
        rf"\([\d.e+]+ pods/s\); {s['unschedulable']} unschedulable, {s['errors']} error, "
        rf"{s['gated']} gated, {s['waiting']} waiting, {s['ignored']} ignored \(other schedulers\)"
    )
    assert summary.fullmatch(lines[-1]), lines[-1]
    assert any("Node utilization" in line for line in lines)


def test_explain_a_pending_pod_of_the_demo(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README tour's `kubesched explain` on the demo snapshot: the 300Gi pod fits no node; the
    GPU nodes have the memory but a taint it does not tolerate, the workers lack the memory."""
    monkeypatch.setenv("COLUMNS", "160")
    argv = ["explain", "default/huge-memory-vv896lhpg6-7l6f7", "--snapshot", str(EXAMPLE / "cluster")]
    argv += ["--config", str(EXAMPLE / "scheduler-config.yaml")]
    assert main([*argv, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["verdict"], report["nodes"], report["rejectedNodes"]) == ("Unschedulable", 60, 60)
    nearest = report["nearestNodes"]
    assert [n["plugins"] for n in nearest[:3]] == [["TaintToleration"]] * 3
    assert nearest[0]["missing"] == ["untolerated taint nvidia.com/gpu=present:NoSchedule"]
    assert any(m.startswith("needs 300Gi memory, the node has") for n in nearest for m in n["missing"])
    assert report["preemption"]["helps"] is False
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "Verdict: Unschedulable" in table and "Nearest nodes, and what is missing on each" in table
