"""charts/kubesched: linted, rendered for several sets of values, and every rendered object accepted
by the real API server (server-side dry run: decoding, defaulting, validation, admission; nothing
stored); the configurations it writes are ones kubesched accepts; the extender NOTES print a
kube-scheduler snippet kube-scheduler's config format accepts; and deploy/ is exactly what the chart
renders (tools/chart/render-deploy.py), so the two cannot drift.

helm is built from the Go module pinned in tools/helm (tools/helm/build.sh, cached beside the
Kubernetes binaries).
"""

from __future__ import annotations

import filecmp
import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import _parser
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.fake_nodes import ApiClient, ApiError

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kubesched"
VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))

#: kind -> (API prefix, plural, namespaced)
COLLECTIONS = {
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "Service": ("/api/v1", "services", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "ServiceMonitor": ("/apis/monitoring.coreos.com/v1", "servicemonitors", True),
}


@pytest.fixture(scope="module")
def helm() -> str:
    proc = subprocess.run(
        [str(ROOT / "tools" / "helm" / "build.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(
            "tools/helm/build.sh failed (stderr above): it needs Go and the Go module proxy (make helm)"
        )
    return str(Path(proc.stdout.strip().splitlines()[-1]) / "helm")


def run(*args: str) -> str:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def render(helm: str, values: str) -> list[dict[str, Any]]:
    text = run(
        helm,
        "template",
        "kubesched",
        str(CHART),
        "--namespace",
        "kube-system",
        "-f",
        str(CHART / "ci" / values),
    )
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def service_monitor_crd(api: ApiClient) -> None:
    """The prometheus-operator CRD the optional ServiceMonitor needs, with an open schema (the real
    one is not available offline): the dry run then checks group, version, kind and metadata."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"plural": "servicemonitors", "singular": "servicemonitor", "kind": "ServiceMonitor"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    try:
        api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    except ApiError as exc:
        if exc.reason != "AlreadyExists":
            raise
    for _ in range(100):  # established: the new resource is served
        try:
            api.get("/apis/monitoring.coreos.com/v1/namespaces/kube-system/servicemonitors")
            return
        except ApiError:
            import time

            time.sleep(0.1)
    raise AssertionError("the ServiceMonitor CRD was not served")


@pytest.mark.parametrize("values", ["", *VALUES])
def test_helm_lint(helm: str, values: str) -> None:
    args = ["-f", str(CHART / "ci" / values)] if values else []
    assert "0 chart(s) failed" in run(helm, "lint", str(CHART), "--strict", *args)


@pytest.mark.parametrize("values", VALUES)
def test_every_rendered_object_passes_a_server_side_dry_run(
    helm: str, api: ApiClient, service_monitor_crd: None, values: str
) -> None:
    docs = render(helm, values)
    assert docs
    for doc in docs:
        prefix, plural, namespaced = COLLECTIONS[doc["kind"]]
        ns = doc["metadata"].get("namespace", "default")
        path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
        created = api.request("POST", path, doc, params={"dryRun": "All", "fieldValidation": "Strict"})
        assert created["metadata"]["name"] == doc["metadata"]["name"], doc["kind"]


@pytest.mark.parametrize("values", VALUES)
def test_rendered_configs_and_args_are_ones_kubesched_accepts(helm: str, values: str) -> None:
    docs = render(helm, values)
    registry = default_registry()
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    cfg = decode_config(cm["data"]["config.yaml"], f"{values}: ConfigMap", registry)
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = _parser().parse_args(container["args"])
    assert not getattr(args, "unsupported_flags", None)
    assert pod["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    if container["args"][0] == "run":
        names = {p.scheduler_name for p in cfg.profiles}
        assert cfg.leader_election is not None
        roles = [d for d in docs if d["kind"] == "Role"]
        assert roles[0]["rules"][1]["resourceNames"] == [cfg.leader_election.resource_name]
        assert all(
            probe["httpGet"]["scheme"] == "HTTPS"
            for probe in (container["livenessProbe"], container["readinessProbe"])
        )
        assert names
    else:  # extender: TLS with client certificates, from a Secret the chart made
        assert "--client-ca-file=/etc/kubesched/tls/ca.crt" in container["args"]
        secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
        assert {"kubesched-extender-tls", "kubesched-extender-client"} <= set(secrets)


def test_extender_notes_print_a_kube_scheduler_config_that_decodes(
    helm: str, control_plane: ControlPlane
) -> None:
    out = run(
        helm, "install", "kubesched", str(CHART), "--namespace", "kube-system", "--dry-run=client",
        "-f", str(CHART / "ci" / "extender-values.yaml"), "--kubeconfig", str(control_plane.kubeconfig_path),
    )  # fmt: skip
    notes = out.split("NOTES:", 1)[1]
    snippet = notes[notes.index("extenders:") :]
    header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    cfg = decode_config(header + snippet, "NOTES", default_registry())
    (ext,) = cfg.extenders
    assert ext.url_prefix == "https://kubesched-extender.kube-system.svc:8888/scheduler"
    assert ext.enable_https and ext.tls_config is not None and ext.tls_config.cert_file


def test_deploy_is_what_the_chart_renders(helm: str, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "render_deploy", ROOT / "tools" / "chart" / "render-deploy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.render(tmp_path, helm)
    stale = [
        p.relative_to(tmp_path)
        for p in written
        if not filecmp.cmp(p, ROOT / "deploy" / p.relative_to(tmp_path), shallow=False)
    ]
    assert stale == [], f"deploy/ differs from the chart in {stale}: run tools/chart/render-deploy.py"
