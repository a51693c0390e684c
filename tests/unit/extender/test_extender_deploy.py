"""deploy/extender/: the manifests parse, their configurations are valid, and they agree with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubesched.cli import main
from kubesched.config import decode_config
from kubesched.plugins import default_registry

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "extender"


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def by_kind(name: str, kind: str) -> dict[str, Any]:
    return next(d for d in docs(name) if d["kind"] == kind)


def test_the_extender_profile_is_valid_and_lean() -> None:
    text = by_kind("config.yaml", "ConfigMap")["data"]["config.yaml"]
    cfg = decode_config(text, "config.yaml", default_registry())
    plugins = cfg.profiles[0].plugins
    assert plugins is not None and plugins.multi_point is not None
    assert [p.name for p in plugins.multi_point.disabled] == ["*"]


def test_the_second_kube_scheduler_points_at_the_service() -> None:
    text = by_kind("kube-scheduler-config.yaml", "ConfigMap")["data"]["config.yaml"]
    cfg = decode_config(text, "kube-scheduler-config.yaml", default_registry())
    (ext,) = cfg.extenders
    service = next(d for d in docs("deployment.yaml") if d["kind"] == "Service")
    port = service["spec"]["ports"][0]["port"]
    assert ext.url_prefix == f"https://{service['metadata']['name']}.kube-system.svc:{port}/scheduler"
    assert ext.enable_https and ext.tls_config is not None
    assert ext.tls_config.cert_file and ext.tls_config.key_file and ext.tls_config.ca_file
    assert ext.node_cache_capable and ext.filter_verb == "filter"
    assert cfg.leader_election is not None and cfg.leader_election.resource_name != "kube-scheduler"


def test_the_deployment_runs_the_extender_with_the_service_account_and_prefix() -> None:
    deployment = by_kind("deployment.yaml", "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == by_kind("rbac.yaml", "ServiceAccount")["metadata"]["name"]
    args = pod["containers"][0]["args"]
    assert args[0] == "extender" and "--in-cluster" in args and "--prefix=/scheduler" in args
    # Secure by default: HTTPS, and callers must present a client certificate signed by ca.crt.
    flags = dict(a.split("=", 1) for a in args[1:] if "=" in a)
    assert flags["--client-ca-file"].endswith("/ca.crt") and flags["--tls-cert-file"].endswith("/tls.crt")
    container = pod["containers"][0]
    assert {container[p]["httpGet"]["scheme"] for p in ("readinessProbe", "livenessProbe")} == {"HTTPS"}


def test_rbac_allows_the_informers_and_binding() -> None:
    rules = by_kind("rbac.yaml", "ClusterRole")["rules"]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    for resource in ("nodes", "pods"):
        for verb in ("get", "list", "watch"):
            assert (resource, verb) in granted
    assert ("pods/binding", "create") in granted


def test_cli_rejects_an_unknown_profile(tmp_path: Path, capsys: Any) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(by_kind("config.yaml", "ConfigMap")["data"]["config.yaml"])
    code = main(["extender", "--config", str(cfg), "--profile", "nope", "--listen", "127.0.0.1:0"])
    assert code == 2
    assert "no profile named 'nope' (profiles: extender)" in capsys.readouterr().err


def test_cli_rejects_a_bad_listen_address(tmp_path: Path, capsys: Any) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(by_kind("config.yaml", "ConfigMap")["data"]["config.yaml"])
    assert main(["extender", "--config", str(cfg), "--listen", "nowhere"]) == 2
    assert "--listen: expected HOST:PORT" in capsys.readouterr().err


def test_cli_refuses_open_bind_with_cluster_credentials(tmp_path: Path, capsys: Any) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(by_kind("config.yaml", "ConfigMap")["data"]["config.yaml"])
    kubeconfig = tmp_path / "kubeconfig"
    code = main(
        ["extender", "--config", str(cfg), "--kubeconfig", str(kubeconfig), "--listen", "127.0.0.1:0"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(
        "kubesched: --kubeconfig: refusing to serve bind and preempt without authentication"
    )


def test_cli_without_write_verbs_or_credentials_needs_no_authentication() -> None:
    """Filter-only or stateless extenders hold nothing to abuse: the refusal does not apply (checked
    without serving: the refusal comes before any connection is made)."""
    import argparse

    from kubesched.cli.extender import _refuse_open_writes

    base = {"client_ca_file": None, "token_file": None, "allow_unauthenticated": False, "in_cluster": False}
    _refuse_open_writes(argparse.Namespace(**base, kubeconfig=None), {"bind": "/bind"})
    _refuse_open_writes(argparse.Namespace(**base, kubeconfig="k"), {"filter": "/filter"})
    _refuse_open_writes(
        argparse.Namespace(**{**base, "allow_unauthenticated": True}, kubeconfig="k"), {"bind": "/b"}
    )
