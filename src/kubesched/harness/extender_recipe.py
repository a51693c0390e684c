"""The extender recipe of docs/extender.md on the local control plane: `kubesched extender` serving
NodeFilterLabel over mutual TLS, and an upstream kube-scheduler (profile `extended-scheduler`) whose
config calls it, as a cluster would run them. `make cluster CLUSTER_ARGS=--extender` starts it for a
person; tests/integration/test_extender_recipe.py checks that it schedules.
"""

from __future__ import annotations

import ssl
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kubesched.harness.controlplane import ControlPlane, ControlPlaneError, ManagedProcess
from kubesched.harness.pki import TestCA
from kubesched.harness.ports import free_port

__all__ = ["SCHEDULER_NAME", "ExtenderRecipe", "start_extender_recipe"]

SCHEDULER_NAME = "extended-scheduler"
EXTENDER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: extender
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeFilterLabel}]
  pluginConfig:
  - name: NodeFilterLabel
    args: {labels: {node: [hello]}}
"""


@dataclass(frozen=True)
class ExtenderRecipe:
    """What was started, and what a person needs to call the extender with curl."""

    url: str
    ca_file: Path
    client_cert: Path
    client_key: Path
    extender: ManagedProcess
    kube_scheduler: ManagedProcess

    def curl(self, verb: str) -> str:
        return (
            f"curl --cacert {self.ca_file} --cert {self.client_cert} --key {self.client_key} "
            f"-H 'Content-Type: application/json' -d @args.json {self.url}/{verb}"
        )


def start_extender_recipe(cp: ControlPlane, timeout: float = 90.0) -> ExtenderRecipe:
    """Start both on `cp` (stopped with it); returns once both answer /readyz."""
    work = cp.workdir / "extender-recipe"
    work.mkdir(exist_ok=True)
    ca = TestCA(work, "kubesched-extender-ca")
    server_cert, server_key = ca.server("kubesched-extender", "127.0.0.1", "localhost")
    client_cert, client_key = ca.client("kube-scheduler")
    config = work / "extender.yaml"
    config.write_text(EXTENDER_CONFIG)
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "kubesched.cli",
        "extender",
        f"--config={config}",
        f"--kubeconfig={cp.kubeconfig_path}",
    ]
    args += [f"--listen=127.0.0.1:{port}", "--prefix=/scheduler", f"--tls-cert-file={server_cert}"]
    args += [f"--tls-private-key-file={server_key}", f"--client-ca-file={ca.ca_file}"]
    extender = ManagedProcess(
        "kubesched-extender", args, cp.workdir / "logs" / "kubesched-extender.log", port=port
    )
    cp._extra_processes.append(extender)  # stopped with the control plane, by pid
    url = f"https://127.0.0.1:{port}/scheduler"
    _wait_ready(
        extender,
        f"https://127.0.0.1:{port}/readyz",
        ssl.create_default_context(cafile=str(ca.ca_file)),
        timeout,
    )
    tls = {"caFile": str(ca.ca_file), "certFile": str(client_cert), "keyFile": str(client_key)}
    kube_scheduler = cp.start_kube_scheduler(
        {
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SCHEDULER_NAME}],
            "extenders": [
                {
                    "urlPrefix": url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "preemptVerb": "preempt",
                    "bindVerb": "bind",
                    "weight": 1,
                    "nodeCacheCapable": True,
                    "enableHTTPS": True,
                    "tlsConfig": tls,
                    "httpTimeout": "5s",
                }
            ],
        }
    )
    return ExtenderRecipe(url, ca.ca_file, client_cert, client_key, extender, kube_scheduler)


def _wait_ready(proc: ManagedProcess, url: str, context: ssl.SSLContext, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise ControlPlaneError(f"{proc.name} exited; last lines of {proc.log_path}:\n{proc.log_tail()}")
        try:
            with urllib.request.urlopen(url, context=context, timeout=5) as resp:
                if resp.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise ControlPlaneError(f"{proc.name} not ready after {timeout:.0f} s:\n{proc.log_tail()}")
