"""The processes a control plane starts: each with its log, a stop that never leaves it running, and
a wait for readiness that quotes the log when it fails."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

__all__ = ["ControlPlaneError", "ManagedProcess", "PortInUse", "http_get", "wait_ready"]

#: Seconds a process gets to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 10.0
#: Lines of each log file quoted in a startup error: enough for the real cause, short enough to read.
LOG_TAIL_LINES = 40


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached; the message says which and why."""


class PortInUse(Exception):
    """A server lost the race for the port we picked for it; the caller retries with new ports."""


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


def _pinned(hook: Callable[[], None] | None, cpus: frozenset[int]) -> Callable[[], None]:
    """A preexec hook that runs `hook` and sets the child's CPU affinity before it execs."""

    def pin() -> None:
        if hook is not None:
            hook()
        os.sched_setaffinity(0, cpus)

    return pin


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
        cpus: Collection[int] | None = None,
    ) -> None:
        """`cpus` pins the process to those CPUs from its first instruction (every thread inherits)."""
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
                preexec_fn=_PDEATHSIG_HOOK if cpus is None else _pinned(_PDEATHSIG_HOOK, frozenset(cpus)),
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


def wait_ready(proc: ManagedProcess, ready: Callable[[], bool], timeout: float) -> None:
    """Poll `ready()` until true; PortInUse if `proc` died for want of its port, ControlPlaneError
    quoting its log if it died otherwise or is not ready within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if not proc.alive():
            tail = proc.log_tail()
            if "address already in use" in tail:
                raise PortInUse(proc.name)
            raise ControlPlaneError(
                f"{proc.name} exited with code {proc.popen.returncode} during startup; "
                f"last lines of {proc.log_path}:\n{tail}"
            )
        if time.monotonic() > deadline:
            raise ControlPlaneError(
                f"{proc.name} not ready after {timeout:.0f} s "
                f"(raise KUBESCHED_CONTROLPLANE_TIMEOUT on a loaded machine); "
                f"last lines of {proc.log_path}:\n{proc.log_tail()}"
            )
        time.sleep(0.1)
