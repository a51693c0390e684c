"""The default profile is v1.37.2's: `kubesched config defaults` against `kube-scheduler --write-config-to`.

The built upstream binary writes its effective configuration without needing a reachable API server
(the kubeconfig only has to parse). Compared: the multiPoint plugins in order with their weights, and
every plugin's args — so the next upstream change to the default profile fails here, not in a user's
cluster. Both sides are normalised the same way: a weight left unset is 0, empty lists and maps are
dropped (Go omits them, kubesched may write `[]`), and pluginConfig is keyed by plugin name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubesched.harness.controlplane import find_binaries

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
"""


def _upstream(tmp_path: Path) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    out = tmp_path / "upstream.yaml"
    proc = subprocess.run(
        [str(find_binaries().kube_scheduler), "--write-config-to", str(out), "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.is_file(), f"kube-scheduler did not write its configuration:\n{proc.stderr[-2000:]}"
    loaded: dict[str, Any] = yaml.safe_load(out.read_text())
    return loaded


def _ours() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "config", "defaults"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded: dict[str, Any] = yaml.safe_load(proc.stdout)
    return loaded


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _profile(config: dict[str, Any]) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    (profile,) = config["profiles"]
    enabled = profile["plugins"]["multiPoint"]["enabled"]
    plugins = [(p["name"], int(p.get("weight") or 0)) for p in enabled]
    args = {pc["name"]: _pruned(pc["args"]) for pc in profile.get("pluginConfig", [])}
    return plugins, args


def test_default_profile_is_the_binarys(tmp_path: Path) -> None:
    upstream_plugins, upstream_args = _profile(_upstream(tmp_path))
    our_plugins, our_args = _profile(_ours())
    assert our_plugins == upstream_plugins
    assert our_args == upstream_args
    # The plugins this issue added, as the binary has them.
    assert ("DynamicResources", 2) in upstream_plugins and upstream_plugins[-1] == ("NodeDeclaredFeatures", 0)
    assert upstream_args["DynamicResources"]["filterTimeout"] == "10s"
    assert upstream_args["DynamicResources"]["bindingTimeout"] == "10m0s"
