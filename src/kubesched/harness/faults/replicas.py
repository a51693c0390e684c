"""Scheduler replicas, kubesched's or kube-scheduler's, each authenticating as its own user."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.faults.model import Scale
from kubesched.harness.ports import free_port

__all__ = ["FLAVOURS", "Flavour", "Replica", "peak_rss_mib"]


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        pass
    return 0.0


@dataclass
class Replica:
    """One scheduler process, authenticating as its own user."""

    user: str
    proc: ManagedProcess
    rss: float = 0.0
    exited_at: float | None = None

    def note_rss(self) -> None:
        if self.proc.alive():
            self.rss = max(self.rss, peak_rss_mib(self.proc.pid))

    def signal(self, sig: int) -> None:
        self.note_rss()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.proc.alive() and time.monotonic() < deadline:
            self.note_rss()
            time.sleep(0.02)
        if self.proc.alive():
            return None
        if self.exited_at is None:
            self.exited_at = time.time()
        return self.proc.popen.returncode


class Flavour:
    """How to start a replica of one scheduler implementation."""

    name = ""
    scheduler_name = ""

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        raise NotImplementedError


class Kubesched(Flavour):
    name = "kubesched"
    scheduler_name = "kubesched"

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        duration, deadline, retry = scale.lease
        port = free_port()
        config = cp.workdir / f"{user}-{port}.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection: {{qps: {scale.qps}, burst: {scale.burst}}}\n"
            f"leaderElection: {{leaderElect: {str(leader_elect).lower()}, resourceName: {lease}, "
            f"resourceNamespace: default, leaseDuration: {duration}s, renewDeadline: {deadline}s, "
            f"retryPeriod: {retry}s}}\n"
            f"profiles:\n- schedulerName: {self.scheduler_name}\n"
        )
        args = [
            sys.executable, "-m", "kubesched.cli", "run", "--config", str(config),
            "--kubeconfig", str(cp.kubeconfig_for(user)),
            "--secure-port", "0", "--insecure-listen", f"127.0.0.1:{port}",
        ]  # fmt: skip
        log = cp.workdir / "logs" / f"kubesched-{user}-{port}.log"
        proc = ManagedProcess(f"kubesched-{user}", args, log, port=port, env={"PYTHONUNBUFFERED": "1"})
        _wait_http(f"http://127.0.0.1:{port}/livez", proc)
        return Replica(user, proc)


class Upstream(Flavour):
    name = "kube-scheduler"
    scheduler_name = "default-scheduler"

    def start(self, cp: ControlPlane, user: str, lease: str, scale: Scale, leader_elect: bool) -> Replica:
        duration, deadline, retry = scale.lease
        proc = cp.start_kube_scheduler(
            {
                "clientConnection": {
                    "kubeconfig": str(cp.kubeconfig_for(user)),
                    "qps": scale.qps,
                    "burst": scale.burst,
                },
                "leaderElection": {
                    "leaderElect": leader_elect,
                    "resourceName": lease,
                    "resourceNamespace": "default",
                    "leaseDuration": f"{duration}s",
                    "renewDeadline": f"{deadline}s",
                    "retryPeriod": f"{retry}s",
                },
                "profiles": [{"schedulerName": self.scheduler_name}],
            },
            wait_ready=False,
        )
        _wait_http(f"https://127.0.0.1:{proc.port}/livez", proc)
        return Replica(user, proc)


FLAVOURS: dict[str, Flavour] = {"kubesched": Kubesched(), "kube-scheduler": Upstream()}


def _wait_http(url: str, proc: ManagedProcess, timeout: float = 90.0) -> None:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{proc.name} not alive after {timeout:.0f} s:\n{proc.log_tail()}")
