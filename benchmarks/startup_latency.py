"""Start to first bind: `kubesched run` and the upstream kube-scheduler started alternately on one API server.

One control plane (`kubesched.harness.controlplane`, the benchmark flags) holds N fake Ready nodes
(scheduler_perf's node shape, as `live_throughput.py` makes them) and OTHERS pods already bound to
them (in namespace `others`, so every scheduler lists them at start). Each round starts every phase
once, in alternating order (upstream first, then the trees forwards, then backwards), each on
PENDING fresh pending pods in a namespace of its own, and records:

- `start_to_first_bind_seconds`: from the spawn of the scheduler to the first `spec.nodeName` seen
  on a watch of its namespace;
- `cpu_seconds_at_first_bind`: the scheduler's CPU seconds (all threads) when that bind is seen;
- for kubesched, `marks`: seconds from spawn to its log lines `profiles:` (configuration read,
  scheduler built), `waiting for informers to sync` (discovery done, informers started) and
  `informers synced`.

Both schedulers run as `live_throughput.py` runs them (the same client limits, HTTPS serving with a
certificate made at start, `leaderElect: false`); kubesched runs from compiled bytecode, compiled
before the clock starts. Phases: `upstream`, `kubesched` (this tree) and `baseline` (another tree,
`--baseline-src DIR`, e.g. `git archive` of an older commit). On a shared machine a single start
moves with the load: compare medians of alternating rounds.

Output: one JSON object per start, then a summary with min / median / max per node count and phase.

    python benchmarks/startup_latency.py [--nodes 1000 5000] [--rounds 5] [--others 3000] [--pending 20]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import live_throughput as lt
from kubesched.cluster.kube.client import KubeClient
from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import ApiClient, create_fake_nodes, create_namespace, pod_manifest

#: kubesched's log lines that mark its start-up steps, by the name they get in `marks`.
MARKS = {
    "configured": "I kubesched.run: profiles:",
    "informers_started": "I kubesched.run: waiting for informers to sync",
    "synced": "I kubesched.run: informers synced",
}
BIND_TIMEOUT = 120.0


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def create_others(api: ApiClient, nodes: Sequence[str], count: int) -> None:
    """`count` small pods bound round-robin to `nodes` (listed by every scheduler at start)."""
    create_namespace(api, "others")

    def make(i: int) -> None:
        manifest = pod_manifest(
            f"other-{i:05d}", namespace="others", cpu="10m", memory="10Mi", node_name=nodes[i % len(nodes)]
        )
        api.post("/api/v1/namespaces/others/pods", manifest)

    with ThreadPoolExecutor(lt.CREATE_THREADS) as pool:
        for _ in pool.map(make, range(count)):
            pass


def log_marks(log: Path, spawned_at: float) -> dict[str, float]:
    """Seconds from `spawned_at` (epoch) to each of MARKS' lines in kubesched's text log."""
    marks: dict[str, float] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        for name, needle in MARKS.items():
            if needle in line and name not in marks:
                stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                marks[name] = round(stamp - spawned_at, 3)
    return marks


def start_once(
    cp: ControlPlane, api: ApiClient, watcher: KubeClient, phase: str, src: Path | None, pending: int, ns: str
) -> dict[str, Any]:
    """Start one scheduler on `pending` fresh pods, until they are all bound; its figures."""
    name = "default-scheduler" if phase == "upstream" else "kubesched"
    create_namespace(api, ns)
    lt.create_pods(api, ns, pending, name)
    watch = lt.BindWatch(watcher, ns, pending, lt.current_resource_version(api, ns))
    pid: list[int] = []
    cpu_at_first: list[float | None] = []
    watch.on_first_bind = lambda: cpu_at_first.append(lt.cpu_seconds(pid[0]) if pid else None)
    watch.start()
    spawned_at = time.time()
    started = time.perf_counter()
    proc: ManagedProcess | None = None
    try:
        if phase == "upstream":
            proc = cp.start_kube_scheduler(
                {
                    "clientConnection": {"qps": lt.QPS, "burst": lt.BURST},
                    "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": name}],
                },
                wait_ready=False,
            )
        else:
            kubesched = lt.KubeschedProcess(cp, name, src)
            # From its spawn: the bytecode check before it (compileall) is this script's time.
            spawned_at += kubesched.spawned_at - started
            started = kubesched.spawned_at
            proc = kubesched.proc
        pid.append(proc.pid)
        complete = watch.wait(BIND_TIMEOUT, proc.alive)
        if not proc.alive():
            raise RuntimeError(f"{phase} scheduler exited:\n{proc.log_tail()}")
    finally:
        if proc is not None:
            proc.stop()
        watch.stop()
    times = sorted(watch.bound_at.values())
    lt.delete_pods(api, ns)
    figure: dict[str, Any] = {
        "phase": phase,
        "complete": complete,
        "start_to_first_bind_seconds": round(times[0] - started, 3) if times else None,
        "cpu_seconds_at_first_bind": cpu_at_first[0] if cpu_at_first else None,
        "load_average_1m": lt.load_average(),
    }
    if phase != "upstream" and proc is not None:
        figure["marks"] = log_marks(proc.log_path, spawned_at)
    return figure


def spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"min": min(values), "median": round(statistics.median(values), 3), "max": max(values)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000], help="node counts, ascending")
    parser.add_argument("--rounds", type=int, default=5, help="starts of each phase per node count")
    parser.add_argument("--others", type=int, default=3000, help="bound pods every scheduler lists at start")
    parser.add_argument("--pending", type=int, default=20, help="pending pods per start")
    parser.add_argument(
        "--phases",
        nargs="+",
        default=["upstream", "kubesched"],
        choices=["upstream", "kubesched", "baseline"],
    )
    parser.add_argument("--baseline-src", type=Path, metavar="DIR", help="the baseline tree's src/ directory")
    parser.add_argument("--smoke", action="store_true", help="20 nodes, 20 others, 2 pending, 1 round")
    args = parser.parse_args(argv)
    if args.smoke:
        args.nodes, args.rounds, args.others, args.pending = [20], 1, 20, 2
    if "baseline" in args.phases and args.baseline_src is None:
        parser.error("the baseline phase needs --baseline-src")
    if args.nodes != sorted(args.nodes):
        parser.error("give node counts ascending")
    sources = {"upstream": None, "kubesched": None, "baseline": args.baseline_src}
    figures: list[dict[str, Any]] = []
    with (
        ControlPlane() as cp,
        ApiClient.for_control_plane(cp) as api,
        KubeClient.from_kubeconfig(str(cp.kubeconfig_path), qps=0, burst=1, name="bench-watch") as watcher,
    ):
        nodes: list[str] = []
        seq = 0
        for count in args.nodes:
            nodes += create_fake_nodes(api, count - len(nodes), start=len(nodes), concurrency=8)
            if count == args.nodes[0]:
                create_others(api, nodes, args.others)
            lt.note(f"{count} nodes, {args.others} other pods")
            for r in range(args.rounds):
                # Upstream first, then the trees forwards in even rounds and backwards in odd ones.
                trees = [p for p in args.phases if p != "upstream"]
                order = (["upstream"] if "upstream" in args.phases else []) + (
                    trees if r % 2 == 0 else trees[::-1]
                )
                for phase in order:
                    seq += 1
                    figure = start_once(cp, api, watcher, phase, sources[phase], args.pending, f"start-{seq}")
                    figure |= {"nodes": count, "round": r}
                    figures.append(figure)
                    emit(figure)
    by: dict[str, dict[str, Any]] = {}
    for count in args.nodes:
        for phase in args.phases:
            runs = [f for f in figures if f["nodes"] == count and f["phase"] == phase]
            by.setdefault(str(count), {})[phase] = {
                "start_to_first_bind_seconds": spread(
                    [
                        f["start_to_first_bind_seconds"]
                        for f in runs
                        if f["start_to_first_bind_seconds"] is not None
                    ]
                ),
                "cpu_seconds_at_first_bind": spread(
                    [
                        f["cpu_seconds_at_first_bind"]
                        for f in runs
                        if f["cpu_seconds_at_first_bind"] is not None
                    ]
                ),
            }
    emit({"summary": "startup_latency", "rounds": args.rounds, "others": args.others, "by_nodes": by})
    return 0


if __name__ == "__main__":
    sys.exit(main())
