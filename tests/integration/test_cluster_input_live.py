"""`simulate`, `capacity` and `compare` with `--kubeconfig` against the real kube-apiserver: the report
counts what the cluster holds and decides as the same objects in files would; a read-only user
(deploy/explain-rbac.yaml) is enough, and only GET requests are made.

The test's pods name a profile of their own and select a label only the test's nodes carry, so pods
other tests left pending in the shared control plane (held by another scheduler here) change nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.test_explain_live import read_only_kubeconfig

from kubesched.cli import main
from kubesched.cluster.kube.client import KubeClient
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    create_node,
    create_pod,
    fake_node,
    list_nodes,
    pod_manifest,
)

KEY = "kubesched.test/cluster-input"
PROFILE = "cluster-input"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cluster-input") / "sched.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {PROFILE}\n"
    )
    return str(path)


def ours(namespace: str, name: str, cpu: str, **kwargs: Any) -> dict[str, Any]:
    return pod_manifest(
        name,
        namespace=namespace,
        cpu=cpu,
        memory=None,
        scheduler_name=PROFILE,
        node_selector={KEY: namespace},
        **kwargs,
    )


def seed(api: ApiClient, namespace: str) -> dict[str, str]:
    """Two 4-cpu nodes, one 3 cpu full; a pending 2-cpu pod; a Deployment of two 1-cpu replicas
    (no controller-manager runs: its pods exist only in the simulation)."""
    nodes = {role: f"ci-{role}-{namespace}" for role in ("free", "busy")}
    for name in nodes.values():
        create_node(api, fake_node(name, cpu="4", labels={KEY: namespace}))
    create_pod(api, ours(namespace, "load", "3", node_name=nodes["busy"]))
    create_pod(api, ours(namespace, "web", "2"))
    template = ours(namespace, "api", "1", labels={"app": "api"})
    api.post(
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "api", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "api"}},
                "template": {"metadata": template["metadata"], "spec": template["spec"]},
            },
        },
    )
    return nodes


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main([*argv, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "forbidden" not in err and "not of one instant" not in err, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_simulate_capacity_and_compare_read_the_live_cluster(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    config: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = seed(api, namespace)
    kubeconfig = str(control_plane.kubeconfig_path)
    report = run(capsys, "simulate", "--kubeconfig", kubeconfig, "--config", config, "--no-nodes")
    mine = {p["name"]: p for p in report["pods"] if p["namespace"] == namespace}
    assert (mine["web"]["result"], mine["web"]["node"]) == ("Scheduled", nodes["free"])
    replicas = [p for name, p in mine.items() if name.startswith("api-")]
    assert [p["result"] for p in replicas] == ["Scheduled", "Scheduled"]  # the Deployment was read
    assert report["summary"]["nodes"] == len(list_nodes(api))

    shape = tmp_path / "shape.yaml"
    shape.write_text(yaml.safe_dump(ours(namespace, "more", "500m")))
    answer = run(capsys, "capacity", str(shape), "--kubeconfig", kubeconfig, "--config", config)
    (fits,) = answer["shapes"]
    # 8 cpu, 3 + 2 + 2 taken: 1 cpu left, two more half-cpu pods, on our nodes only.
    assert fits["fits"] == 2 and set(fits["nodes"]) <= set(nodes.values())

    compared = run(capsys, "compare", "--config", config, "--config", config, "--kubeconfig", kubeconfig)
    assert compared["nodes"] == report["summary"]["nodes"]
    assert [r["scheduled"] for r in compared["runs"]] == [report["summary"]["scheduled"]] * 2


def test_a_read_only_user_is_enough_and_only_get_requests_are_made(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    config: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed(api, namespace)
    kubeconfig = read_only_kubeconfig(api, control_plane, namespace, tmp_path)
    methods: list[str] = []
    send = KubeClient.request

    def record(self: KubeClient, method: str, path: str, **kwargs: Any) -> Any:
        methods.append(method)
        return send(self, method, path, **kwargs)

    monkeypatch.setattr(KubeClient, "request", record)
    argv = ("simulate", "--kubeconfig", str(kubeconfig), "--config", config)
    report = run(capsys, *argv, "--no-nodes", "--pods", "scheduled")
    assert any(p["namespace"] == namespace for p in report["pods"])
    assert methods and set(methods) == {"GET"}
    # The whole command as a user runs it, progress asked for: a line per kind read, with its count.
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv, "--progress"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "forbidden" not in done.stderr
    assert f"kubesched: reading the cluster at {control_plane.server}\n" in done.stderr
    assert re.search(r"^kubesched: read [1-9][0-9]* Deployment\(s\)$", done.stderr, re.MULTILINE)
    assert " at resourceVersion " in done.stderr
