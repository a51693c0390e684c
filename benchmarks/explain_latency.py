"""Time of `kubesched explain` against a real kube-apiserver with 5,000 nodes.

One control plane (`kubesched.harness.controlplane`) gets N fake Ready nodes (scheduler_perf's shape:
4 cpu, 32Gi, 110 pods, three zones) and R running pods bound to them (100m / 500Mi each), then three
pending pods: one that fits, one no node can hold (16 cpu), and one that only preemption can place.
Each is explained `--repeat` times by `python -m kubesched.cli explain NS/POD --kubeconfig ...`, a
fresh process as a user runs it, so the wall time includes the interpreter start, the imports, the
LISTs and decoding, and the scheduling cycle; the report's own `seconds` (the cycle alone) is given
too, with the CPU seconds of the explain process (user + system: what it costs whatever else runs on
the machine) and the load average. Prints one JSON object per pod:

    {"pod": "fits", "nodes": 5000, "runningPods": 5000, "verdict": "Schedulable",
     "wallSeconds": {"min": 1.41, "median": 1.45, "max": 1.52}, "cycleSeconds": 0.31}

Run: `.venv/bin/python benchmarks/explain_latency.py [--nodes 5000] [--running 5000] [--repeat 3] [--smoke]`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    create_fake_nodes,
    create_namespace,
    create_pod,
    pod_manifest,
)

NAMESPACE = "explain-bench"


def populate(client: ApiClient, nodes: int, running: int) -> None:
    started = time.monotonic()
    names = create_fake_nodes(client, nodes, zones=("zone-a", "zone-b", "zone-c"), cpu="4", memory="32Gi")
    create_namespace(client, NAMESPACE)
    client.post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    )

    def run(i: int) -> None:
        node = names[i % len(names)]
        create_pod(
            client,
            pod_manifest(f"run-{i:05d}", namespace=NAMESPACE, cpu="100m", memory="500Mi", node_name=node),
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(run, range(running)))
    # Fill node 0 so that `urgent` (pinned to it) can only get there by preemption.
    create_pod(
        client,
        pod_manifest("filler", namespace=NAMESPACE, cpu="3500m", memory="1Gi", node_name=names[0]),
    )
    pin = {"kubernetes.io/hostname": names[0]}
    create_pod(client, pod_manifest("fits", namespace=NAMESPACE, cpu="500m", memory="1Gi"))
    create_pod(client, pod_manifest("too-big", namespace=NAMESPACE, cpu="16", memory="1Gi"))
    create_pod(
        client,
        pod_manifest(
            "urgent",
            namespace=NAMESPACE,
            cpu="1",
            memory="1Gi",
            node_selector=pin,
            priority_class_name="high",
        ),
    )
    print(f"populated in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def user_env() -> dict[str, str]:
    """This environment as a user's shell has it: Python's bytecode cache on (a sandbox that sets
    PYTHONDONTWRITEBYTECODE would make every run compile kubesched from source, ~0.5 CPU s)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def explain_once(kubeconfig: str, pod: str) -> tuple[float, float, dict[str, object]]:
    """(wall seconds, CPU seconds of the explain process, its report)."""
    argv = ["explain", f"{NAMESPACE}/{pod}", "--kubeconfig", kubeconfig, "-o", "json"]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched.cli", *argv], stdout=out, stderr=err, env=user_env()
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"explain {pod} failed: {err.read().decode()}")
        report: dict[str, object] = json.loads(out.read())
    return seconds, usage.ru_utime + usage.ru_stime, report


def phases(kubeconfig: str) -> dict[str, float]:
    """CPU seconds of each phase of one explain, in this process (imports timed in a fresh one),
    without the cyclic garbage collector as `kubesched explain` runs."""
    from kubesched.cluster.kube.client import KubeClient
    from kubesched.cluster.kube.snapshot import read_snapshot
    from kubesched.config import default_config
    from kubesched.plugins import default_registry
    from kubesched.simulate.explain.run import explain_pod, find_pod, kinds_read

    imports = "import kubesched.cli, kubesched.cli.explain, kubesched.simulate.explain"
    imports += ", kubesched.cluster.kube.snapshot"
    with tempfile.TemporaryFile() as sink:
        code = f"import gc; gc.disable(); {imports}; kubesched.cli._parser(['explain'])"
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=sink, env=user_env())
        _, _, usage = os.wait4(proc.pid, 0)
    registry = default_registry()
    config = default_config(registry)
    kinds = kinds_read(config, registry) or set()
    gc.disable()
    try:
        with KubeClient.from_kubeconfig(kubeconfig) as client:
            t0 = time.process_time()
            snap = read_snapshot(client, kinds)
            t1 = time.process_time()
        explain_pod(
            snap.objects, config, registry, find_pod(snap.objects, f"{NAMESPACE}/too-big"), source="bench"
        )
        t2 = time.process_time()
    finally:
        gc.enable()
    return {
        "importsCpu": round(usage.ru_utime + usage.ru_stime, 2),
        "snapshotCpu": round(t1 - t0, 2),
        "snapshotWall": round(snap.seconds, 2),
        "explainCpu": round(t2 - t1, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="20 nodes, 20 running pods, 1 repeat (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.running, args.repeat = 20, 20, 1
    with ControlPlane() as cp, ApiClient.for_control_plane(cp) as client:
        populate(client, args.nodes, args.running)
        for pod in ("fits", "too-big", "urgent"):
            runs = [explain_once(str(cp.kubeconfig_path), pod) for _ in range(args.repeat)]
            walls = [w for w, _, _ in runs]
            cpus = [c for _, c, _ in runs]
            report = runs[-1][2]
            print(
                json.dumps(
                    {
                        "pod": pod,
                        "nodes": args.nodes,
                        "runningPods": args.running + 1,
                        "verdict": report["verdict"],
                        "node": report["node"],
                        "victims": (report.get("preemption") or {}).get("victims"),  # type: ignore[union-attr]
                        "wallSeconds": {
                            "min": round(min(walls), 2),
                            "median": round(statistics.median(walls), 2),
                            "max": round(max(walls), 2),
                        },
                        "cpuSeconds": {
                            "min": round(min(cpus), 2),
                            "median": round(statistics.median(cpus), 2),
                        },
                        "cycleSeconds": report["seconds"],
                        "loadAverage": round(os.getloadavg()[0], 1),
                    }
                ),
                flush=True,
            )
        print(json.dumps({"phases": phases(str(cp.kubeconfig_path)), "loadAverage": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
