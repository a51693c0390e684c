"""The ControlPlane: etcd + kube-apiserver (and, on request, kube-scheduler peers) started on loopback
in one temporary directory, and stopped by pid, even after a failure."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from kubesched.harness.controlplane import apiserver, etcd
from kubesched.harness.controlplane.binaries import KubeBinaries, find_binaries, find_kube_controller_manager
from kubesched.harness.controlplane.kube_scheduler import (
    scheduler_args,
    scheduler_config,
    wait_scheduler_ready,
)
from kubesched.harness.controlplane.process import (
    ControlPlaneError,
    ManagedProcess,
    PortInUse,
    http_get,
    wait_ready,
)
from kubesched.harness.controlplane.workdir import (
    OWNER_FILE,
    WORKDIR_PREFIX,
    default_workdir_parent,
    sweep_stale_workdirs,
)
from kubesched.harness.pki import write_control_plane_pki
from kubesched.harness.ports import free_ports

__all__ = ["DEFAULT_START_TIMEOUT", "ControlPlane"]

#: Seconds to wait for etcd + kube-apiserver to become ready. Two shared cores under a parallel test run
#: can take several times the ~5 s a quiet machine needs, hence the generous default.
DEFAULT_START_TIMEOUT = float(os.environ.get("KUBESCHED_CONTROLPLANE_TIMEOUT", "90"))


class ControlPlane:
    """etcd + kube-apiserver on loopback, with a ``system:masters`` token and a kubeconfig.

    The apiserver runs with the flags that make a kubelet-less cluster usable for scheduling
    (`apiserver.apiserver_args`); ``extra_apiserver_args`` is appended last, so it can override any
    of them. A ControlPlane is used once: start, use, stop.
    """

    def __init__(
        self,
        *,
        binaries: KubeBinaries | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        workdir_parent: str | os.PathLike[str] | None = None,
        extra_apiserver_args: Sequence[str] = (),
        extra_etcd_args: Sequence[str] = (),
        keep_workdir: bool = False,
        users: Sequence[str] = (),
        audit_bindings: bool = False,
        runtime_config: Sequence[str] = (),
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self._binaries = binaries
        #: Extra users (all `system:masters`), each with its own token and kubeconfig
        #: (`kubeconfig_for`): the audit log then tells their requests apart.
        self.user_tokens = {user: secrets.token_hex(24) for user in users}
        #: Log every `pods/binding` request (who, when, which node, the answer) to `audit_log_path`:
        #: fault tests read what really reached the API server from it.
        self.audit_bindings = audit_bindings
        self._api_args: list[str] = []
        self.start_timeout = start_timeout
        self._workdir_parent = str(workdir_parent) if workdir_parent is not None else default_workdir_parent()
        #: `--runtime-config` entries (`scheduling.k8s.io/v1beta1=true`) and `--feature-gates` of the
        #: API server, before `extra_apiserver_args`: APIs that are off by default, such as the
        #: workload-aware scheduling kinds, need both.
        gate_text = ",".join(f"{k}={str(v).lower()}" for k, v in (feature_gates or {}).items())
        self._extra_apiserver_args = [
            *([f"--runtime-config={','.join(runtime_config)}"] if runtime_config else []),
            *([f"--feature-gates={gate_text}"] if gate_text else []),
            *extra_apiserver_args,
        ]
        self._extra_etcd_args = list(extra_etcd_args)
        self.keep_workdir = keep_workdir
        self.token = secrets.token_hex(24)
        self._workdir: Path | None = None
        self._server: str | None = None
        self._etcd_url: str | None = None
        self.etcd: ManagedProcess | None = None
        self.apiserver: ManagedProcess | None = None
        self._extra_processes: list[ManagedProcess] = []
        #: Seconds from launch to ready, per component; benchmarks and reports quote them.
        self.startup_seconds: dict[str, float] = {}

    # ---- properties valid once started

    @staticmethod
    def _not_started(what: str) -> ControlPlaneError:
        return ControlPlaneError(f"{what} is known only after ControlPlane.start()")

    @property
    def workdir(self) -> Path:
        """The temp dir holding certs, tokens, kubeconfig, etcd data and ``logs/``."""
        if self._workdir is None:
            raise self._not_started("workdir")
        return self._workdir

    @property
    def server(self) -> str:
        """``https://127.0.0.1:<port>`` of the kube-apiserver."""
        if self._server is None:
            raise self._not_started("server")
        return self._server

    @property
    def etcd_url(self) -> str:
        if self._etcd_url is None:
            raise self._not_started("etcd_url")
        return self._etcd_url

    @property
    def ca_file(self) -> Path:
        """The CA that signed the apiserver's serving certificate."""
        return self.workdir / "pki" / "ca.crt"

    @property
    def kubeconfig_path(self) -> Path:
        """A kubeconfig (token auth, embedded CA) usable by kubectl, kube-scheduler and Python clients."""
        return self.workdir / "kubeconfig"

    @property
    def binaries(self) -> KubeBinaries:
        if self._binaries is None:
            self._binaries = find_binaries()
        return self._binaries

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context trusting only this control plane's CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    # ---- lifecycle

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start etcd then kube-apiserver and wait for ``/readyz``; on any failure stop what was started.

        A port taken between choosing it and binding it is retried with fresh ports (twice); any
        other failure raises ``ControlPlaneError`` quoting the tail of the logs.
        """
        if self._workdir is not None:
            raise ControlPlaneError("this ControlPlane was already started; make a new one")
        binaries = self.binaries  # may build; done before the clock for startup starts
        atexit.register(self.stop)
        try:
            parent = Path(self._workdir_parent or tempfile.gettempdir())
            sweep_stale_workdirs(parent)
            self._workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent))
            (self.workdir / OWNER_FILE).write_text(f"{os.getpid()}\n")
            write_control_plane_pki(self.workdir / "pki")
            apiserver.write_tokens(
                self.workdir / "tokens.csv", {apiserver.ADMIN: self.token, **self.user_tokens}
            )
            if self.audit_bindings:
                (self.workdir / "audit-policy.yaml").write_text(apiserver.AUDIT_POLICY)
            for attempt in range(3):
                try:
                    self._launch(binaries)
                    break
                except PortInUse:
                    self._stop_processes()
                    if attempt == 2:
                        raise ControlPlaneError(
                            "loopback ports kept being taken; is something racing us?"
                        ) from None
            self._write_kubeconfigs()
        except BaseException:
            self.stop()
            raise

    def _launch(self, binaries: KubeBinaries) -> None:
        etcd_port, peer_port, api_port = free_ports(3)
        run = self.workdir / "logs"
        run.mkdir(exist_ok=True)
        data = self.workdir / "etcd-data"
        shutil.rmtree(data, ignore_errors=True)
        etcd_url = self._etcd_url = f"http://127.0.0.1:{etcd_port}"
        etcd_args = etcd.etcd_args(
            binaries.etcd, data, etcd_url, f"http://127.0.0.1:{peer_port}", self._extra_etcd_args
        )
        t0 = time.monotonic()
        self.etcd = ManagedProcess("etcd", etcd_args, run / "etcd.log", port=etcd_port)
        wait_ready(self.etcd, lambda: etcd.healthy(etcd_url), self.start_timeout)
        self.startup_seconds["etcd"] = time.monotonic() - t0

        self._server = f"https://127.0.0.1:{api_port}"
        self._api_args = apiserver.apiserver_args(
            binaries.kube_apiserver,
            self.workdir,
            etcd_url,
            api_port,
            audit_log=self.audit_log_path if self.audit_bindings else None,
            extra=self._extra_apiserver_args,
        )
        t0 = time.monotonic()
        self._start_apiserver(api_port)
        self.startup_seconds["kube-apiserver"] = time.monotonic() - t0

    def _start_apiserver(self, port: int) -> None:
        log = self.workdir / "logs" / "kube-apiserver.log"
        self.apiserver = ManagedProcess("kube-apiserver", self._api_args, log, port=port)
        context, readyz = self.ssl_context(), f"{self.server}/readyz"
        wait_ready(self.apiserver, lambda: http_get(readyz, context) == (200, "ok"), self.start_timeout)

    @property
    def audit_log_path(self) -> Path:
        """JSON lines, one audit event per `pods/binding` request (with `audit_bindings=True`)."""
        return self.workdir / "logs" / "audit.log"

    def kubeconfig_for(self, user: str) -> Path:
        """A kubeconfig authenticating as one of `users` (written at start)."""
        return self.workdir / f"kubeconfig-{user}"

    def restart_apiserver(self, while_down: Callable[[], None] | None = None) -> float:
        """Stop kube-apiserver, run `while_down()`, start it again on the same port; returns the
        seconds it was not answering. etcd (and so every object) is untouched."""
        if self.apiserver is None or self.apiserver.port is None:
            raise ControlPlaneError("the API server is not running")
        stopped = time.monotonic()
        self.apiserver.stop()
        if while_down is not None:
            while_down()
        self._start_apiserver(self.apiserver.port)
        return time.monotonic() - stopped

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision; returns the revision (see `etcd.compact`)."""
        return etcd.compact(self.etcd_url)

    def _write_kubeconfigs(self) -> None:
        apiserver.write_kubeconfig(
            self.kubeconfig_path, self.server, self.ca_file, apiserver.ADMIN, self.token
        )
        for user, token in self.user_tokens.items():
            apiserver.write_kubeconfig(self.kubeconfig_for(user), self.server, self.ca_file, user, token)

    def _stop_processes(self) -> None:
        # Dependents first: schedulers, then the apiserver, then etcd (which must outlive its clients).
        for proc in [*reversed(self._extra_processes), self.apiserver, self.etcd]:
            if proc is not None:
                proc.stop()
        self._extra_processes.clear()
        self.apiserver = None
        self.etcd = None

    def stop(self) -> None:
        """Stop every process we started and remove the temp dir (unless ``keep_workdir``). Idempotent."""
        atexit.unregister(self.stop)
        try:
            self._stop_processes()
        finally:
            if self._workdir is not None and not self.keep_workdir:
                shutil.rmtree(self._workdir, ignore_errors=True)

    def track(self, proc: ManagedProcess) -> ManagedProcess:
        """Stop `proc` (a process started against this control plane) with the control plane."""
        self._extra_processes.append(proc)
        return proc

    def start_kube_controller_manager(
        self, controllers: Sequence[str], *, feature_gates: Mapping[str, bool] | None = None
    ) -> ManagedProcess:
        """Start the upstream kube-controller-manager running only `controllers` (its names:
        `job-controller`, `garbage-collector-controller`, ...), as the peer kubesched's simulated
        controllers are compared with. Returns once it serves `/healthz`; stopped with the plane."""
        (port,) = free_ports(1)
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in (feature_gates or {}).items())
        args = [
            str(find_kube_controller_manager()),
            f"--kubeconfig={self.kubeconfig_path}",
            f"--controllers={','.join(controllers)}",
            *([f"--feature-gates={gates}"] if gates else []),
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--v=2",
        ]
        name = f"kube-controller-manager-{len(self._extra_processes)}"
        proc = self.track(ManagedProcess(name, args, self.workdir / "logs" / f"{name}.log", port=port))
        t0 = time.monotonic()
        wait_scheduler_ready(proc, self.start_timeout, path="/healthz")
        self.startup_seconds[name] = time.monotonic() - t0
        return proc

    def start_kube_scheduler(
        self,
        config_yaml: str | Mapping[str, Any] | None = None,
        *,
        extra_args: Sequence[str] = (),
        wait_ready: bool = True,
        cpus: Collection[int] | None = None,
    ) -> ManagedProcess:
        """Start the upstream kube-scheduler against this control plane, as the peer we compare with.

        ``config_yaml`` is a KubeSchedulerConfiguration, completed by `scheduler_config`. Returns
        once ``/readyz`` says its informers have synced, so pods created afterwards are scheduled
        promptly. It is stopped with the control plane, or earlier with ``.stop()``. ``cpus`` pins
        it to those CPUs (a benchmark's fair share).
        """
        index = len(self._extra_processes)
        config_path = self.workdir / f"kube-scheduler-{index}.yaml"
        config = scheduler_config(config_yaml, self.kubeconfig_path)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        (port,) = free_ports(1)
        args = scheduler_args(self.binaries.kube_scheduler, config_path, port, extra_args)
        name = f"kube-scheduler-{index}"
        log = self.workdir / "logs" / f"{name}.log"
        proc = self.track(ManagedProcess(name, args, log, port=port, cpus=cpus))
        if wait_ready:
            t0 = time.monotonic()
            wait_scheduler_ready(proc, self.start_timeout)
            self.startup_seconds[name] = time.monotonic() - t0
        return proc
