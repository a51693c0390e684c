"""Sweep speed-up: the same grid in this process, in N local worker processes, and on a Ray cluster.

The grid: examples/gpu and a generated 5000-node cluster with 6000 pending pods, under the GPU and
the baseline configurations of examples/gpu, over --seeds seeds. It prints one JSON object with
`cells`, `hereSeconds` / `hereCpuSeconds` (one process), `processSeconds` / `processCpuSeconds`
(`workers` processes), `processSpeedup`, `loadAverage`, and with --ray `raySeconds`, `rayCpus`,
`raySpeedup`.

CPU seconds (summed over the cells, measured where each ran) show what the work cost; the load average shows
whether the machine had the cores to give: on a shared, saturated machine no speed-up is possible.
Every backend's answers are checked equal to this process's (timings aside) before printing.
Run: `.venv/bin/python benchmarks/sweep_speedup.py [--workers N] [--seeds 4] [--ray HOST:PORT] [--smoke]`
(without --ray the Ray figures are left out; `ray start --head` starts a cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kubesched.config import load_config
from kubesched.plugins import default_registry
from kubesched.simulate.sweep.backends import default_workers, run_here, run_on_processes, run_on_ray
from kubesched.simulate.sweep.cell import CellResult
from kubesched.simulate.sweep.grid import cells_of, scenario_from_paths, variants
from kubesched.testing.builders import make_node, make_pod

GPU = Path(__file__).resolve().parent.parent / "examples" / "gpu"
ZONE = "topology.kubernetes.io/zone"


def generated(directory: Path, nodes: int, pods: int) -> Path:
    """`nodes` 8-CPU nodes in three zones and `pods` pending pods of 1-4 CPUs."""
    items: list[Any] = [
        {
            "kind": "Node",
            **msgspec.to_builtins(make_node(f"n{i}", cpu="8", memory="32Gi", labels={ZONE: f"z{i % 3}"})),
        }
        for i in range(nodes)
    ]
    items += [
        {"kind": "Pod", **msgspec.to_builtins(make_pod(f"p{i}", cpu=str(1 + i % 4), memory="1Gi"))}
        for i in range(pods)
    ]
    path = directory / "generated.json"
    path.write_bytes(msgspec.json.encode({"kind": "List", "items": items}))
    return path


def answers(results: Sequence[CellResult]) -> list[Any]:
    out = []
    for r in results:
        run = msgspec.to_builtins(r.run) if r.run else None
        if run:
            run.pop("seconds")
        out.append((r.variant, r.scenario, r.seed, run, r.error))
    return out


def timed(run: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = run(*args)
    return result, round(time.perf_counter() - started, 2)


def cpu(results: Sequence[CellResult]) -> float:
    """CPU seconds the cells took, measured where each ran."""
    return round(sum(r.cpu_seconds for r in results), 2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--ray", metavar="ADDRESS")
    parser.add_argument("--smoke", action="store_true", help="a 50-node generated cluster, 1 seed (CI)")
    args = parser.parse_args(argv)
    size = (50, 60) if args.smoke else (5000, 6000)
    if args.smoke:
        args.seeds = 1
    registry = default_registry()
    configs = [(n, load_config(GPU / f"{n}.yaml", registry)) for n in ("scheduler-config", "baseline-config")]
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = [
            scenario_from_paths("gpu", [str(GPU / "cluster")]),
            scenario_from_paths("generated", [str(generated(Path(tmp), *size))]),
        ]
    cells = cells_of(variants(configs, []), scenarios, list(range(args.seeds)))
    here, here_s = timed(run_here, cells)
    failed = [r.error for r in here if r.error]
    if failed:
        print(f"cells failed: {failed[0]}", file=sys.stderr)
        return 1
    spread, spread_s = timed(run_on_processes, cells, args.workers)
    if answers(here) != answers(spread):
        print("the worker processes' answers differ from this process's", file=sys.stderr)
        return 1
    figures: dict[str, Any] = {
        "cells": len(cells),
        "hereSeconds": here_s,
        "hereCpuSeconds": cpu(here),
        "processSeconds": spread_s,
        "processCpuSeconds": cpu(spread),
        "loadAverage": round(os.getloadavg()[0], 1),
        "workers": args.workers,
        "processSpeedup": round(here_s / spread_s, 2),
    }
    if args.ray:
        (on_ray, cpus), ray_s = timed(run_on_ray, cells, args.ray)
        if answers(here) != answers(on_ray):
            print("Ray's answers differ from this process's", file=sys.stderr)
            return 1
        figures |= {
            "raySeconds": ray_s,
            "rayCpuSeconds": cpu(on_ray),
            "rayCpus": cpus,
            "raySpeedup": round(here_s / ray_s, 2),
        }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
