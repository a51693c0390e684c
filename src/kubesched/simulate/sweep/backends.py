"""Where a sweep's cells run: here, in local worker processes, or on a Ray cluster.

Results come back in the order of the cells whatever the backend, so a sweep's output does not
depend on where it ran (only its `seconds` do).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from kubesched.errors import InputError
from kubesched.simulate.sweep.cell import CellResult, run_cell
from kubesched.simulate.sweep.grid import Cell, Scenario, Variant

__all__ = ["default_workers", "run_here", "run_on_processes", "run_on_ray"]

Progress = Callable[[int, int], None] | None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_here(cells: Sequence[Cell], progress: Progress = None) -> list[CellResult]:
    results = []
    for done, cell in enumerate(cells, start=1):
        results.append(run_cell(cell))
        if progress is not None:
            progress(done, len(cells))
    return results


def run_on_processes(cells: Sequence[Cell], workers: int, progress: Progress = None) -> list[CellResult]:
    """Each cell in one of `workers` processes forked from a server that imported the simulator once.

    A fork server rather than a plain fork: nothing of this process (threads, a progress bar, open
    clients) is inherited, and the workers start without importing everything again.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["kubesched.simulate.sweep.cell"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(run_cell, cell) for cell in cells]
        results = []
        for done, future in enumerate(futures, start=1):
            results.append(future.result())
            if progress is not None:
                progress(done, len(cells))
        return results


def _run_remote(variant: Variant, scenario: Scenario, seed: int) -> CellResult:
    return run_cell(Cell(variant, scenario, seed))


def run_on_ray(
    cells: Sequence[Cell], address: str, progress: Progress = None
) -> tuple[list[CellResult], int]:
    """The cells as Ray tasks on the cluster at `address`; returns the results and the cluster's CPUs.

    Each scenario is put in the object store once and shared by its cells. The cluster's nodes
    need kubesched installed (the same version), as any Ray task needs its code.
    """
    try:
        import ray
    except ImportError:
        raise InputError("Ray is not installed: pip install 'kubesched[ray]'", path="--ray") from None
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise InputError(f"cannot connect to the Ray cluster: {err}", path="--ray") from None
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))  # type: ignore[no-untyped-call,unused-ignore]  # typed only with ray installed
        task = ray.remote(num_cpus=1)(_run_remote)
        stored = {s: ray.put(s) for s in dict.fromkeys(c.scenario for c in cells)}
        pending = {task.remote(c.variant, stored[c.scenario], c.seed): i for i, c in enumerate(cells)}
        results: list[CellResult | None] = [None] * len(cells)
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                results[pending[ref]] = ray.get(ref)
            if progress is not None:
                progress(len(cells) - len(waiting), len(cells))
        return [r for r in results if r is not None], cpus
    finally:
        ray.shutdown()
