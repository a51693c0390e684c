"""`kubesched explain` against the real kube-apiserver: a pending pod, a pod that would preempt, a
schedulable pod, a manifest from stdin, and a user holding only deploy/explain-rbac.yaml's role.

The pods name a profile no running scheduler serves, so they stay pending for as long as the test
needs; the nodes carry a label unique to the test module and the pods select it. Every test also
checks that explain changed nothing in the cluster: it only reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import main
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_node, create_pod, fake_node, get_pod, pod_manifest

REPO = Path(__file__).resolve().parents[2]
PROFILE = "explain-it"
LABEL = "kubesched.test/explain"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explain") / "sched.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {PROFILE}\n"
    )
    return path


@pytest.fixture(scope="module")
def high_priority(api: ApiClient) -> str:
    name = f"explain-high-{uuid.uuid4().hex[:6]}"
    api.post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": 1000,
        },
    )
    return name


def make_nodes(
    api: ApiClient, namespace: str, used: dict[str, str], tainted: tuple[str, ...] = ()
) -> dict[str, str]:
    """4-cpu nodes labelled for this test only, by role; `used[role]` cpu is taken by a pod
    (priority 0) bound there directly, as a scheduler would; `tainted` roles get dedicated=gpu:NoSchedule."""
    names = {role: f"explain-{role}-{namespace}" for role in used}
    for role, name in names.items():
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if role in tainted else []
        create_node(api, fake_node(name, cpu="4", memory="16Gi", labels={LABEL: namespace}, taints=taints))
        if used[role] != "0":
            create_pod(api, pod_manifest(f"{role}-load", namespace=namespace, cpu=used[role], node_name=name))
    return names


def pending(name: str, namespace: str, cpu: str, **kwargs: Any) -> dict[str, Any]:
    return pod_manifest(
        name, namespace=namespace, cpu=cpu, scheduler_name=PROFILE, node_selector={LABEL: namespace}, **kwargs
    )


def explain(capsys: pytest.CaptureFixture[str], kubeconfig: Path, config: Path, *argv: str) -> dict[str, Any]:
    code = main(["explain", *argv, "--kubeconfig", str(kubeconfig), "--config", str(config), "-o", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    report: dict[str, Any] = json.loads(out)
    return report


def test_pending_pod_reasons_and_nearest_nodes(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    config: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = make_nodes(api, namespace, {"busy": "3", "full": "4", "tainted": "0"}, tainted=("tainted",))
    create_pod(api, pending("needs-two", namespace, cpu="2"))
    report = explain(capsys, control_plane.kubeconfig_path, config, f"{namespace}/needs-two")
    total = report["nodes"]
    assert report["source"] == f"cluster {control_plane.server}"
    assert (report["verdict"], report["node"]) == ("Unschedulable", None)
    assert report["message"].startswith(f"0/{total} nodes are available: ")
    reasons = {(r["plugin"], r["reason"]): (r["count"], r["nodes"]) for r in report["rejections"]}
    # Every node but ours fails the nodeSelector; ours lack cpu or a toleration.
    assert (
        reasons.get(("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"), (0,))[0]
        == total - 3
    )
    assert reasons[("TaintToleration", "node(s) had untolerated taint(s)")] == (1, [nodes["tainted"]])
    assert reasons[("NodeResourcesFit", "Insufficient cpu")] == (2, sorted([nodes["busy"], nodes["full"]]))
    # Nearest first: resolvable obstacles before unresolvable ones, the smaller shortfall first.
    assert report["nearestNodes"][:2] == [
        {
            "node": nodes["busy"],
            "plugins": ["NodeResourcesFit"],
            "missing": ["needs 1 more cpu (1 free of 4)"],
        },
        {
            "node": nodes["full"],
            "plugins": ["NodeResourcesFit"],
            "missing": ["needs 2 more cpu (0 free of 4)"],
        },
    ]
    # Same priority everywhere: nothing to evict.
    assert (report["preemption"]["helps"], report["preemption"]["victims"]) == (False, [])
    assert get_pod(api, "needs-two", namespace)["spec"].get("nodeName") is None  # read only


def test_pod_that_would_preempt(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    high_priority: str,
    config: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = make_nodes(api, namespace, {"full": "4"})
    create_pod(api, pending("urgent", namespace, cpu="2", priority_class_name=high_priority))
    report = explain(capsys, control_plane.kubeconfig_path, config, f"{namespace}/urgent")
    assert report["verdict"] == "Unschedulable"
    assert report["preemption"] == {
        "helps": True,
        "node": nodes["full"],
        "victims": [f"{namespace}/full-load"],
        "message": f"preemption: found a potential placement for pod on node {nodes['full']}, "
        "preempting 1 victims",
    }
    # Nothing was evicted or nominated for real.
    assert get_pod(api, "full-load", namespace)["metadata"].get("deletionTimestamp") is None
    assert get_pod(api, "urgent", namespace).get("status", {}).get("nominatedNodeName") is None


def test_schedulable_pod_top_nodes(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    config: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = make_nodes(api, namespace, {"free": "0", "busy": "3"})
    create_pod(api, pending("fits", namespace, cpu="500m"))
    report = explain(capsys, control_plane.kubeconfig_path, config, f"{namespace}/fits")
    assert (report["verdict"], report["node"]) == ("Schedulable", nodes["free"])
    assert [n["node"] for n in report["topNodes"]] == [nodes["free"], nodes["busy"]]
    weights = report["scoreWeights"]
    for ranked in report["topNodes"]:
        assert ranked["total"] == sum(weights[p] * s for p, s in ranked["plugins"].items())
    assert (
        report["topNodes"][0]["plugins"]["NodeResourcesFit"]
        > report["topNodes"][1]["plugins"]["NodeResourcesFit"]
    )
    assert get_pod(api, "fits", namespace)["spec"].get("nodeName") is None


def test_manifest_from_stdin_with_a_read_only_user(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    config: Path,
    tmp_path: Path,
) -> None:
    """The whole command as a user runs it, with a token bound to deploy/explain-rbac.yaml's role only."""
    nodes = make_nodes(api, namespace, {"free": "0", "busy": "3"})
    kubeconfig = read_only_kubeconfig(api, control_plane, namespace, tmp_path)
    manifest = yaml.safe_dump(pending("not-created-yet", namespace, cpu="1"))
    argv = ["explain", "-f", "-", "--kubeconfig", str(kubeconfig), "--config", str(config), "-o", "json"]
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    report = json.loads(done.stdout)
    assert (report["pod"], report["verdict"], report["node"]) == (
        f"{namespace}/not-created-yet",
        "Schedulable",
        nodes["free"],
    )
    assert not [n for n in report["notes"] if "forbidden" in n]  # every kind the profile reads was allowed
    # The same token may not write anything.
    reader = ApiClient(control_plane.server, kubeconfig_token(kubeconfig), control_plane.ca_file)
    with reader, pytest.raises(Exception, match="403"):
        create_pod(reader, pod_manifest("forbidden", namespace=namespace))


def read_only_kubeconfig(api: ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Path:
    """A ServiceAccount in `namespace`, bound to the ClusterRole of deploy/explain-rbac.yaml, and a
    kubeconfig with a token for it (TokenRequest)."""
    docs = list(yaml.safe_load_all((REPO / "deploy" / "explain-rbac.yaml").read_text()))
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    role["metadata"]["name"] = f"kubesched-explain-{namespace}"
    api.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "reader"}})
    api.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": f"kubesched-explain-{namespace}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role["metadata"]["name"],
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    token = api.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/reader/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )["status"]["token"]
    path = tmp_path / "reader.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "local",
                        "cluster": {
                            "server": control_plane.server,
                            "certificate-authority": str(control_plane.ca_file),
                        },
                    }
                ],
                "users": [{"name": "reader", "user": {"token": token}}],
                "contexts": [{"name": "reader", "context": {"cluster": "local", "user": "reader"}}],
                "current-context": "reader",
            }
        )
    )
    return path


def kubeconfig_token(path: Path) -> str:
    token: str = yaml.safe_load(path.read_text())["users"][0]["user"]["token"]
    return token
