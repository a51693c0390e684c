"""`simulate --explain`: the PreFilter rejection, per-reason summaries, bounded per-node detail, weights."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import (
    by_name,
    node,
    pod,
    run_cli,
    simulate_json,
    taint,
    wide_columns,
    write_yaml,
)
from tests.unit.simulate.snapshot.test_report_contract import UNTOLERATED, mixed_cluster, scoring_cluster
from tests.unit.simulate.snapshot.test_table_output import rows, table

from kubesched.simulate.snapshot.run import PER_NODE_MAX_NODES

Capsys = pytest.CaptureFixture[str]
__all__ = ["wide_columns"]  # autouse: tables 200 columns wide

MISSING_CLAIM = 'persistentvolumeclaim "data" not found'


def claim_cluster(tmp_path: Path) -> Path:
    """`needs-claim` mounts a PVC that does not exist: VolumeRestrictions' PreFilter (the first to
    look the claim up, as upstream's) refuses it."""
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    return write_yaml(
        tmp_path / "claims.yaml", node("n1"), node("n2"), pod("needs-claim", volumes=volume), pod("fine")
    )


def test_pre_filter_rejection_is_in_the_report(tmp_path: Path, capsys: Capsys) -> None:
    """The old report left `filter` empty and said nothing of who refused the pod."""
    pods = by_name(simulate_json(capsys, str(claim_cluster(tmp_path)), "--explain"))
    refused = pods["needs-claim"]
    assert refused["result"] == "Unschedulable"
    assert refused["preFilter"] == {
        "plugin": "VolumeRestrictions",
        "code": "UnschedulableAndUnresolvable",
        "reasons": [MISSING_CLAIM],
    }
    assert refused["filter"] == {}  # no node was filtered
    assert refused["message"].startswith(f"0/2 nodes are available: {MISSING_CLAIM}.")
    assert pods["fine"]["preFilter"] is None
    # Without --explain too: it is part of what happened, not of the per-node detail.
    plain = by_name(simulate_json(capsys, str(claim_cluster(tmp_path))))
    assert plain["needs-claim"]["preFilter"]["plugin"] == "VolumeRestrictions"
    assert plain["needs-claim"]["explanation"] is None


def test_pre_filter_rejection_is_in_the_table(tmp_path: Path, capsys: Capsys) -> None:
    text = "\n".join(table(capsys, str(claim_cluster(tmp_path)), "--explain", "--no-nodes"))
    assert "PreFilter plugin VolumeRestrictions rejected the pod before any node was filtered" in text
    assert f"(UnschedulableAndUnresolvable): {MISSING_CLAIM}" in " ".join(text.split())


def test_explanation_groups_rejections_by_plugin_and_reason(tmp_path: Path, capsys: Capsys) -> None:
    pods = by_name(simulate_json(capsys, str(mixed_cluster(tmp_path)), "--explain"))
    tainted = {"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable", "reason": UNTOLERATED}
    huge = pods["huge"]["explanation"]
    assert huge["rejectedNodes"] == 3 and huge["scoredNodes"] == 0 and huge["topNodes"] == []
    fit = {"plugin": "NodeResourcesFit", "code": "UnschedulableAndUnresolvable", "count": 1, "nodes": ["n1"]}
    # Most nodes first; one node short of two resources counts under each reason.
    assert huge["rejections"] == [
        tainted | {"count": 2, "nodes": ["n2", "n3"]},
        fit | {"reason": "Insufficient cpu"},
        fit | {"reason": "Insufficient memory"},
    ]


def test_table_explains_unschedulable_pods_and_scores_on_request(tmp_path: Path, capsys: Capsys) -> None:
    lines = table(capsys, str(mixed_cluster(tmp_path)), "--explain", "--no-nodes")
    text = "\n".join(lines)
    assert "default/huge is Unschedulable after 4 attempt(s): 3 node(s) rejected" in text
    assert ["TaintToleration", "2", f"{UNTOLERATED} (unresolvable)", "n2, n3"] in [
        [c.strip() for c in line.split("│")] for line in lines
    ]
    assert "default/small went to" not in text  # scheduled pods only with --scores

    scored = table(capsys, str(scoring_cluster(tmp_path)), "--explain", "--scores", "--no-nodes")
    score_rows = {r[0]: r[1:] for r in _plain_rows(scored)}
    # web-1's table: columns a, b, c (by total); rows carry each plugin's weight.
    assert "default/web-1 went to a: top of 3 scored nodes, 1 filtered out" in "\n".join(scored)
    assert score_rows["TaintToleration (3)"] == ["100", "50", "0"]
    assert score_rows["NodeAffinity (2)"] == ["100", "66", "100"]
    assert score_rows["TOTAL (sum of score * weight)"] == ["654", "435", "330"]  # as in scores


def _plain_rows(lines: list[str]) -> list[list[str]]:
    """Rows of the edge-less explanation tables (first score table only: web-1's)."""
    out: list[list[str]] = []
    for line in lines:
        if "│" in line and not line.startswith("│"):
            out.append([c.strip() for c in line.split("│")])
        elif out and "went to" in line:
            break
    return out


def test_json_reports_the_profile_score_weights(tmp_path: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(scoring_cluster(tmp_path)))
    (profile,) = report["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    weights = profile["scoreWeights"]
    assert (weights["TaintToleration"], weights["NodeAffinity"], weights["NodeResourcesFit"]) == (3, 2, 1)
    # ... and they are the ones `total` was computed with.
    web = by_name(simulate_json(capsys, str(scoring_cluster(tmp_path)), "--explain"))["web-1"]
    for scored in web["scores"].values():
        assert scored["total"] == sum(weights[p] * s for p, s in scored["plugins"].items())


def big_cluster(tmp_path: Path) -> Path:
    """More nodes than PER_NODE_MAX_NODES, all tainted but 2: `stuck` fits none, `ok` fits 2."""
    count = PER_NODE_MAX_NODES + 20
    nodes = [node(f"n{i:03}", taints=[taint("team", "NoSchedule", "x")]) for i in range(count - 2)]
    nodes += [node("free-a", cpu="1"), node("free-b", cpu="1")]
    return write_yaml(
        tmp_path / "big.yaml",
        *nodes,
        pod("stuck", requests={"cpu": "2"}),
        pod("ok", requests={"cpu": "500m"}),
    )


def test_big_runs_keep_summaries_not_every_node(tmp_path: Path, capsys: Capsys) -> None:
    path = str(big_cluster(tmp_path))
    count = PER_NODE_MAX_NODES + 20
    stuck = by_name(simulate_json(capsys, path, "--explain"))["stuck"]
    assert stuck["filter"] == {}
    tainted, short = stuck["explanation"]["rejections"]
    assert (tainted["plugin"], tainted["count"]) == ("TaintToleration", count - 2)
    assert tainted["nodes"] == [f"n{i:03}" for i in range(10)]  # capped, first names in order
    assert (short["reason"], short["count"], short["nodes"]) == ("Insufficient cpu", 2, ["free-a", "free-b"])
    # --pod asks for one pod's full detail; --per-node for everyone's.
    detailed = by_name(simulate_json(capsys, path, "--explain", "--pod", "default/stuck"))
    assert len(detailed["stuck"]["filter"]) == count
    assert set(detailed) == {"stuck"}
    everyone = by_name(simulate_json(capsys, path, "--explain", "--per-node"))
    assert len(everyone["stuck"]["filter"]) == count
    assert len(everyone["ok"]["filter"]) == count - 2 and set(everyone["ok"]["scores"]) == {
        "free-a",
        "free-b",
    }


def test_pods_filter_applies_to_json(tmp_path: Path, capsys: Capsys) -> None:
    report = simulate_json(capsys, str(mixed_cluster(tmp_path)), "--pods", "scheduled", "--no-nodes")
    assert [p["name"] for p in report["pods"]] == ["small"]
    assert report["nodes"] == []
    assert report["summary"]["pods"] == 6


def test_unknown_pods_value_suggests_the_closest(tmp_path: Path, capsys: Capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "simulate", str(mixed_cluster(tmp_path)), "--pods", "unschedulabel")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'unschedulabel'" in err and 'did you mean "unschedulable"?' in err
    assert rows  # the helper module is shared
