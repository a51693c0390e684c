"""`kubesched explain` on file snapshots: verdict, reasons, nearest nodes, preemption, scores, manifests.

The same command runs against a real API server in tests/integration/test_explain_live.py; here the
cluster comes from files (`--snapshot`), so each expected word can be worked out from the scenario.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.simulate.simulate_helpers import (
    node,
    pod,
    run_cli,
    taint,
    wide_columns,
    write_config,
    write_yaml,
)

from kubesched.config import default_config
from kubesched.config.loader import decode_config
from kubesched.plugins import default_registry
from kubesched.simulate.explain.run import kinds_read

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]
__all__ = ["wide_columns"]  # autouse: tables 200 columns wide

ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def cluster(tmp_path: Path) -> Path:
    """Five nodes, each kept from `want` (2 cpu, host port 8080, nodeSelector disk=ssd, anti-affine
    to app=db) by something different:

    * short: 3 cpu with 1.5 cpu used by `filler` -> needs 500m more cpu (only obstacle: nearest);
    * tainted: an untolerated dedicated=gpu:NoSchedule taint;
    * cordoned: spec.unschedulable;
    * busy-port: runs `web` on host port 8080, and lacks the disk=ssd label;
    * db-host: runs an app=db pod (anti-affinity) and is too small in all (1 cpu).
    """
    ssd = {"disk": "ssd"}
    port = {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 8080, "hostPort": 8080}]}]}
    want = pod("want", requests={"cpu": "2"}, nodeSelector=ssd, affinity=ANTI)
    want["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    return write_yaml(
        tmp_path / "cluster.yaml",
        node("short", cpu="3", labels=ssd),
        node("tainted", labels=ssd, taints=[taint("dedicated", "NoSchedule", "gpu")]),
        node("cordoned", labels=ssd, unschedulable=True),
        node("busy-port"),
        node("db-host", cpu="1", labels=ssd),
        pod("filler", nodeName="short", requests={"cpu": "1500m"}),
        pod("web", nodeName="busy-port", **port),
        pod("db", nodeName="db-host") | {"metadata": {"name": "db", "labels": {"app": "db"}}},
        want,
        pod("other-pending", requests={"cpu": "3"}),
    )


def explain_json(capsys: Capsys, *argv: str) -> Obj:
    code, out, err = run_cli(capsys, "explain", *argv, "-o", "json")
    assert (code, err) == (0, ""), err
    report: Obj = json.loads(out)
    return report


def test_unschedulable_pod_reasons_and_nearest_nodes(tmp_path: Path, capsys: Capsys) -> None:
    report = explain_json(capsys, "default/want", "--snapshot", str(cluster(tmp_path)))
    assert (report["pod"], report["schedulerName"], report["nodes"]) == (
        "default/want",
        "default-scheduler",
        5,
    )
    assert (report["verdict"], report["node"], report["runningOn"]) == ("Unschedulable", None, None)
    assert report["message"].startswith("0/5 nodes are available: ")
    assert report["rejectedNodes"] == 5
    by_plugin = {(r["plugin"], r["reason"]): (r["count"], r["nodes"]) for r in report["rejections"]}
    assert by_plugin[("NodeUnschedulable", "node(s) were unschedulable")] == (1, ["cordoned"])
    assert by_plugin[("TaintToleration", "node(s) had untolerated taint(s)")] == (1, ["tainted"])
    nearest = {n["node"]: n for n in report["nearestNodes"]}
    # Every plugin that refuses a node is listed, not only the first.
    assert report["nearestNodes"][0] == {
        "node": "short",
        "plugins": ["NodeResourcesFit"],
        "missing": ["needs 500m more cpu (1500m free of 3)"],
    }
    assert nearest["tainted"]["missing"] == ["untolerated taint dedicated=gpu:NoSchedule"]
    assert nearest["cordoned"]["missing"] == ["cordoned (spec.unschedulable is true)"]
    assert nearest["busy-port"]["plugins"] == ["NodeAffinity", "NodePorts"]
    assert nearest["busy-port"]["missing"] == [
        "no label disk, the pod's nodeSelector wants disk=ssd",
        "host port 8080/TCP already in use",
    ]
    assert set(nearest["db-host"]["missing"]) == {
        "needs 2 cpu, the node has 1 in all",
        "1 pod(s) on it match the pod's anti-affinity",
    }
    # Nothing lower-priority to evict anywhere.
    assert report["preemption"]["helps"] is False
    assert (
        "Preemption is not helpful" in report["preemption"]["message"]
        or "No preemption victims" in (report["preemption"]["message"])
    )
    assert report["topNodes"] == [] and report["scoredNodes"] == 0


def test_schedulable_pod_top_nodes_with_scores_and_weights(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("a", cpu="4"),
        node("b", cpu="8"),
        node("c", cpu="2", taints=[taint("x", "PreferNoSchedule", "y")]),
        pod("p", requests={"cpu": "1"}),
    )
    report = explain_json(capsys, "p", "--snapshot", str(path))
    assert (report["verdict"], report["node"]) == ("Schedulable", "b")
    assert [n["node"] for n in report["topNodes"]] == ["b", "a", "c"]
    weights = report["scoreWeights"]
    for ranked in report["topNodes"]:
        assert ranked["total"] == sum(weights[p] * s for p, s in ranked["plugins"].items())
    assert report["topNodes"][2]["plugins"]["TaintToleration"] == 0  # the one PreferNoSchedule taint
    assert (report["nearestNodes"], report["preemption"]) == ([], None)


def test_a_pod_of_a_pod_group_is_explained_on_its_own_and_told_so_with_the_gate_off(
    tmp_path: Path, capsys: Capsys
) -> None:
    member = pod("w0", requests={"cpu": "1"})
    member["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    other = pod("w1", requests={"cpu": "1"}) | {"spec": member["spec"]}
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}},
    }
    path = write_yaml(tmp_path / "c.yaml", node("a", cpu="4"), group, member, other)
    report = explain_json(capsys, "w0", "--snapshot", str(path))
    assert report["verdict"] == "Schedulable"
    assert report["notes"] == [
        "the pod names PodGroup default/train (gang, minCount 4), with 2 pod(s) in the snapshot: it is "
        "explained on its own, as kube-scheduler schedules it with GenericWorkload off"
    ]
    report = explain_json(capsys, "w0", "--snapshot", str(path), "--feature-gates=GenericWorkload=true")
    assert (report["podGroup"], report["pod"], report["verdict"]) == ("default/train", "default/w0", "Gated")
    path = write_yaml(tmp_path / "c.yaml", node("a", cpu="4"), member)
    (note,) = explain_json(capsys, "w0", "--snapshot", str(path))["notes"]
    assert note.startswith(
        "the pod names PodGroup default/train which the snapshot does not hold, with 1 pod(s)"
    )


def test_preemption_names_the_victims(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("only", cpu="2"),
        pod("low", nodeName="only", priority=0, requests={"cpu": "2"}),
        pod("urgent", priority=1000, requests={"cpu": "1"}),
    )
    report = explain_json(capsys, "default/urgent", "--snapshot", str(path))
    assert report["verdict"] == "Unschedulable"
    assert report["preemption"] == {
        "helps": True,
        "node": "only",
        "victims": ["default/low"],
        "message": "preemption: found a potential placement for pod on node only, preempting 1 victims",
    }
    lines = run_cli(capsys, "explain", "default/urgent", "--snapshot", str(path))[1]
    assert "Preemption would evict default/low to make room on only" in lines


def test_manifest_from_stdin_where_would_it_go(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_yaml(tmp_path / "c.yaml", node("small", cpu="1"), node("big", cpu="16"))
    manifest = yaml.safe_dump(pod("new", requests={"cpu": "4"}))
    monkeypatch.setattr("sys.stdin", io.StringIO(manifest))
    report = explain_json(capsys, "-f", "-", "-n", "team", "--snapshot", str(path))
    assert (report["pod"], report["verdict"], report["node"]) == ("team/new", "Schedulable", "big")
    assert report["rejections"] == [
        {
            "plugin": "NodeResourcesFit",
            "code": "UnschedulableAndUnresolvable",
            "reason": "Insufficient cpu",
            "count": 1,
            "nodes": ["small"],
        }
    ]
    # Not a pod: one line naming stdin.
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: ConfigMap\napiVersion: v1\nmetadata: {name: d}\n"))
    code, out, err = run_cli(capsys, "explain", "-f", "-", "--snapshot", str(path))
    assert (code, out, err) == (
        2,
        "",
        "kubesched: <stdin>: expected one Pod, PodGroup or workload (Deployment, StatefulSet, Job, ...), "
        "found ConfigMap\n",
    )


def test_running_gated_and_unknown_pods(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("n1", cpu="2"),
        pod("running", nodeName="n1", requests={"cpu": "2"}),
        pod("gated", schedulingGates=[{"name": "example.com/wait"}]),
    )
    # A running pod is explained as if pending, without counting itself on its node.
    running = explain_json(capsys, "default/running", "--snapshot", str(path))
    assert (running["runningOn"], running["verdict"], running["node"]) == ("n1", "Schedulable", "n1")
    gated = explain_json(capsys, "default/gated", "--snapshot", str(path))
    assert (gated["verdict"], gated["message"]) == (
        "Gated",
        "waiting for scheduling gates: [example.com/wait]",
    )
    code, out, err = run_cli(capsys, "explain", "default/runing", "--snapshot", str(path))
    assert (code, out) == (2, "")
    assert err == 'kubesched: pod default/runing not found (did you mean "default/running"?)\n'


def test_profile_comes_from_config(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        node("plain"),
        node("hello", labels={"node": "hello"}),
        pod("p", schedulerName="nodelabelfilter", nodeSelector={"kubernetes.io/hostname": "hello"}),
    )
    code, _, err = run_cli(capsys, "explain", "default/p", "--snapshot", str(path))
    assert code == 2 and 'uses schedulerName "nodelabelfilter", which no profile' in err
    config = write_config(
        tmp_path / "sched.yaml",
        "profiles:\n- schedulerName: nodelabelfilter\n  plugins:\n    filter:\n"
        "      enabled: [{name: NodeFilterLabel}]\n",
    )
    report = explain_json(capsys, "default/p", "--snapshot", str(path), "--config", str(config))
    assert report["verdict"] == "Unschedulable"
    hello = next(n for n in report["nearestNodes"] if n["node"] == "hello")
    assert hello == {
        "node": "hello",
        "plugins": ["NodeFilterLabel"],
        "missing": ["NodeFilterLabel: node(s) had label node=hello"],
    }


def test_yaml_output_and_table(tmp_path: Path, capsys: Capsys) -> None:
    path = str(cluster(tmp_path))
    code, out, _ = run_cli(capsys, "explain", "default/want", "--snapshot", path, "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["verdict"] == "Unschedulable"
    code, out, _ = run_cli(capsys, "explain", "default/want", "--snapshot", path)
    assert code == 0
    text = " ".join(out.split())
    for expected in (
        "default/want (profile default-scheduler) on 5 nodes",
        "Verdict: Unschedulable",
        "Rejected: 5 of 5 nodes, by plugin and reason",
        "Nearest nodes, and what is missing on each",
        "short │ NodeResourcesFit │ needs 500m more cpu (1500m free of 3)",
        "Preemption would not help:",
    ):
        assert expected in text, expected


def test_kinds_read_follow_the_profile() -> None:
    registry = default_registry()
    kinds = kinds_read(default_config(registry), registry)
    assert kinds is not None
    assert {"PersistentVolumeClaim", "PodDisruptionBudget", "Service", "Namespace", "PriorityClass"} <= kinds
    assert "PodGroup" not in kinds  # Coscheduling is not in the default profile

    class Undeclared:
        name = "Undeclared"

        def filter(self, state: object, pod: object, node: object) -> None:
            return None

    registry.register(Undeclared)
    config = decode_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    filter:\n      enabled: [{name: Undeclared}]\n",
        "sched.yaml",
        registry,
    )
    assert kinds_read(config, registry) is None  # a plugin that does not say: read everything
