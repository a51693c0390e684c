"""The FGD paper's Fig. 9(a) on kubesched: six GPU-sharing policies on Alibaba's openb trace.

Each run follows the authors' protocol (their published scripts): the trace's tasks, plus tasks
sampled uniformly (seeded) from the trace until the GPU requests reach 130 % of the cluster's GPUs,
shuffled (seeded) into one arrival order, never leaving. Every task is a pod; its GPUs are DRA
devices with a consumable `share` of 1000 (a whole GPU asks for `count` devices, a shared one for
`capacity.requests.share`, `gpu_spec` is a CEL selector on the model). One policy scores the nodes
(the other score plugins are off, and every feasible node is scored, as in the authors' runs) and
chooses the GPU of a shared task. The typical tasks FGD
measures fragmentation against come from the trace's own task list.

A pod that fails never fits later (nothing leaves), so the unallocated GPUs after the k-th
arrival follow from which pods were placed: the curve is read at 90, 100, ..., 130 % of the
cluster's GPUs arrived. Prints one JSON object, the mean over seeds per policy:

    {"FGD": {"90": 10.1, "100": 4.9, ...}, ..., "expected": {...}, "timing": {...}}

Run: `nice -n 10 .venv/bin/python benchmarks/fgd_openb.py [--nodes CSV] [--pods CSV]
[--policies NAME ...] [--seeds N ...] [--workers N] [--ray-address ADDR] [--smoke]`.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api.loader import LoadedObjects, decode_object
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.gpu_share import GPU_MILLI, TaskShape, typical_tasks
from kubesched.simulate.snapshot.run import simulate

TRACE = Path(os.environ.get("OPENB_TRACE", "/work/shared/traces/openb"))
#: Every 60th node and 40th task of the trace, for `--smoke`.
SMOKE = Path(__file__).resolve().parent / "data" / "openb-smoke"
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
LEVELS = (90, 100, 110, 120, 130)
DRIVER = "gpu.kubesched.io"
TARGET = 1.3

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


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    gpu_milli: int
    gpu_spec: str

    @property
    def shape(self) -> TaskShape:
        return TaskShape(self.cpu_milli, self.gpu_milli if self.gpus else 0, self.gpus, self.gpu_spec)

    @property
    def gpu_total(self) -> int:
        return self.gpu_milli * self.gpus


def read_nodes(path: Path) -> list[Node]:
    with path.open(newline="") as f:
        return [
            Node(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"])
            for r in csv.DictReader(f)
        ]


def read_tasks(path: Path) -> list[Task]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        gpus = int(r["num_gpu"])
        milli = int(r["gpu_milli"]) if gpus else 0
        out.append(Task(r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), gpus, milli, r["gpu_spec"]))
    return out


def workload(tasks: Sequence[Task], capacity: int, seed: int) -> list[Task]:
    """The authors' tuning and shuffling, with Python's generator: below 130 % of `capacity` (milli
    GPU), uniform samples of the trace are added until the next would pass it; above, tasks drawn
    uniformly are removed until the rest is within it. Then one seeded shuffle."""
    rng = random.Random(seed)
    out = list(tasks)
    total = sum(t.gpu_total for t in out)
    i = 0
    while total > TARGET * capacity and out:
        total -= out.pop(rng.randrange(len(out))).gpu_total
    while total < TARGET * capacity:
        t = tasks[rng.randrange(len(tasks))]
        if total + t.gpu_milli > TARGET * capacity:
            break
        out.append(Task(f"{t.name}-tuned-{i}", t.cpu_milli, t.memory_mib, t.gpus, t.gpu_milli, t.gpu_spec))
        total += t.gpu_total
        i += 1
    out.sort(key=lambda t: t.name)
    rng.shuffle(out)
    return out


def _selector(spec: str) -> list[dict[str, Any]]:
    if not spec:
        return []
    models = " || ".join(f'device.attributes["{DRIVER}"].model == "{m}"' for m in spec.split("|"))
    return [{"cel": {"expression": models}}]


def objects_for(nodes: Sequence[Node], tasks: Sequence[Task]) -> LoadedObjects:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for n in nodes:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n.name, "labels": {"kubernetes.io/hostname": n.name}},
                "status": {
                    "allocatable": {"cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi", "pods": "1000"}
                },
            }
        )
        if n.gpus:
            docs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{n.name}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": n.name,
                        "pool": {"name": n.name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [
                            {
                                "name": f"gpu-{j}",
                                "attributes": {"model": {"string": n.model}},
                                "capacity": {"share": {"value": str(GPU_MILLI)}},
                                "allowMultipleAllocations": True,
                            }
                            for j in range(n.gpus)
                        ],
                    },
                }
            )
    for t in tasks:
        container: dict[str, Any] = {
            "name": "task",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": f"{t.cpu_milli}m", "memory": f"{t.memory_mib}Mi"}},
        }
        spec: dict[str, Any] = {"containers": [container]}
        if t.gpus:
            request: dict[str, Any] = {"deviceClassName": DRIVER, "selectors": _selector(t.gpu_spec)}
            if t.gpu_milli < GPU_MILLI:
                request["capacity"] = {"requests": {"share": str(t.gpu_milli)}}
            else:
                request["count"] = t.gpus
            docs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": f"{t.name}-gpu", "namespace": "default"},
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
                }
            )
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{t.name}-gpu"}]
            container["resources"]["claims"] = [{"name": "gpu"}]
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": t.name, "namespace": "default"},
                "spec": spec,
            }
        )
    loaded = LoadedObjects()
    for doc in docs:
        obj = decode_object(doc)
        assert obj is not None
        loaded.add(obj)
    return loaded


def curve(tasks: Sequence[Task], placed: set[str], capacity: int) -> dict[str, float]:
    """Unallocated GPUs (% of capacity) when the arrived GPU requests first reach each level."""
    out: dict[str, float] = {}
    arrived = allocated = 0
    levels = list(LEVELS)
    for t in tasks:
        arrived += t.gpu_total
        if t.name in placed:
            allocated += t.gpu_total
        while levels and arrived >= levels[0] / 100 * capacity:
            out[str(levels.pop(0))] = round(100 * (capacity - allocated) / capacity, 2)
    for level in levels:  # the workload stopped short of it
        out[str(level)] = round(100 * (capacity - allocated) / capacity, 2)
    return out


def run_one(policy: str, seed: int, nodes_csv: str, pods_csv: str) -> dict[str, Any]:
    """One replay: the policy's unallocated-GPU curve and its CPU time. Tasks asking for a GPU model
    no node has are left out (a slice of the trace may lack some models)."""
    nodes = [n for n in read_nodes(Path(nodes_csv)) if n.gpus]
    models = {n.model for n in nodes}
    tasks = [t for t in read_tasks(Path(pods_csv)) if not t.gpu_spec or set(t.gpu_spec.split("|")) & models]
    capacity = sum(n.gpus for n in nodes) * GPU_MILLI
    typical = typical_tasks(t.shape for t in tasks)
    arrivals = workload(tasks, capacity, seed)
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
    config = decode_config(PROFILE % {"policy": policy, "args": json.dumps(args)}, "fgd_openb.yaml", registry)
    start = time.process_time()
    objects = objects_for(nodes, arrivals)
    report = simulate(objects, config, registry, seed=seed, per_node=False)
    cpu = time.process_time() - start
    placed = {p.name for p in report.pods if p.node is not None}
    return {
        "policy": policy,
        "seed": seed,
        "curve": curve(arrivals, placed, capacity),
        "cpuSeconds": round(cpu, 2),
        "pods": len(arrivals),
    }


def _mean(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {str(level): round(sum(r["curve"][str(level)] for r in runs) / len(runs), 2) for level in LEVELS}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default=str(TRACE / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--pods", default=str(TRACE / "openb_pod_list_default.csv"))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(42, 52)))
    parser.add_argument("--workers", type=int, default=2, help="local processes (default 2)")
    parser.add_argument("--ray-address", help="run the replays as Ray tasks on this cluster instead")
    parser.add_argument("--smoke", action="store_true", help="a 21-node slice, 2 policies, 1 seed (for CI)")
    opts = parser.parse_args(argv)
    if opts.smoke:
        opts.nodes, opts.pods = str(SMOKE / "nodes.csv"), str(SMOKE / "pods.csv")
        opts.policies, opts.seeds, opts.workers = ["BestFit", "FGD"], opts.seeds[:1], 1
    jobs = [(p, s, opts.nodes, opts.pods) for p in opts.policies for s in opts.seeds]
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
