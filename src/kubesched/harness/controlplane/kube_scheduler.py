"""The upstream kube-scheduler as the peer kubesched is compared with: its configuration, with the
defaults that let it keep up, its flags, and the wait for its informers to sync."""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubesched.harness.controlplane.process import (
    ControlPlaneError,
    ManagedProcess,
    PortInUse,
    http_get,
    wait_ready,
)

__all__ = ["scheduler_args", "scheduler_config", "wait_scheduler_ready"]


def scheduler_config(config_yaml: str | Mapping[str, Any] | None, kubeconfig: Path) -> dict[str, Any]:
    """A KubeSchedulerConfiguration (YAML text or a mapping; default: one `default-scheduler`
    profile) given, unless it says otherwise, `kubeconfig`, `leaderElect: false` and client
    qps/burst 5000/10000: with `--config` the scheduler ignores the equivalent command-line flags,
    and its default of 50 qps would cap binding at 50 pods/s."""
    if config_yaml is None:
        config: dict[str, Any] = {}
    elif isinstance(config_yaml, str):
        loaded = yaml.safe_load(config_yaml)
        if not isinstance(loaded, dict):
            raise ControlPlaneError("config_yaml must be a KubeSchedulerConfiguration mapping")
        config = loaded
    else:
        config = json.loads(json.dumps(config_yaml))  # deep copy; the caller's mapping is left alone
    config.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
    config.setdefault("kind", "KubeSchedulerConfiguration")
    conn = config.setdefault("clientConnection", {})
    conn.setdefault("kubeconfig", str(kubeconfig))
    conn.setdefault("qps", 5000)
    conn.setdefault("burst", 10000)
    config.setdefault("leaderElection", {}).setdefault("leaderElect", False)
    return config


def scheduler_args(binary: Path, config_path: Path, port: int, extra: Sequence[str]) -> list[str]:
    """Serving on loopback `port`, its health and metrics open to anyone; `extra` is appended last."""
    return [
        str(binary),
        f"--config={config_path}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--v=1",
        *extra,
    ]


def wait_scheduler_ready(proc: ManagedProcess, timeout: float, path: str = "/readyz") -> None:
    """Until `path` (`/readyz`: its informers have synced) answers 200; on failure `proc` is stopped.
    kube-controller-manager serves the same way (its `/healthz`)."""
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE  # its serving cert is self-signed in memory
    url = f"https://127.0.0.1:{proc.port}{path}"
    try:
        wait_ready(proc, lambda: http_get(url, unverified)[0] == 200, timeout)
    except PortInUse:
        proc.stop()
        raise ControlPlaneError(f"port {proc.port} for {proc.name} was taken; try again") from None
    except ControlPlaneError:
        proc.stop()
        raise
