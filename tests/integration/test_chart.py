"""charts/kubesched: linted, rendered for several sets of values, and every rendered object accepted
by the real API server (server-side dry run: decoding, defaulting, validation, admission; nothing
stored); the configurations it writes are ones kubesched accepts; the extender NOTES print a
kube-scheduler snippet kube-scheduler's config format accepts; and deploy/ is exactly what the chart
renders (tools/chart/render-deploy.py), so the two cannot drift.

What makes it survive upgrades: the extender's certificates are made once (installed on the real API
server, then upgraded: `lookup` reads them back) or come from cert-manager; every Deployment carries
checksums of what its pods mount; the values schema refuses what the templates cannot honour; the
defaults are a production scheduler's (no demo plugin, a PDB only with more than one replica, a Lease
and profile named after the release, the standard labels); the NOTES say how to build and push the
unpublished image.

helm is built from the Go module pinned in tools/helm (tools/helm/build.sh, cached beside the
Kubernetes binaries).
"""

from __future__ import annotations

import base64
import filecmp
import importlib.util
import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import _parser
from kubesched.config import decode_config
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, ApiError
from kubesched.plugins import default_registry

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
    "Issuer": ("/apis/cert-manager.io/v1", "issuers", True),
    "Certificate": ("/apis/cert-manager.io/v1", "certificates", True),
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
    return template(helm, "-f", str(CHART / "ci" / values))


def template(
    helm: str, *args: str, release: str = "kubesched", namespace: str = "kube-system"
) -> list[dict[str, Any]]:
    """`helm template` of the chart: no cluster, so `lookup` finds nothing."""
    text = run(helm, "template", release, str(CHART), "--namespace", namespace, *args)
    return [d for d in yaml.safe_load_all(text) if d]


def helm_error(helm: str, *args: str) -> str:
    """What a helm command that must fail prints."""
    proc = subprocess.run([helm, *args], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0, f"{' '.join(args)} succeeded:\n{proc.stdout}"
    return proc.stdout + proc.stderr


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def pod_annotations(docs: list[dict[str, Any]]) -> dict[str, str]:
    (deployment,) = of_kind(docs, "Deployment")
    annotations: dict[str, str] = deployment["spec"]["template"]["metadata"]["annotations"]
    return annotations


def register_crd(api: ApiClient, group: str, kind: str, plural: str, version: str = "v1") -> None:
    """A namespaced CRD with an open schema (the real ones are not available offline), served before
    this returns: a dry run of its objects then checks group, version, kind and metadata."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": version,
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
            api.get(f"/apis/{group}/{version}/namespaces/kube-system/{plural}")
            return
        except ApiError:
            time.sleep(0.1)
    raise AssertionError(f"the {kind} CRD was not served")


@pytest.fixture(scope="module")
def service_monitor_crd(api: ApiClient) -> None:
    """The prometheus-operator CRD the optional ServiceMonitor needs."""
    register_crd(api, "monitoring.coreos.com", "ServiceMonitor", "servicemonitors")


@pytest.fixture(scope="module")
def cert_manager_crds(api: ApiClient) -> None:
    """cert-manager's Issuer and Certificate, for extender.tls.certManager."""
    register_crd(api, "cert-manager.io", "Issuer", "issuers")
    register_crd(api, "cert-manager.io", "Certificate", "certificates")


def dry_run(api: ApiClient, doc: dict[str, Any]) -> None:
    """POST `doc` with dryRun=All and strict field validation: the API server decodes, defaults,
    validates and admits it, and stores nothing."""
    prefix, plural, namespaced = COLLECTIONS[doc["kind"]]
    ns = doc["metadata"].get("namespace", "default")
    path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
    created = api.request("POST", path, doc, params={"dryRun": "All", "fieldValidation": "Strict"})
    assert created["metadata"]["name"] == doc["metadata"]["name"], doc["kind"]


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
        dry_run(api, doc)


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


def test_the_schema_rejects_an_unknown_mode_and_wrong_types(helm: str) -> None:
    for command in (("lint", str(CHART), "--strict"), ("template", "kubesched", str(CHART))):
        out = helm_error(helm, *command, "--set", "mode=bogus")
        assert "at '/mode': value must be one of 'scheduler', 'extender'" in out, out
    wrong = ("replicas=two", "image.pulPolicy=Always", "leaderElection.leaseDuration=15")
    out = helm_error(helm, "template", "kubesched", str(CHART), *(a for w in wrong for a in ("--set", w)))
    assert "at '/replicas': got string, want integer" in out, out
    assert "additional properties 'pulPolicy' not allowed" in out, out
    assert "at '/leaderElection/leaseDuration'" in out, out


@pytest.mark.parametrize("mode", ["scheduler", "extender"])
def test_a_disruption_budget_only_with_more_than_one_replica(helm: str, mode: str) -> None:
    """One replica under `minAvailable: 1` could never be evicted: no drain of its node would finish."""
    assert (
        of_kind(template(helm, "--set", f"mode={mode}", "--set", "replicas=1"), "PodDisruptionBudget") == []
    )
    docs = template(helm, "--set", f"mode={mode}", "--set", "replicas=2")
    (pdb,) = of_kind(docs, "PodDisruptionBudget")
    (deployment,) = of_kind(docs, "Deployment")
    assert pdb["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"]}
    out = helm_error(
        helm, "template", "kubesched", str(CHART), "--set", f"mode={mode}",
        "--set", "replicas=2", "--set", "podDisruptionBudget.minAvailable=2",
    )  # fmt: skip
    assert "podDisruptionBudget.minAvailable (2) must be below replicas (2)" in out, out


@pytest.mark.parametrize("mode", ["scheduler", "extender"])
def test_every_object_carries_the_standard_labels(helm: str, mode: str) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    docs = template(helm, "--set", f"mode={mode}", release="blue", namespace="team-a")
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "kubesched", doc["kind"]
        assert labels["app.kubernetes.io/instance"] == "blue", doc["kind"]
        assert labels["app.kubernetes.io/component"] == mode, doc["kind"]
        assert labels["app.kubernetes.io/version"] == chart["appVersion"], doc["kind"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm", doc["kind"]
        assert labels["helm.sh/chart"] == f"kubesched-{chart['version']}", doc["kind"]
    (deployment,) = of_kind(docs, "Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector == {
        "app.kubernetes.io/name": "kubesched",
        "app.kubernetes.io/instance": "blue",
        "app.kubernetes.io/component": mode,
    }
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    for service in of_kind(docs, "Service"):
        assert service["spec"]["selector"] == selector


def test_the_lease_and_the_default_profile_follow_the_release(helm: str) -> None:
    """Two releases never share a Lease (they would take turns scheduling) nor a schedulerName
    (both would try to bind the same pods)."""
    objects: dict[str, set[tuple[str, str, str]]] = {}
    for release in ("blue", "green"):
        docs = template(helm, release=release, namespace="team-a")
        (cm,) = of_kind(docs, "ConfigMap")
        cfg = decode_config(cm["data"]["config.yaml"], release, default_registry())
        assert cfg.leader_election is not None
        assert (cfg.leader_election.resource_namespace, cfg.leader_election.resource_name) == (
            "team-a",
            release,
        )
        assert [p.scheduler_name for p in cfg.profiles] == [release]
        (role,) = of_kind(docs, "Role")
        assert [r.get("resourceNames") for r in role["rules"]] == [None, [release]]
        objects[release] = {
            (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs
        }
    assert objects["blue"].isdisjoint(objects["green"])
    docs = template(helm, "--set", "leaderElection.resourceName=kubesched-gpu", release="blue")
    (role,) = of_kind(docs, "Role")
    assert role["rules"][1]["resourceNames"] == ["kubesched-gpu"]


def test_the_default_values_ship_no_demo_plugin(helm: str) -> None:
    (cm,) = of_kind(template(helm), "ConfigMap")
    assert yaml.safe_load(cm["data"]["config.yaml"])["profiles"] == [{"schedulerName": "kubesched"}]
    (cm,) = of_kind(template(helm, "--set", "mode=extender"), "ConfigMap")
    (profile,) = yaml.safe_load(cm["data"]["config.yaml"])["profiles"]
    assert profile == {
        "schedulerName": "extender",
        "plugins": {
            "multiPoint": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}],
            }
        },
    }


def test_checksum_annotations_roll_the_pods_when_the_config_changes(helm: str) -> None:
    """On every Deployment: the configuration's checksum, and the extender's certificates' too."""
    # An existing Secret: `helm template` reads nothing from a cluster, so the TLS checksum is fixed.
    for mode, change, checksums in (
        ("scheduler", "profiles[0].schedulerName=gpu", {"checksum/config"}),
        ("extender", "extender.profile.schedulerName=gpu", {"checksum/config", "checksum/tls"}),
    ):
        args = ("--set", f"mode={mode}", "--set", "extender.tls.existingSecret=mine")
        before = pod_annotations(template(helm, *args))
        assert set(before) == checksums and pod_annotations(template(helm, *args)) == before
        after = pod_annotations(template(helm, *args, "--set", change))
        assert after["checksum/config"] != before["checksum/config"]
        assert after.get("checksum/tls") == before.get("checksum/tls")


def test_generated_certificates_change_the_extender_checksum(helm: str) -> None:
    """Without a cluster to read (`helm template`), every render makes new keys, and the pods'
    checksum says so: what the NOTES warn GitOps users of."""
    first, second = (template(helm, "--set", "mode=extender") for _ in range(2))
    assert secret_data(first) != secret_data(second)
    assert pod_annotations(first)["checksum/tls"] != pod_annotations(second)["checksum/tls"]
    assert pod_annotations(first)["checksum/config"] == pod_annotations(second)["checksum/config"]


def secret_data(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {d["metadata"]["name"]: d["data"] for d in of_kind(docs, "Secret")}


def check_chain(tls: dict[str, str], client: dict[str, str], host: str) -> None:
    """The serving certificate names `host` and chains to the CA kube-scheduler trusts (the client
    Secret's ca.crt); kube-scheduler's client certificate chains to the CA the extender trusts."""
    from cryptography import x509

    def cert(data: dict[str, str], key: str) -> x509.Certificate:
        return x509.load_pem_x509_certificate(base64.b64decode(data[key]))

    serving = cert(tls, "tls.crt")
    serving.verify_directly_issued_by(cert(client, "ca.crt"))
    cert(client, "tls.crt").verify_directly_issued_by(cert(tls, "ca.crt"))
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert host in names.get_values_for_type(x509.DNSName)


def test_extender_certificates_are_made_once_and_kept_by_upgrades(
    helm: str, control_plane: ControlPlane, api: ApiClient
) -> None:
    """helm install on the real API server, then upgrades: the chart reads its Secrets back
    (`lookup`), so kube-scheduler's client certificate keeps verifying and the pods do not roll."""
    namespace, release = f"chart-{uuid.uuid4().hex[:8]}", "keep"
    cluster = ("--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig_path))
    names = (f"{release}-extender-tls", f"{release}-extender-client")

    def stored() -> dict[str, dict[str, str]]:
        return {n: api.get(f"/api/v1/namespaces/{namespace}/secrets/{n}")["data"] for n in names}

    def deployment() -> dict[str, Any]:
        found: dict[str, Any] = api.get(
            f"/apis/apps/v1/namespaces/{namespace}/deployments/{release}-extender"
        )
        return found

    run(helm, "install", release, str(CHART), *cluster, "--create-namespace", "--set", "mode=extender")
    try:
        installed, template_before = stored(), deployment()["spec"]["template"]
        check_chain(installed[names[0]], installed[names[1]], f"{release}-extender.{namespace}.svc")
        for _ in range(2):  # two renders against the server: the same certificates, the same checksum
            out = run(
                helm,
                "upgrade",
                release,
                str(CHART),
                *cluster,
                "--reuse-values",
                "--dry-run=server",
                "-o",
                "json",
            )
            docs = [d for d in yaml.safe_load_all(json.loads(out)["manifest"]) if d]
            assert secret_data(docs) == installed
            assert pod_annotations(docs) == template_before["metadata"]["annotations"]
        run(helm, "upgrade", release, str(CHART), *cluster, "--reuse-values", "--set", "replicas=3")
        assert stored() == installed
        assert deployment()["spec"]["template"] == template_before  # nothing to roll
        run(helm, "upgrade", release, str(CHART), *cluster, "--reuse-values", "--set", "extender.prefix=/ext")
        assert stored() == installed
        annotations = deployment()["spec"]["template"]["metadata"]["annotations"]
        assert annotations["checksum/tls"] == template_before["metadata"]["annotations"]["checksum/tls"]
        assert annotations["checksum/config"] == template_before["metadata"]["annotations"]["checksum/config"]
    finally:
        run(helm, "uninstall", release, *cluster)


def test_cert_manager_issues_the_certificates_when_asked(
    helm: str, api: ApiClient, cert_manager_crds: None
) -> None:
    args = ("--set", "mode=extender", "--set", "extender.tls.certManager.enabled=true")
    out = helm_error(helm, "template", "kubesched", str(CHART), *args)
    assert "the cluster does not serve cert-manager.io/v1" in out, out
    docs = template(helm, *args, "--api-versions", "cert-manager.io/v1")
    assert (
        template(helm, *args, "--api-versions", "cert-manager.io/v1") == docs
    )  # no keys in git or in renders
    assert of_kind(docs, "Secret") == []
    certificates = {d["metadata"]["name"]: d["spec"] for d in of_kind(docs, "Certificate")}
    assert set(certificates) == {
        "kubesched-extender-ca",
        "kubesched-extender-tls",
        "kubesched-extender-client",
    }
    assert {d["metadata"]["name"] for d in of_kind(docs, "Issuer")} == {
        "kubesched-extender-selfsigned",
        "kubesched-extender-ca",
    }
    serving, client = certificates["kubesched-extender-tls"], certificates["kubesched-extender-client"]
    (deployment,) = of_kind(docs, "Deployment")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert serving["secretName"] == volumes["tls"]["secret"]["secretName"]
    assert "kubesched-extender.kube-system.svc" in serving["dnsNames"] and "server auth" in serving["usages"]
    assert client["secretName"] == "kubesched-extender-client" and "client auth" in client["usages"]
    assert serving["issuerRef"] == client["issuerRef"] == {
        "group": "cert-manager.io", "kind": "Issuer", "name": "kubesched-extender-ca",
    }  # fmt: skip
    for doc in docs:
        dry_run(api, doc)
    docs = template(
        helm, *args, "--api-versions", "cert-manager.io/v1",
        "--set", "extender.tls.certManager.issuerRef.kind=ClusterIssuer",
        "--set", "extender.tls.certManager.issuerRef.name=corp-ca",
    )  # fmt: skip
    assert of_kind(docs, "Issuer") == []
    assert [d["spec"]["issuerRef"] for d in of_kind(docs, "Certificate")] == [
        {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "corp-ca"}
    ] * 2


def notes(helm: str, control_plane: ControlPlane, *args: str) -> str:
    out = run(
        helm, "install", "kubesched", str(CHART), "--namespace", "kube-system", "--dry-run=client",
        "--kubeconfig", str(control_plane.kubeconfig_path), *args,
    )  # fmt: skip
    return out.split("NOTES:", 1)[1]


def test_notes_say_how_to_build_and_push_the_unpublished_image(
    helm: str, control_plane: ControlPlane
) -> None:
    """The commands are docs/image.md's, so the two cannot drift."""
    image_doc = (ROOT / "docs" / "image.md").read_text()
    for mode in ("scheduler", "extender"):
        text = notes(helm, control_plane, "--set", f"mode={mode}")
        assert "The image kubesched:0.1.0 is not published" in text
        for command in (
            "docker build -f deploy/Dockerfile -t registry.example.com/platform/kubesched:0.1.0 .",
            "docker push registry.example.com/platform/kubesched:0.1.0",
            "--set image.repository=registry.example.com/platform/kubesched",
        ):
            assert command in text and command in image_doc, command
    text = notes(helm, control_plane, "--set", "image.repository=registry.example.com/platform/kubesched")
    assert "not published" not in text and "docker build" not in text


def test_an_upgrade_over_an_older_selector_says_what_to_do(
    helm: str, control_plane: ControlPlane, api: ApiClient
) -> None:
    """Chart 0.1.0 selected pods on `app.kubernetes.io/name: <release>` alone. A selector cannot
    change in place, so the chart names the way out instead of the API server's "field is immutable"."""
    namespace, release = f"chart-{uuid.uuid4().hex[:8]}", "legacy"
    cluster = ("--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig_path))
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    run(helm, "install", release, str(CHART), *cluster, "--create-namespace")
    try:
        api.request("DELETE", f"{deployments}/{release}")
        old_labels = {"app.kubernetes.io/name": release}
        api.post(
            deployments,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": release, "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": old_labels},
                    "template": {
                        "metadata": {"labels": old_labels},
                        "spec": {"containers": [{"name": "kubesched", "image": "kubesched:0.1.0"}]},
                    },
                },
            },
        )
        out = helm_error(helm, "upgrade", release, str(CHART), *cluster, "--reuse-values")
        assert "a selector cannot change in place" in out, out
        assert f"kubectl delete deployment -n {namespace} {release}" in out, out
        api.request("DELETE", f"{deployments}/{release}")
        run(helm, "upgrade", release, str(CHART), *cluster, "--reuse-values")
        assert api.get(f"{deployments}/{release}")["spec"]["selector"]["matchLabels"] == {
            "app.kubernetes.io/name": "kubesched",
            "app.kubernetes.io/instance": release,
            "app.kubernetes.io/component": "scheduler",
        }
    finally:
        run(helm, "uninstall", release, *cluster)
