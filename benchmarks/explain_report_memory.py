"""Memory and size of `kubesched simulate --explain -o json` on a big run (2,000 nodes x 2,000 pods).

Half of the pending pods fit (100m cpu), half ask for more cpu than any node has, so each of those is
rejected by all 2,000 nodes on every attempt: the case where a per-node report explodes. Each run
is a separate `kubesched` process; its peak RSS comes from the kernel (wait4's rusage). Prints one
JSON object per run:

    {"run": "--explain", "nodes": 2000, "pods": 2000, "seconds": 41.0, "maxRssMiB": 150.2,
     "reportMiB": 3.1, "exit": 0}

Run: `.venv/bin/python benchmarks/explain_report_memory.py [--nodes N] [--pods N] [--per-node] [--smoke]`
(`--per-node` adds a run with every node's verdict kept, the size the summaries avoid).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from kubesched.testing.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def write_cluster(path: Path, nodes: int, pods: int) -> None:
    objects: list[object] = [
        make_node(f"node-{i:05d}", cpu="4", memory="32Gi", labels={ZONE: f"zone-{i % 3}"})
        for i in range(nodes)
    ]
    for i in range(pods):
        cpu = "100m" if i % 2 == 0 else "8"  # the odd ones fit nowhere
        objects.append(make_pod(f"pod-{i:05d}", cpu=cpu, memory="500Mi"))
    items = [{"apiVersion": "v1", "kind": type(o).__name__, **msgspec.to_builtins(o)} for o in objects]
    path.write_bytes(msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": items}))


def measure(cluster: Path, extra: list[str], out: Path) -> dict[str, object]:
    argv = [sys.executable, "-m", "kubesched.cli", "simulate", str(cluster), "-o", "json", *extra]
    started = time.monotonic()
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    return {
        "run": " ".join(extra),
        "seconds": round(seconds, 1),
        "maxRssMiB": round(usage.ru_maxrss / 1024, 1),
        "reportMiB": round(out.stat().st_size / 2**20, 1),
        "exit": os.waitstatus_to_exitcode(status),
        **({"stderr": stderr[-500:]} if stderr else {}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--per-node", action="store_true", help="also measure --explain --per-node")
    parser.add_argument("--smoke", action="store_true", help="20 nodes, 20 pods, with --per-node (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.pods, args.per_node = 20, 20, True
    runs = [["--explain"], *([["--explain", "--per-node"]] if args.per_node else [])]
    with tempfile.TemporaryDirectory(prefix="kubesched-explain-mem-") as tmp:
        cluster = Path(tmp, "cluster.json")
        write_cluster(cluster, args.nodes, args.pods)
        for extra in [[], *runs]:
            result = measure(cluster, extra, Path(tmp, "report.json"))
            print(json.dumps({**result, "nodes": args.nodes, "pods": args.pods}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
