"""A real, throw-away Kubernetes control plane (etcd + kube-apiserver, optionally kube-scheduler).

Integration tests and benchmarks run against the genuine API server rather than a mock, because what
matters there (binding conflicts, resourceVersions, watch semantics, admission, throttling) is exactly
what a mock gets subtly wrong. The binaries are built from the Go module pinned in ``tools/kube`` by
``tools/kube/build.sh`` (cached outside the clone) or taken from ``KUBESCHED_KUBE_BIN``.

Everything a run needs lives in one temporary directory (on tmpfs when there is room, so etcd never
waits on a disk): certificates, the static token file, the kubeconfig, etcd's data and every process's
log. The processes listen on loopback ports picked at run time, so parallel test workers do not
collide, and are stopped by pid (never by name) when the context manager exits, even after a failure.

Usage::

    with ControlPlane() as cp:
        subprocess.run(["kubectl", "--kubeconfig", str(cp.kubeconfig_path), "get", "nodes"])

``python -m kubesched.testing.controlplane`` starts one for a person and waits for Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from kubesched.harness.pki import write_control_plane_pki
from kubesched.harness.ports import free_ports

__all__ = [
    "ControlPlane",
    "ControlPlaneError",
    "KubeBinaries",
    "ManagedProcess",
    "find_binaries",
    "find_kubectl",
]

#: Seconds to wait for etcd + kube-apiserver to become ready. Two shared cores under a parallel test run
#: can take several times the ~5 s a quiet machine needs, hence the generous default.
DEFAULT_START_TIMEOUT = float(os.environ.get("KUBESCHED_CONTROLPLANE_TIMEOUT", "90"))
#: Seconds a process gets to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 10.0
#: Lines of each log file quoted in a startup error: enough for the real cause, short enough to read.
LOG_TAIL_LINES = 40
#: Where tools/kube/build.sh lives when running from a source checkout (src layout).
BUILD_SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "kube" / "build.sh"
#: Builds kubectl (same Kubernetes version, its own module and cache entry) and prints its directory.
KUBECTL_BUILD_SCRIPT = BUILD_SCRIPT.with_name("build-kubectl.sh")
BINARY_NAMES = ("etcd", "kube-apiserver", "kube-scheduler")


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached; the message says which and why."""


# --------------------------------------------------------------------------------------------------
# binaries


@dataclass(frozen=True)
class KubeBinaries:
    """Paths of the three binaries, all from one build so their versions match."""

    directory: Path

    @property
    def etcd(self) -> Path:
        return self.directory / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.directory / "kube-apiserver"

    @property
    def kube_scheduler(self) -> Path:
        return self.directory / "kube-scheduler"


def _checked_binaries(directory: Path, origin: str) -> KubeBinaries:
    missing = [n for n in BINARY_NAMES if not os.access(directory / n, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{origin} {directory} lacks executable {', '.join(missing)}")
    return KubeBinaries(directory)


def binaries_built() -> bool:
    """Whether the three binaries exist already (`KUBESCHED_KUBE_BIN`, or a finished build in the
    cache), so a caller can leave out what needs them instead of starting a ~6-minute build."""
    prebuilt = os.environ.get("KUBESCHED_KUBE_BIN")
    if prebuilt:
        directories = [Path(prebuilt)]
    else:
        root = Path(os.environ.get("KUBESCHED_KUBE_CACHE") or Path.home() / ".cache" / "kubesched")
        directories = [d for d in root.glob("kube-v*") if d.is_dir() and not d.name.endswith(".partial")]
    return any(all(os.access(d / n, os.X_OK) for n in BINARY_NAMES) for d in directories)


@functools.cache
def find_binaries() -> KubeBinaries:
    """Locate (building on first use) etcd, kube-apiserver and kube-scheduler.

    ``KUBESCHED_KUBE_BIN`` wins, so a machine with prebuilt binaries never needs Go. Otherwise
    ``tools/kube/build.sh`` is run: it returns at once from its cache, or builds (about 6 minutes cold
    on 2 cores) with its progress on our stderr, so a person sees why the first run is slow.
    """
    prebuilt = os.environ.get("KUBESCHED_KUBE_BIN")
    if prebuilt:
        return _checked_binaries(Path(prebuilt), "KUBESCHED_KUBE_BIN=")
    if not BUILD_SCRIPT.is_file():
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} not found: kubesched is not running from a source checkout. "
            "Set KUBESCHED_KUBE_BIN to a directory holding etcd, kube-apiserver and kube-scheduler."
        )
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); its stderr above says why. "
            "It needs Go (see tools/kube/go.mod) and the Go module proxy, or set KUBESCHED_KUBE_BIN."
        )
    return _checked_binaries(Path(lines[-1]), "tools/kube/build.sh output")


@functools.cache
def find_kubectl() -> Path:
    """The directory of a kubectl of the control plane's version: `KUBESCHED_KUBECTL`, or built by
    `tools/kube/build-kubectl.sh` (cached; about 2 minutes the first time)."""
    prebuilt = os.environ.get("KUBESCHED_KUBECTL")
    if prebuilt:
        return Path(prebuilt).resolve().parent
    if not KUBECTL_BUILD_SCRIPT.is_file():
        raise ControlPlaneError(
            f"{KUBECTL_BUILD_SCRIPT} not found: set KUBESCHED_KUBECTL to a kubectl binary instead"
        )
    proc = subprocess.run(
        ["bash", str(KUBECTL_BUILD_SCRIPT)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{KUBECTL_BUILD_SCRIPT} failed (exit {proc.returncode}); its stderr above says why. "
            "Set KUBESCHED_KUBECTL to a kubectl binary instead."
        )
    return Path(lines[-1])


@functools.cache
def _binary_supports(binary: Path, flag: str) -> bool:
    """Whether ``binary --help`` mentions ``flag``; lets a prebuilt older etcd still work."""
    out = subprocess.run(
        [str(binary), "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return flag in out.stdout or flag in out.stderr


# --------------------------------------------------------------------------------------------------
# processes


def _parent_death_signal() -> Callable[[], None] | None:
    """A preexec hook asking Linux to SIGKILL the child if we die without cleaning up.

    Without it a crashed or SIGKILLed test run would leave an apiserver and etcd holding memory and
    ports until someone notices. SIGKILL, not SIGTERM: both servers get the signal at once, and an
    apiserver whose etcd has already gone hangs in its graceful shutdown. The temp dir left behind is
    swept by the next ``ControlPlane.start``. The libc function is resolved here, before any fork, so
    the child runs nothing but one system call.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl
    pr_set_pdeathsig = 1
    sigkill = int(signal.SIGKILL)

    def hook() -> None:
        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)

    return hook


_PDEATHSIG_HOOK = _parent_death_signal()


class ManagedProcess:
    """One server process we started: its log file, and a stop that never leaves it running."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        log_path: Path,
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.args = list(args)
        self.log_path = log_path
        self.port = port
        with open(log_path, "ab") as log:
            self.popen: subprocess.Popen[bytes] = subprocess.Popen(
                self.args,
                env=None if env is None else {**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal reaches us, not the servers directly
                preexec_fn=_PDEATHSIG_HOOK,
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the log, for error messages."""
        try:
            data = self.log_path.read_bytes()
        except OSError as exc:
            return f"(cannot read {self.log_path}: {exc})"
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM, wait, then SIGKILL; returns the exit code. Safe to call twice."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.popen.kill()
                self.popen.wait()
        return self.popen.returncode

    def __repr__(self) -> str:
        state = "running" if self.alive() else f"exited {self.popen.returncode}"
        return f"<ManagedProcess {self.name} pid={self.pid} {state} log={self.log_path}>"


def http_get(url: str, context: ssl.SSLContext | None, timeout: float = 5.0) -> tuple[int, str]:
    """GET returning (status, body); connection errors become status 0 so pollers just retry."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ssl.SSLError) as exc:
        return 0, str(exc)


# --------------------------------------------------------------------------------------------------
# the control plane


def _default_workdir_parent() -> str | None:
    """tmpfs when it has room: etcd's writes then cost no disk I/O and vanish with the run."""
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2 * 1024**3:
            return str(shm)
    except OSError:
        pass
    return None


WORKDIR_PREFIX = "kubesched-cp-"
OWNER_FILE = "owner.pid"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_workdirs(parent: Path) -> None:
    """Remove temp dirs of control planes whose owning process died without cleaning up.

    They are on tmpfs (memory) by default, so they must not pile up. Only dirs that name their owner
    in ``owner.pid`` are touched, and only when that process is gone.
    """
    for candidate in parent.glob(f"{WORKDIR_PREFIX}*"):
        try:
            owner = int((candidate / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if not _pid_alive(owner):
            shutil.rmtree(candidate, ignore_errors=True)


class ControlPlane:
    """etcd + kube-apiserver on loopback, with a ``system:masters`` token and a kubeconfig.

    The apiserver runs with the flags that make a kubelet-less cluster usable for scheduling: the
    ServiceAccount and TaintNodesByCondition admission plugins are off (no controller would create
    service accounts or lift the not-ready taint), the endpoint reconciler is off (it rejects loopback
    addresses), and request throttling (APF, max-inflight) is off so benchmarks measure schedulers,
    not the server's queues. ``extra_apiserver_args`` is appended last, so it can override any of
    them. A ControlPlane is used once: start, use, stop.
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
        self._workdir_parent = (
            str(workdir_parent) if workdir_parent is not None else _default_workdir_parent()
        )
        self._extra_apiserver_args = list(extra_apiserver_args)
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
            _sweep_stale_workdirs(parent)
            self._workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent))
            (self.workdir / OWNER_FILE).write_text(f"{os.getpid()}\n")
            write_control_plane_pki(self.workdir / "pki")
            (self.workdir / "tokens.csv").write_text(
                f'{self.token},kubesched-admin,kubesched-admin,"system:masters"\n'
                + "".join(f'{t},{u},{u},"system:masters"\n' for u, t in self.user_tokens.items())
            )
            if self.audit_bindings:
                (self.workdir / "audit-policy.yaml").write_text(_AUDIT_POLICY)
            for attempt in range(3):
                try:
                    self._launch(binaries)
                    break
                except _PortInUse:
                    self._stop_processes()
                    if attempt == 2:
                        raise ControlPlaneError(
                            "loopback ports kept being taken; is something racing us?"
                        ) from None
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise

    def _launch(self, binaries: KubeBinaries) -> None:
        etcd_port, peer_port, api_port = free_ports(3)
        run = self.workdir / "logs"
        run.mkdir(exist_ok=True)
        data = self.workdir / "etcd-data"
        shutil.rmtree(data, ignore_errors=True)
        self._etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd_args = [
            str(binaries.etcd),
            "--name=kubesched",
            f"--data-dir={data}",
            f"--listen-client-urls={self._etcd_url}",
            f"--advertise-client-urls={self._etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=kubesched={peer_url}",
            "--quota-backend-bytes=8589934592",  # 8 GiB: big benchmarks must not hit the NOSPACE alarm
            "--log-level=warn",
        ]
        if _binary_supports(binaries.etcd, "--unsafe-no-fsync"):
            etcd_args.append("--unsafe-no-fsync=true")
        etcd_args += self._extra_etcd_args

        t0 = time.monotonic()
        self.etcd = ManagedProcess("etcd", etcd_args, run / "etcd.log", port=etcd_port)
        self._wait(
            self.etcd, lambda: http_get(f"{self._etcd_url}/health", None)[1].find('"health":"true"') >= 0
        )
        self.startup_seconds["etcd"] = time.monotonic() - t0

        pki = self.workdir / "pki"
        self._server = f"https://127.0.0.1:{api_port}"
        api_args = [
            str(binaries.kube_apiserver),
            f"--etcd-servers={self._etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",  # else it looks for a default route, which may not exist
            f"--secure-port={api_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={self.workdir / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            # No controller creates ServiceAccounts or lifts the not-ready taint from kubelet-less nodes.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",  # loopback endpoints for the kubernetes Service are rejected
            # Benchmarks measure schedulers, not the apiserver's request queues.
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight=0",
            "--max-mutating-requests-inflight=0",
            "--v=1",
            *self._audit_args(),
            *self._extra_apiserver_args,
        ]
        self._api_args = api_args
        t0 = time.monotonic()
        self.apiserver = ManagedProcess("kube-apiserver", api_args, run / "kube-apiserver.log", port=api_port)
        context = self.ssl_context()
        self._wait(self.apiserver, lambda: http_get(f"{self._server}/readyz", context) == (200, "ok"))
        self.startup_seconds["kube-apiserver"] = time.monotonic() - t0

    def _audit_args(self) -> list[str]:
        if not self.audit_bindings:
            return []
        return [
            f"--audit-policy-file={self.workdir / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log_path}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
            "--audit-log-maxsize=0",
        ]

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
        if self.apiserver is None:
            raise ControlPlaneError("the API server is not running")
        stopped = time.monotonic()
        self.apiserver.stop()
        if while_down is not None:
            while_down()
        log = self.workdir / "logs" / "kube-apiserver.log"
        self.apiserver = ManagedProcess("kube-apiserver", self._api_args, log, port=self.apiserver.port)
        context = self.ssl_context()
        self._wait(self.apiserver, lambda: http_get(f"{self._server}/readyz", context) == (200, "ok"))
        return time.monotonic() - stopped

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision (through its JSON gateway); returns the revision.

        Every older resourceVersion is then gone: a watch resumed from one gets 410 Gone.
        """

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{self.etcd_url}{path}", data=json.dumps(body).encode(), method="POST"
            )
            with urllib.request.urlopen(request, timeout=10) as resp:
                result: dict[str, Any] = json.loads(resp.read())
                return result

        key = base64.b64encode(b"/").decode()
        revision = int(post("/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
        post("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def _wait(self, proc: ManagedProcess, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            if ready():
                return
            if not proc.alive():
                tail = proc.log_tail()
                if "address already in use" in tail:
                    raise _PortInUse(proc.name)
                raise ControlPlaneError(
                    f"{proc.name} exited with code {proc.popen.returncode} during startup; "
                    f"last lines of {proc.log_path}:\n{tail}"
                )
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{proc.name} not ready after {self.start_timeout:.0f} s "
                    f"(raise KUBESCHED_CONTROLPLANE_TIMEOUT on a loaded machine); "
                    f"last lines of {proc.log_path}:\n{proc.log_tail()}"
                )
            time.sleep(0.1)

    def _write_kubeconfig(self) -> None:
        ca_data = base64.b64encode(self.ca_file.read_bytes()).decode("ascii")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "kubesched",
                    "cluster": {"server": self.server, "certificate-authority-data": ca_data},
                }
            ],
            "users": [{"name": "kubesched-admin", "user": {"token": self.token}}],
            "contexts": [
                {"name": "kubesched", "context": {"cluster": "kubesched", "user": "kubesched-admin"}}
            ],
            "current-context": "kubesched",
        }
        self.kubeconfig_path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
        self.kubeconfig_path.chmod(0o600)
        for user, token in self.user_tokens.items():
            own = {
                **config,
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": "kubesched", "context": {"cluster": "kubesched", "user": user}}],
            }
            path = self.kubeconfig_for(user)
            path.write_text(json.dumps(own, indent=2) + "\n")
            path.chmod(0o600)

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

    # ---- upstream kube-scheduler

    def start_kube_scheduler(
        self,
        config_yaml: str | Mapping[str, Any] | None = None,
        *,
        extra_args: Sequence[str] = (),
        wait_ready: bool = True,
    ) -> ManagedProcess:
        """Start the upstream kube-scheduler against this control plane, as the peer we compare with.

        ``config_yaml`` is a KubeSchedulerConfiguration (YAML text or a mapping; default: one
        ``default-scheduler`` profile). Unless it says otherwise, it gets this control plane's
        kubeconfig, ``leaderElect: false`` and client qps/burst 5000/10000: with ``--config`` the
        scheduler ignores the equivalent command-line flags, and its default of 50 qps would cap
        binding at 50 pods/s. Returns once ``/readyz`` says its informers have synced, so pods
        created afterwards are scheduled promptly. It is stopped with the control plane, or earlier
        with ``.stop()``.
        """
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
        conn.setdefault("kubeconfig", str(self.kubeconfig_path))
        conn.setdefault("qps", 5000)
        conn.setdefault("burst", 10000)
        config.setdefault("leaderElection", {}).setdefault("leaderElect", False)

        index = len(self._extra_processes)
        config_path = self.workdir / f"kube-scheduler-{index}.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        (port,) = free_ports(1)
        args = [
            str(self.binaries.kube_scheduler),
            f"--config={config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--v=1",
            *extra_args,
        ]
        proc = ManagedProcess(
            f"kube-scheduler-{index}", args, self.workdir / "logs" / f"kube-scheduler-{index}.log", port=port
        )
        self._extra_processes.append(proc)
        if wait_ready:
            unverified = ssl.create_default_context()
            unverified.check_hostname = False
            unverified.verify_mode = ssl.CERT_NONE  # its serving cert is self-signed in memory
            t0 = time.monotonic()
            try:
                self._wait(proc, lambda: http_get(f"https://127.0.0.1:{port}/readyz", unverified)[0] == 200)
            except _PortInUse:
                proc.stop()
                raise ControlPlaneError(f"port {port} for {proc.name} was taken; try again") from None
            except ControlPlaneError:
                proc.stop()
                raise
            self.startup_seconds[proc.name] = time.monotonic() - t0
        return proc


#: Only the requests that bind pods, with the Binding (its target node), at the end of each.
_AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Request
  verbs: [create]
  resources:
  - group: ""
    resources: [pods/binding]
- level: None
"""


class _PortInUse(Exception):
    """A server lost the race for the port we picked for it; start() retries with new ports."""


# --------------------------------------------------------------------------------------------------
# command line: `python -m kubesched.testing.controlplane` (what `make cluster` runs)


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kubesched.testing.controlplane",
        description="Start etcd + kube-apiserver on loopback for manual testing; Ctrl-C stops and cleans up.",
    )
    parser.add_argument("--nodes", type=int, default=0, help="create this many fake Ready nodes")
    parser.add_argument("--kube-scheduler", action="store_true", help="also run the upstream kube-scheduler")
    parser.add_argument(
        "--extender",
        action="store_true",
        help="also run `kubesched extender` (mutual TLS) and an upstream kube-scheduler calling it "
        "(profile extended-scheduler; see docs/extender.md)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, etcd data) on exit")
    args = parser.parse_args(argv)

    stop_requested = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, on_signal)
    # Ctrl-C (SIGINT) stops it, also when started from a shell that ignores SIGINT in background
    # jobs: Python keeps an inherited "ignore", and the control plane would then outlive its user.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ControlPlane(keep_workdir=args.keep) as cp:
            if args.nodes:
                from kubesched.testing.fake_nodes import ApiClient, create_fake_nodes

                t0 = time.monotonic()
                with ApiClient.for_control_plane(cp) as client:
                    create_fake_nodes(client, args.nodes)
                print(f"created {args.nodes} fake nodes in {time.monotonic() - t0:.1f} s", flush=True)
            processes = [p for p in (cp.etcd, cp.apiserver) if p is not None]
            if args.kube_scheduler:
                processes.append(cp.start_kube_scheduler())
            if args.extender:
                from kubesched.testing.extender_recipe import SCHEDULER_NAME, start_extender_recipe

                recipe = start_extender_recipe(cp)
                processes += [recipe.extender, recipe.kube_scheduler]
                print(
                    f"kubesched extender: {recipe.url} (client certificate required)\n"
                    f"kube-scheduler calls it for pods with schedulerName: {SCHEDULER_NAME}\n"
                    f"  {recipe.curl('filter')}",
                    flush=True,
                )
            ready = ", ".join(f"{k} {v:.1f} s" for k, v in cp.startup_seconds.items())
            try:
                kubectl = f"  export PATH={find_kubectl()}:$PATH   # kubectl of the same version\n"
            except ControlPlaneError as exc:
                kubectl = f"  (no kubectl: {exc})\n"
            print(
                f"control plane ready ({ready})\n"
                f"  server:     {cp.server}\n"
                f"  logs:       {cp.workdir / 'logs'}\n"
                f"  export KUBECONFIG={cp.kubeconfig_path}\n"
                f"{kubectl}"
                "Ctrl-C to stop.",
                flush=True,
            )
            while not stop_requested:
                dead = [p for p in processes if not p.alive()]
                if dead:
                    print(f"{dead[0].name} exited; last lines:\n{dead[0].log_tail()}", file=sys.stderr)
                    return 1
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
