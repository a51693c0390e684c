"""Same inputs, configuration and --seed give the same report; only ties depend on the seed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import Obj, by_name, node, pod, run_cli, without_timing, write_yaml

Capsys = pytest.CaptureFixture[str]

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "simulate-report.md"
EXAMPLE = REPO / "examples" / "node-label-filter"
TIMING_LINE = re.compile(r'^\s*"(seconds|podsPerSecond)": .*\n', re.MULTILINE)


def tie_heavy_cluster(tmp_path: Path) -> Path:
    """Eight identical nodes and eight identical pods: every pod has several top-scoring nodes."""
    nodes = [node(f"node-{i}", cpu="4", memory="8Gi") for i in range(8)]
    pods = [pod(f"replica-{i}", requests={"cpu": "500m", "memory": "512Mi"}) for i in range(8)]
    return write_yaml(tmp_path / "ties.yaml", *nodes, *pods)


def raw_json(capsys: Capsys, *argv: str) -> str:
    code, out, err = run_cli(capsys, "simulate", *argv, "--output", "json")
    assert (code, err) == (0, "")
    return out


def placement(raw: str) -> dict[str, str]:
    return {p["name"]: p["node"] for p in json.loads(raw)["pods"]}


def test_same_seed_same_bytes(tmp_path: Path, capsys: Capsys) -> None:
    path = str(tie_heavy_cluster(tmp_path))
    for seed in ("0", "7"):
        first = raw_json(capsys, path, "--explain", "--seed", seed)
        second = raw_json(capsys, path, "--explain", "--seed", seed)
        assert TIMING_LINE.sub("", first) == TIMING_LINE.sub("", second)
        # Only the two timing lines were removed.
        assert len(TIMING_LINE.findall(first)) == 2


def test_default_seed_is_zero(tmp_path: Path, capsys: Capsys) -> None:
    path = str(tie_heavy_cluster(tmp_path))
    assert without_timing(raw_json(capsys, path)) == without_timing(raw_json(capsys, path, "--seed", "0"))


def test_different_seeds_break_ties_differently(tmp_path: Path, capsys: Capsys) -> None:
    path = str(tie_heavy_cluster(tmp_path))
    placements = [placement(raw_json(capsys, path, "--seed", str(seed))) for seed in range(5)]
    assert len({tuple(sorted(p.items())) for p in placements}) > 1
    for p in placements:
        # Whatever the seed, the spreading scores put one replica on each node.
        assert sorted(p.values()) == [f"node-{i}" for i in range(8)]


def test_tie_break_node_name_ignores_the_seed(tmp_path: Path, capsys: Capsys) -> None:
    # The nodes listed in reverse name order: the lowest name wins, not the first listed.
    nodes = [node(f"node-{i}", cpu="4", memory="8Gi") for i in reversed(range(4))]
    path = str(write_yaml(tmp_path / "t.yaml", *nodes, pod("p", requests={"cpu": "1"})))
    chosen = {
        placement(raw_json(capsys, path, "--tie-break", "nodeName", "--seed", str(seed)))["p"]
        for seed in range(4)
    }
    assert chosen == {"node-0"}


def test_the_seed_does_not_matter_without_ties(tmp_path: Path, capsys: Capsys) -> None:
    nodes = [node(f"node-{i}", cpu=str(2 + i)) for i in range(4)]
    path = str(write_yaml(tmp_path / "c.yaml", *nodes, pod("p", requests={"cpu": "1"})))
    assert {placement(raw_json(capsys, path, "--seed", str(seed)))["p"] for seed in range(4)} == {"node-3"}


# --------------------------------------------------------------------------- the documented example


def documented_example() -> Obj:
    """The JSON block of docs/simulate-report.md's `## Example` section."""
    section = DOC.read_text().split("## Example", 1)[1]
    block = section.split("```json\n", 1)[1].split("\n```", 1)[0]
    doc: Obj = json.loads(block)
    return doc


def comparable(report: Obj, keys_from: Obj) -> Obj:
    """`report` restricted to the fields the doc shows, without timing and PostFilter messages.

    The message's ` preemption: ...` suffix belongs to DefaultPreemption, whose wording the doc may
    not show yet; everything else in the example must match the real run.
    """
    out: Obj = {"pods": [], "nodes": report["nodes"], "summary": dict(report["summary"])}
    pod_keys = set(keys_from["pods"][0])
    for p in report["pods"]:
        q = {k: v for k, v in p.items() if k in pod_keys}
        if q["message"]:
            q["message"] = q["message"].split(" preemption: ")[0]
        out["pods"].append(q)
    for key in ("seconds", "podsPerSecond"):
        out["summary"].pop(key)
    return out


def test_the_documented_example_is_what_simulate_prints(capsys: Capsys) -> None:
    doc = documented_example()
    config = str(EXAMPLE / "scheduler-config.yaml")
    report = json.loads(raw_json(capsys, str(EXAMPLE), "--config", config, "--explain"))
    # The doc leaves hello-2 out ("it looks like hello-1").
    report["pods"] = [p for p in report["pods"] if p["name"] != "hello-2"]
    assert comparable(report, doc) == comparable(doc, doc)


def test_seed_1_picks_the_other_node_as_documented(capsys: Capsys) -> None:
    config = str(EXAMPLE / "scheduler-config.yaml")
    seed0 = by_name(json.loads(raw_json(capsys, str(EXAMPLE), "--config", config)))
    seed1 = by_name(json.loads(raw_json(capsys, str(EXAMPLE), "--config", config, "--seed", "1")))
    assert (seed0["hello-1"]["node"], seed1["hello-1"]["node"]) == ("node-c", "node-a")
