"""`kubesched run` takes its ports at start and builds the endpoints' server only after the first
scheduling attempt, so the ASGI stack's imports and the certificate do not delay the first bind.
A standby serves at once; a busy port still ends the process before the cluster is touched."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from kubesched.cli import run as run_module
from kubesched.errors import InputError
from kubesched.harness.ports import free_port
from kubesched.serving.options import ServingOptions


class _Cluster:
    """What `_Runner` reads of a LiveCluster while it waits for the first attempt."""

    def __init__(self, leading: bool) -> None:
        self.leading = leading
        self.attempts = 0


class _Endpoints:
    def __init__(self) -> None:
        self.started_at: float | None = None

    def start(self, health: Any) -> None:
        self.started_at = time.monotonic()


def _runner(cluster: _Cluster, endpoints: _Endpoints) -> Any:
    runner = object.__new__(run_module._Runner)
    runner.cluster = cluster
    runner.endpoints = endpoints
    runner.stopping = threading.Event()
    return runner


def test_a_leader_serves_once_its_first_attempt_is_over() -> None:
    cluster, endpoints = _Cluster(leading=True), _Endpoints()
    attempted_at: list[float] = []

    def attempt() -> None:
        time.sleep(0.2)
        attempted_at.append(time.monotonic())
        cluster.attempts = 1

    threading.Thread(target=attempt).start()
    _runner(cluster, endpoints)._serve_after_first_attempt()
    assert endpoints.started_at is not None and attempted_at
    assert attempted_at[0] <= endpoints.started_at < attempted_at[0] + run_module.SERVE_WITHIN_SECONDS / 2


def test_a_standby_serves_at_once_and_an_idle_leader_within_the_bound() -> None:
    standby = _Endpoints()
    t0 = time.monotonic()
    _runner(_Cluster(leading=False), standby)._serve_after_first_attempt()
    assert standby.started_at is not None and standby.started_at - t0 < 0.1
    idle = _Endpoints()
    t0 = time.monotonic()
    _runner(_Cluster(leading=True), idle)._serve_after_first_attempt()
    assert idle.started_at is not None
    assert run_module.SERVE_WITHIN_SECONDS <= idle.started_at - t0 < run_module.SERVE_WITHIN_SECONDS + 0.5


def test_the_port_is_taken_before_the_server_is_built_and_a_busy_one_is_bad_input() -> None:
    port = free_port()
    endpoints = run_module._Endpoints(
        ServingOptions(bind_address="127.0.0.1", secure_port=port), lambda _: None, None
    )
    endpoints.listen()
    try:
        sock = endpoints._secure_socket
        assert (
            sock is not None and sock.getsockname()[1] == port and endpoints.secure is None
        )  # nothing built
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # accepted into the backlog: a probe waits there until the server runs
        busy = run_module._Endpoints(
            ServingOptions(bind_address="127.0.0.1", secure_port=port), lambda _: None, None
        )
        with pytest.raises(
            InputError, match=re.escape(f"--secure-port: cannot serve on 127.0.0.1:{port} (address in use")
        ):
            busy.listen()
    finally:
        endpoints.stop()


def test_parsing_runs_flags_imports_no_server() -> None:
    script = (
        "import sys\n"
        "from kubesched.cli import _parser\n"
        "_parser(['run'])\n"
        "servers = {'uvicorn', 'starlette', 'h11', 'cryptography'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & servers))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
