"""Every manifest in deploy/ is accepted by the real API server (server-side dry run: full decoding,
defaulting, validation and admission, nothing stored), the ConfigMap's configuration is one kubesched
accepts, and the example pod names a profile of the node-label-filter example it is shown with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config import decode_config
from kubesched.harness.fake_nodes import ApiClient
from kubesched.plugins import default_registry

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

#: kind -> (API prefix, plural, namespaced)
COLLECTIONS = {
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Pod": ("/api/v1", "pods", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
}


def manifests() -> list[tuple[str, dict[str, Any]]]:
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc:
                docs.append((f"{path.name}[{i}] {doc['kind']}/{doc['metadata']['name']}", doc))
    return docs


MANIFESTS = manifests()


def test_deploy_has_every_piece() -> None:
    kinds = sorted({doc["kind"] for _, doc in MANIFESTS})
    assert kinds == sorted(COLLECTIONS)
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim" in dockerfile and "USER 65532" in dockerfile


@pytest.mark.parametrize("label,doc", MANIFESTS, ids=[label for label, _ in MANIFESTS])
def test_manifest_applies_with_server_side_dry_run(api: ApiClient, label: str, doc: dict[str, Any]) -> None:
    prefix, plural, namespaced = COLLECTIONS[doc["kind"]]
    ns = doc["metadata"].get("namespace", "default")
    path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
    created = api.request("POST", path, doc, params={"dryRun": "All", "fieldValidation": "Strict"})
    assert created["metadata"]["name"] == doc["metadata"]["name"]


def test_configmap_config_is_valid_with_one_default_profile() -> None:
    (cm,) = [doc for _, doc in MANIFESTS if doc["kind"] == "ConfigMap"]
    cfg = decode_config(cm["data"]["config.yaml"], "configmap.yaml", default_registry())
    defaults = decode_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: kubesched}]\n",
        "defaults",
        default_registry(),
    )
    assert cfg.profiles == defaults.profiles  # kube-scheduler's default plugins, named kubesched
    assert cfg.leader_election is not None and cfg.leader_election.resource_name == "kubesched"
    # The Role lets kubesched manage exactly the Lease the config names.
    (role,) = [doc for _, doc in MANIFESTS if doc["kind"] == "Role"]
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named and named[0]["resourceNames"] == [cfg.leader_election.resource_name]
    assert cfg.leader_election.resource_namespace == role["metadata"]["namespace"]


def test_the_example_pod_names_the_node_label_filter_profile() -> None:
    """deploy/example-pod.yaml is the pod of the README's live tour and docs/live-scheduler.md §1,
    which run examples/node-label-filter/scheduler-config.yaml."""
    example = DEPLOY.parent / "examples" / "node-label-filter" / "scheduler-config.yaml"
    cfg = decode_config(example.read_text(), str(example), default_registry())
    (pod,) = [doc for _, doc in MANIFESTS if doc["kind"] == "Pod"]
    assert pod["spec"]["schedulerName"] in {p.scheduler_name for p in cfg.profiles}
