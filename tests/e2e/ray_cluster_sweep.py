"""Run `kubesched sweep --ray` against a real Ray head started here, inside a private network namespace.

Used by test_sweep.py as `unshare --net -- python ray_cluster_sweep.py SWEEP-ARGS...`: the namespace
has only a loopback interface, so the Ray head (whose GCS listens on every interface) is reachable
from nothing outside this test. Prints the sweep's JSON on stdout; stops every process of the head
(its process group) before exiting, whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubesched.harness.ports import free_port

START_TIMEOUT = 180.0


def stop(head: subprocess.Popen[bytes]) -> None:
    """TERM the head's process group, then KILL what is left after 15 s."""
    try:
        os.killpg(head.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(head.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    ray = Path(sys.executable).with_name("ray")
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    with tempfile.TemporaryDirectory(prefix="ksray") as temp, open(Path(temp) / "head.log", "wb") as log:
        head = subprocess.Popen(
            [
                str(ray),
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
                "--object-store-memory=100000000",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--temp-dir={temp}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while b"Ray runtime started" not in Path(log.name).read_bytes():
                if head.poll() is not None or time.monotonic() > deadline:
                    sys.stderr.write(Path(log.name).read_text(errors="replace")[-3000:])
                    return 3
                time.sleep(0.5)
            sweep = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kubesched.cli",
                    "sweep",
                    *argv,
                    "--ray",
                    f"127.0.0.1:{port}",
                    "-o",
                    "json",
                ],
                capture_output=True,
                env=env,
                timeout=600,
                check=False,
            )
            sys.stdout.buffer.write(sweep.stdout)
            sys.stderr.buffer.write(sweep.stderr)
            return sweep.returncode
        finally:
            stop(head)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
