"""The FGD paper's Fig. 9(a) on kubesched: six GPU-sharing policies on Alibaba's openb trace.

Each run is `kubesched trace import openb` with the authors' protocol (`--target-gpu-percent 130
--order shuffled --seed N`: the trace's tasks in a seeded order, then seeded uniform draws until the
GPU requests reach 130 % of the cluster's GPUs, nothing leaving), replayed. Every task is a pod; its
GPUs are DRA devices with a consumable `share` of 1000. One policy scores the nodes (the other score
plugins are off, and every feasible node is scored, as in the authors' runs) and chooses the GPU of
a shared task. The typical tasks FGD measures fragmentation against come from the trace's own tasks.
Equal best scores go to the lowest node name, as in the authors' simulator (`--tie-break random`:
kube-scheduler's uniform draw instead).

Beyond the paper's six (`--policies` names them): FragPack, kubesched's own policy (FGD's growth
untruncated, ties to the fullest node); kube-scheduler's own scoring, every default plugin with
NodeResourcesFit's LeastAllocated (its default) or MostAllocated strategy, DynamicResources
allocating the GPUs; and GPUScheduler (binpack over the DRA GPUs) on top of the defaults. All
score every feasible node.

A pod that fails never fits later (nothing leaves), so the unallocated GPUs after the k-th
arrival follow from which pods were placed: the curve is read at 90, 100, ..., 130 % of the
cluster's GPUs arrived. Prints one JSON object, the mean over seeds per policy:

    {"FGD": {"90": 10.1, "100": 4.9, ...}, ..., "expected": {...}, "timing": {...}}

Run: `nice -n 10 .venv/bin/python benchmarks/fgd_openb.py [--nodes CSV] [--pods CSV]
[--policies NAME ...] [--seeds N ...] [--workers N] [--ray-address ADDR] [--tie-break MODE] [--smoke]`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.gpu_share import GPU_MILLI, TaskShape, typical_tasks
from kubesched.scheduler.options import TIE_BREAK_NODE_NAME, TIE_BREAKS
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import parse_scenario
from kubesched.simulate.trace.openb import DRIVER, scenario_for
from kubesched.simulate.trace.openb_csv import TraceTask, read_nodes, read_tasks
from kubesched.simulate.trace.openb_workload import Workload, arrange, ranked_nodes

TRACE = Path(os.environ.get("OPENB_TRACE", "/work/shared/traces/openb"))
#: Every 30th node and task of the trace, for `--smoke`.
SMOKE = Path(__file__).resolve().parents[1] / "examples" / "openb-slice"
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
#: Kubesched's own policy and kube-scheduler's own scoring, run on request.
OTHERS = ("FragPack", "LeastAllocated", "MostAllocated", "GPUScheduler")
LEVELS = (90, 100, 110, 120, 130)
TARGET_PERCENT = 130

PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter: {enabled: [{name: %(policy)s}]}
    score:
      disabled: [{name: '*'}]
      enabled: [{name: %(policy)s, weight: 1}]
  pluginConfig:
  - name: %(policy)s
    args: %(args)s
"""

#: The default profile, NodeResourcesFit's strategy set; GPUScheduler on top when asked.
DEFAULTS = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint: {enabled: %(extra)s}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: %(strategy)s}}
  - name: GPUScheduler
    args: {draDrivers: [%(driver)s]}
"""


def profile(policy: str, args: dict[str, Any]) -> str:
    """The scheduler configuration a policy runs under."""
    if policy in ("LeastAllocated", "MostAllocated"):
        return DEFAULTS % {"extra": "[]", "strategy": policy, "driver": DRIVER}
    if policy == "GPUScheduler":
        return DEFAULTS % {"extra": "[{name: GPUScheduler}]", "strategy": "LeastAllocated", "driver": DRIVER}
    return PROFILE % {"policy": policy, "args": json.dumps(args)}


def curve(workload: Workload, placed: set[str], capacity: int) -> dict[str, float]:
    """Unallocated GPUs (% of capacity) when the arrived GPU requests first reach each level."""
    out: dict[str, float] = {}
    arrived = allocated = 0
    levels = list(LEVELS)
    for a in workload.arrivals:
        arrived += a.task.gpu_total
        if a.name in placed:
            allocated += a.task.gpu_total
        while levels and arrived >= levels[0] / 100 * capacity:
            out[str(levels.pop(0))] = round(100 * (capacity - allocated) / capacity, 2)
    for level in levels:  # the workload stopped short of it
        out[str(level)] = round(100 * (capacity - allocated) / capacity, 2)
    return out


def shape(task: TraceTask) -> TaskShape:
    return TaskShape(
        task.cpu_milli, task.gpu_milli if task.num_gpu else 0, task.num_gpu, "|".join(task.models)
    )


def run_one(
    policy: str,
    seed: int,
    nodes_csv: str,
    pods_csv: str,
    tie_break: str = TIE_BREAK_NODE_NAME,
    rank_nodes: bool = True,
) -> dict[str, Any]:
    """One replay of the imported trace: the policy's unallocated-GPU curve and its CPU time. Tasks
    asking for a GPU model no node has are left out (a slice of the trace may lack some models).
    The nodes carry seeded ranks in front of their names, as in the authors' runs (`rank_nodes`)."""
    nodes = [n for n in read_nodes(nodes_csv) if n.gpus]
    if rank_nodes:
        nodes = ranked_nodes(nodes, seed)
    models = {n.model for n in nodes}
    tasks = [t for t in read_tasks(pods_csv) if not t.models or set(t.models) & models]
    capacity = sum(n.gpus for n in nodes) * GPU_MILLI
    typical = typical_tasks(shape(t) for t in tasks)
    workload = arrange(tasks, capacity, target_percent=TARGET_PERCENT, seed=seed, order="shuffled")
    args = {
        "seed": seed,
        "typicalTasks": [
            {
                "cpuMilli": s.cpu_milli,
                "gpuMilli": s.gpu_milli,
                "gpuCount": s.gpu_count,
                "gpuSpec": s.gpu_spec,
                "weight": float(w),
            }
            for s, w in zip(typical.shapes, typical.freqs, strict=True)
        ],
    }
    registry = default_registry(entry_points=False)
    config = decode_config(profile(policy, args), "fgd_openb.yaml", registry)
    start = time.process_time()
    scenario = parse_scenario(
        json.dumps(scenario_for("fgd-openb", nodes, workload).document), "fgd-openb.json"
    )
    report = replay(scenario, config, registry, seed=seed, tie_break=tie_break)
    cpu = time.process_time() - start
    placed = {p.name for p in report.pods if p.result == "Scheduled"}
    return {
        "policy": policy,
        "seed": seed,
        "curve": curve(workload, placed, capacity),
        "cpuSeconds": round(cpu, 2),
        "pods": len(workload.arrivals),
    }


def _mean(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {str(level): round(sum(r["curve"][str(level)] for r in runs) / len(runs), 2) for level in LEVELS}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default=str(TRACE / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--pods", default=str(TRACE / "openb_pod_list_default.csv"))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES + OTHERS)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(42, 52)))
    parser.add_argument("--workers", type=int, default=2, help="local processes (default 2)")
    parser.add_argument("--ray-address", help="run the replays as Ray tasks on this cluster instead")
    parser.add_argument(
        "--tie-break",
        choices=TIE_BREAKS,
        default=TIE_BREAK_NODE_NAME,
        help="equal best scores: the lowest node name as the authors' simulator (default), or random",
    )
    parser.add_argument(
        "--trace-node-names",
        action="store_true",
        help="keep the trace's node names (default: a seeded random rank in front, as the authors' "
        "simulator names them, so that ties by name fall on a seeded random node order)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="examples/openb-slice, 2 policies, 1 seed (for CI)"
    )
    opts = parser.parse_args(argv)
    if opts.smoke:
        opts.nodes, opts.pods = str(SMOKE / "nodes.csv"), str(SMOKE / "pods.csv")
        opts.policies, opts.seeds, opts.workers = ["BestFit", "FGD"], opts.seeds[:1], 1
    jobs = [
        (p, s, opts.nodes, opts.pods, opts.tie_break, not opts.trace_node_names)
        for p in opts.policies
        for s in opts.seeds
    ]
    wall = time.monotonic()
    if opts.ray_address:
        import ray  # optional: `pip install ray`; only this mode needs it

        ray.init(address=opts.ray_address)
        remote = ray.remote(run_one)
        runs = ray.get([remote.remote(*job) for job in jobs])
    elif opts.workers <= 1:
        runs = [run_one(*job) for job in jobs]
    else:
        with ProcessPoolExecutor(opts.workers) as pool:
            runs = list(pool.map(run_one, *zip(*jobs, strict=True)))
    elapsed = time.monotonic() - wall
    out: dict[str, Any] = {p: _mean([r for r in runs if r["policy"] == p]) for p in opts.policies}
    expected = json.loads((TRACE / "expected_unallocated_gpu_pct.json").read_text()).get(Path(opts.pods).stem)
    if expected and not opts.smoke:
        out["expected"] = {p: expected[p] for p in opts.policies if p in expected}
    out["tieBreak"] = opts.tie_break
    out["nodeNames"] = "trace" if opts.trace_node_names else "ranked"
    out["timing"] = {
        "runs": len(runs),
        "wallSeconds": round(elapsed, 1),
        "cpuSecondsPerRun": round(sum(r["cpuSeconds"] for r in runs) / len(runs), 1),
        "podsPerRun": round(sum(r["pods"] for r in runs) / len(runs)),
        "loadAverage": [round(x, 1) for x in os.getloadavg()],
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
