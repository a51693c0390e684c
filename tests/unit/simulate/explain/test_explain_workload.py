"""`explain -f` of a workload explains the pod its controller would create next (before: "expected
one Pod"): a new Deployment's first pod, a StatefulSet's next ordinal, a pod too big named as the
controller names it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.simulate.explain.test_explain_command import explain_json
from tests.unit.simulate.simulate_helpers import node, pod, write_yaml
from tests.unit.simulate.test_workloads import deployment, stateful_set

Capsys = pytest.CaptureFixture[str]


def test_a_new_deployment_explains_its_first_pod(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", node("small", cpu="1"), node("big", cpu="8"))
    manifest = write_yaml(tmp_path / "d.yaml", deployment("web", replicas=3, cpu="2"))
    report = explain_json(capsys, "-f", str(manifest), "-n", "shop", "--snapshot", str(cluster))
    namespace, _, name = report["pod"].partition("/")
    assert namespace == "shop" and name.startswith("web-")  # web-<template hash>-<suffix>
    assert (report["verdict"], report["node"]) == ("Schedulable", "big")
    assert report["notes"] == [
        f"{name} is the next pod of Deployment shop/web, as its controller would create it from the template"
    ]


def test_a_running_stateful_set_explains_its_next_ordinal(tmp_path: Path, capsys: Capsys) -> None:
    sts = stateful_set("db", replicas=2, cpu="3")
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": True}
    running = [
        pod(f"db-{i}", requests={"cpu": "3"}, nodeName=f"n{i + 1}")
        | {"metadata": {"name": f"db-{i}", "labels": {"app": "db"}, "ownerReferences": [owner]}}
        for i in range(2)
    ]
    cluster = write_yaml(tmp_path / "c.yaml", node("n1", cpu="4"), node("n2", cpu="4"), sts, *running)
    manifest = write_yaml(tmp_path / "sts.yaml", sts)
    # It has the pods it wants: the next is the one a scale-up by one makes, and 1 cpu is left per node.
    report = explain_json(capsys, "-f", str(manifest), "--snapshot", str(cluster))
    assert (report["pod"], report["verdict"]) == ("default/db-2", "Unschedulable")
    assert report["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_a_workload_too_big_is_named_as_its_controller_names_it(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", node("n1", cpu="2"))
    manifest = write_yaml(tmp_path / "sts.yaml", stateful_set("kafka", replicas=3, cpu="16"))
    report = explain_json(capsys, "-f", str(manifest), "-n", "data", "--snapshot", str(cluster))
    assert (report["pod"], report["verdict"]) == ("data/kafka-0", "Unschedulable")
