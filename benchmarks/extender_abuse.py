"""Memory of `kubesched extender` under many concurrent large request bodies.

Starts `kubesched extender` as its own process on 127.0.0.1 (no node cache, the profile
NodeFilterLabel + NodeResourcesFit, default limits unless given), then opens `--connections`
connections at once, each POSTing a `--body-mib` filter request (a valid ExtenderArgs whose
NodeNames array fills the body, the costliest shape to decode), either with a declared
Content-Length or chunked. The server's resident set is sampled every 20 ms from
`/proc/<pid>/status` while the attack runs, and its high-water mark (`VmHWM`) is read at the end.

Prints one JSON object: RSS idle / peak in MiB, the responses by status code, how long it took, and
whether the server still answered a normal request afterwards. Every process is started here and
stopped by pid; every request loop is bounded in count and time.

    python benchmarks/extender_abuse.py [--connections 200] [--body-mib 64] [--chunked] [--smoke]

With `--idle N` it measures waiting connections instead: N connections held open, half of them
silent and half stopped in the middle of their headers (slow clients), while normal filter
requests are timed one after another. It prints the resident set per waiting connection, the
requests' latencies, and how many got their 200 (all should: a waiting connection gives its slot
to a caller).
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from kubesched.harness.ports import free_port

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: extender
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled:
      - {name: PrioritySort}
      - {name: DefaultBinder}
      - {name: NodeFilterLabel}
      - {name: NodeResourcesFit}
"""
POD = {
    "metadata": {"name": "p", "namespace": "default", "uid": "u"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}
#: Give up on the attack after this long, whatever is still pending.
ATTACK_TIME_LIMIT = 240.0


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def make_body(mib: int) -> bytes:
    """A filter request of about `mib` MiB: a pod and a NodeNames array of short distinct names."""
    head = b'{"Pod":' + json.dumps(POD).encode() + b',"NodeNames":["n0"'
    target = mib * 1024 * 1024 - len(head) - 2
    names = bytearray()
    i = 1
    while len(names) < target:
        names += b',"n%d"' % i
        i += 1
    return head + bytes(names[:target]).rsplit(b",", 1)[0] + b"]}"


def attack(port: int, body: bytes, connections: int, chunked: bool) -> collections.Counter[str]:
    """All connections at once; each sends its whole body (or is cut off) and reads the answer."""
    results: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    go = threading.Barrier(connections)
    deadline = time.monotonic() + ATTACK_TIME_LIMIT
    view = memoryview(body)

    def one() -> None:
        outcome = "no answer"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                go.wait(30)
                if chunked:
                    s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                    step = 1024 * 1024
                    for i in range(0, len(body), step):
                        if time.monotonic() > deadline:
                            break
                        piece = view[i : i + step]
                        s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                    s.sendall(b"0\r\n\r\n")
                else:
                    s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
                    s.sendall(view)
                outcome = read_status(s)
        except (ConnectionResetError, BrokenPipeError):
            outcome = "cut off"
        except (TimeoutError, threading.BrokenBarrierError):
            outcome = "timeout"
        except OSError as exc:
            outcome = f"error: {exc.__class__.__name__}"
        with lock:
            results[outcome] += 1

    threads = [threading.Thread(target=one, daemon=True) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    return results


def read_status(s: socket.socket) -> str:
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return "closed"
        data += chunk
    return data.split(b" ", 2)[1].decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--body-mib", type=int, default=64)
    parser.add_argument("--chunked", action="store_true", help="send bodies chunked, without a length")
    parser.add_argument("--smoke", action="store_true", help="4 connections of 1 MiB (CI)")
    parser.add_argument("--idle", type=int, default=0, metavar="N", help="hold N waiting connections instead")
    parser.add_argument("--server-args", nargs=argparse.REMAINDER, default=[], help="extra extender flags")
    args = parser.parse_args(argv)
    if args.smoke:
        args.connections, args.body_mib = 4, 1
        args.idle = min(args.idle, 8)

    body = make_body(args.body_mib)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(CONFIG)
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched.cli", "extender", "--config", str(config),
             "--listen", f"127.0.0.1:{port}", "--log-level", "error", *args.server_args],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_ready(port, proc)
            if args.idle:
                print(json.dumps(waiting(port, proc, args.idle, args.server_args)), flush=True)
                return 0
            idle = status_kib(proc.pid, "VmRSS")
            peak = [idle]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.wait(0.02):
                    try:
                        peak.append(status_kib(proc.pid, "VmRSS"))
                    except OSError:
                        return

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            results = attack(port, body, args.connections, args.chunked)
            seconds = time.monotonic() - started
            sampling.set()
            sampler.join()
            hwm = status_kib(proc.pid, "VmHWM")
            after = healthy_after(port)
            summary: dict[str, Any] = {
                "benchmark": "extender_abuse",
                "connections": args.connections,
                "body_mib": args.body_mib,
                "chunked": args.chunked,
                "server_args": args.server_args,
                "rss_idle_mib": round(idle / 1024, 1),
                "rss_peak_mib": round(max(peak) / 1024, 1),
                "vm_hwm_mib": round(hwm / 1024, 1),
                "responses": dict(results),
                "seconds": round(seconds, 1),
                "serves_after": after,
                "server_alive": proc.poll() is None,
            }
            print(json.dumps(summary), flush=True)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


#: Normal requests timed while the waiting connections are held.
WAITING_REQUESTS = 20


def waiting(port: int, proc: subprocess.Popen[bytes], count: int, server_args: list[str]) -> dict[str, Any]:
    """Hold `count` waiting connections (half silent, half mid-headers) and time normal requests."""
    before = status_kib(proc.pid, "VmRSS")
    held: list[socket.socket] = []
    try:
        for i in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 2:
                s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\n")  # and never the rest
            held.append(s)
        time.sleep(1.0)  # let the server accept them all
        during = status_kib(proc.pid, "VmRSS")
        latencies: list[float] = []
        served = 0
        for _ in range(WAITING_REQUESTS):
            started = time.monotonic()
            served += healthy_after(port)
            latencies.append((time.monotonic() - started) * 1000)
        still_open = sum(1 for s in held if _open(s))
    finally:
        for s in held:
            s.close()
    latencies.sort()
    return {
        "benchmark": "extender_idle",
        "idle_connections": count,
        "server_args": server_args,
        "rss_before_mib": round(before / 1024, 1),
        "rss_waiting_mib": round(during / 1024, 1),
        "kib_per_waiting_connection": round((during - before) / max(count, 1), 2),
        "requests": WAITING_REQUESTS,
        "served": served,
        "p50_ms": round(latencies[len(latencies) // 2], 2),
        "max_ms": round(latencies[-1], 2),
        "waiting_still_open": still_open,
        "server_alive": proc.poll() is None,
    }


def _open(s: socket.socket) -> bool:
    """Whether the server has not closed `s` (checked without blocking)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"kubesched extender exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("kubesched extender did not start within 60 s")


def healthy_after(port: int) -> bool:
    """Whether a normal filter request still gets its 200 once the attack is over."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/filter",
        data=json.dumps({"Pod": POD, "Nodes": {"items": []}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
