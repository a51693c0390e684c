"""Priority admission at the CLI: a pod, pod group or pod template naming a PriorityClass the cluster
does not hold is refused as the API server refuses it (`no PriorityClass with name X was found`), or
with `--strict=false` warned about and simulated at priority 0; the API server's two system classes
exist without being given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli import main

Capsys = pytest.CaptureFixture[str]

NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    "status: {allocatable: {cpu: '2', memory: 8Gi, pods: '10'}}\n"
)
LOW = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\n"
#: Fills the node at priority 10.
RUNNING = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: running, namespace: default}\nspec:\n"
    "  nodeName: n1\n  priorityClassName: low\n"
    "  containers: [{name: c, image: i, resources: {requests: {cpu: '2'}}}]\n"
)


def pod(name: str, priority_class: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n"
        f"  priorityClassName: {priority_class}\n"
        "  containers: [{name: c, image: i, resources: {requests: {cpu: '2'}}}]\n"
    )


def write(tmp_path: Path, name: str, *docs: str) -> str:
    path = tmp_path / name
    path.write_text("---\n".join(docs))
    return str(path)


def simulate_json(argv: list[str], capsys: Capsys) -> dict[str, dict[str, object]]:
    assert main(["simulate", *argv, "-o", "json"]) == 0
    return {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def test_a_pod_naming_a_missing_class_is_refused_with_the_servers_words(
    tmp_path: Path, capsys: Capsys
) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, LOW, pod("p", "high"), pod("q", "highest"))
    assert main(["simulate", cluster]) == 2
    assert capsys.readouterr().err == (
        "kubesched: pods/default/p: spec.priorityClassName: no PriorityClass with name high was found"
        " (and 1 more like it)\n"
    )


def test_not_strict_warns_and_simulates_the_pod_at_priority_zero(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, LOW, RUNNING, pod("p", "high"))
    pods = simulate_json([cluster, "--strict=false"], capsys)
    # at priority 0 it cannot preempt the priority-10 pod
    assert pods["p"]["result"] == "Unschedulable"
    assert pods["p"]["victims"] == []


def test_the_warning_names_the_pod(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, pod("p", "high"))
    assert main(["simulate", cluster, "--strict=false", "-o", "json"]) == 0
    assert capsys.readouterr().err == (
        "kubesched: warning: pods/default/p: spec.priorityClassName: no PriorityClass with name high was"
        " found (ignored: --strict=false)\n"
    )


@pytest.mark.parametrize("name", ["system-node-critical", "system-cluster-critical"])
def test_the_system_classes_exist_without_being_given(name: str, tmp_path: Path, capsys: Capsys) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, LOW, RUNNING, pod("critical", name))
    pods = simulate_json([cluster], capsys)
    # at its class's value (2 * 10^9 and up) it preempts the priority-10 pod; at 0 it would not
    assert pods["critical"]["victims"] == ["default/running"]


def test_a_class_in_another_file_counts(tmp_path: Path, capsys: Capsys) -> None:
    classes = write(tmp_path, "classes.yaml", LOW.replace("low", "high").replace("10", "100"))
    cluster = write(tmp_path, "c.yaml", NODE, LOW, RUNNING, pod("p", "high"))
    pods = simulate_json([cluster, classes], capsys)
    assert pods["p"]["victims"] == ["default/running"]


def test_a_pod_read_back_from_a_cluster_is_not_checked(tmp_path: Path, capsys: Capsys) -> None:
    admitted = pod("p", "gone").replace(
        "  priorityClassName: gone\n", "  priorityClassName: gone\n  priority: 0\n"
    )
    cluster = write(tmp_path, "c.yaml", NODE, admitted)
    assert simulate_json([cluster], capsys)["p"]["result"] == "Scheduled"


def test_a_workload_template_naming_a_missing_class_is_refused(tmp_path: Path, capsys: Capsys) -> None:
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {priorityClassName: high, containers: [{name: c, image: i}]}\n"
    )
    cluster = write(tmp_path, "c.yaml", NODE, deployment)
    assert main(["simulate", cluster]) == 2
    assert capsys.readouterr().err == (
        "kubesched: deployments/shop/web: spec.template.spec.priorityClassName: no PriorityClass with name"
        " high was found (the API server refuses every pod made from this template)\n"
    )


def test_capacity_checks_the_shape_against_the_clusters_classes(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, LOW)
    known = write(tmp_path, "known.yaml", pod("p", "low"))
    assert main(["capacity", known, cluster, "-o", "json"]) == 0
    capsys.readouterr()
    missing = write(tmp_path, "missing.yaml", pod("p", "high"))
    assert main(["capacity", missing, cluster]) == 2
    assert "no PriorityClass with name high was found" in capsys.readouterr().err


def test_explain_f_checks_the_manifest_against_the_snapshot(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write(tmp_path, "c.yaml", NODE, LOW)
    manifest = write(tmp_path, "p.yaml", pod("p", "high"))
    assert main(["explain", "-f", manifest, "--snapshot", cluster]) == 2
    assert capsys.readouterr().err == (
        "kubesched: pods/default/p: spec.priorityClassName: no PriorityClass with name high was found\n"
    )
    assert main(["explain", "-f", write(tmp_path, "q.yaml", pod("q", "low")), "--snapshot", cluster]) == 0


def test_a_replay_event_creating_such_a_pod_is_refused(tmp_path: Path, capsys: Capsys) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n  events:\n"
        "  - {at: 0s, create: {apiVersion: v1, kind: Node, metadata: {name: n1},"
        " status: {allocatable: {cpu: '2', memory: 8Gi, pods: '10'}}}}\n"
        "  - {at: 1s, create: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: default},"
        " spec: {priorityClassName: high, containers: [{name: c, image: i}]}}}\n"
    )
    assert main(["simulate", "--scenario", str(scenario)]) == 2
    assert capsys.readouterr().err == (
        "kubesched: pods/default/p: spec.priorityClassName: no PriorityClass with name high was found\n"
    )
