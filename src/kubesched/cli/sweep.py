"""`kubesched sweep`: configurations x scenarios x seeds (or a profile's weights over ranges), in parallel."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kubesched.cli.inputs import DEMO_DIR, add_configs_option, add_output_option, load_configs
from kubesched.errors import InputError

__all__ = ["add_sweep_command"]


def add_sweep_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `sweep`; it sets `func(args) -> int`."""
    cmd = subparsers.add_parser(
        "sweep",
        help="run a grid of simulations (configs x scenarios x seeds, or weights over ranges) in parallel",
        description=(
            "Simulate every combination of --config (and of --weight values over each), scenario and seed, "
            "in parallel worker processes or on a Ray cluster (--ray), and gather the figures of "
            "`kubesched compare` into one comparison: per configuration and scenario, mean and spread over "
            "the seeds. The scenario is PATHs, or each --scenario, or the bundled demo cluster."
        ),
    )
    cmd.add_argument("paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories: one scenario")
    add_configs_option(
        cmd,
        required=False,
        help="a KubeSchedulerConfiguration, or `default` (repeatable; default: `default`)",
    )
    cmd.add_argument(
        "--scenario",
        dest="scenarios",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or directory of objects as one scenario (repeatable)",
    )
    cmd.add_argument("--seeds", default="0", metavar="LIST", help="seeds: 0,1,2 or 0..9 (default 0)")
    cmd.add_argument(
        "--weight",
        dest="weights",
        action="append",
        default=[],
        metavar="PLUGIN=WEIGHTS",
        help="Score weights to try for PLUGIN in every profile: 1,5,10 or 1..10:3 (repeat: all combinations)",
    )
    cmd.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="local worker processes (default: the CPUs; 1: here)",
    )
    cmd.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS (host:port) instead")
    add_output_option(cmd)
    cmd.set_defaults(func=_sweep)


def _sweep(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.config.types import KubeSchedulerConfiguration
    from kubesched.plugins import default_registry
    from kubesched.simulate.compare.run import run_name
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json
    from kubesched.simulate.sweep.backends import default_workers, run_here, run_on_processes, run_on_ray
    from kubesched.simulate.sweep.grid import (
        cells_of,
        parse_seeds,
        parse_weight,
        scenario_from_paths,
        variants,
    )
    from kubesched.simulate.sweep.summary import summarize
    from kubesched.simulate.sweep.table import render_sweep

    registry = default_registry()
    seeds = parse_seeds(args.seeds)
    weights = [parse_weight(w) for w in args.weights]
    configs: list[tuple[str, KubeSchedulerConfiguration]] = []
    for path, config in load_configs(args.configs or ["default"], registry):
        configs.append((run_name(path, [name for name, _ in configs]), config))
    scenarios = [scenario_from_paths(Path(p).stem or p, [p]) for p in args.scenarios]
    if args.paths:
        scenarios.insert(
            0, scenario_from_paths(Path(args.paths[0]).stem if len(args.paths) == 1 else "input", args.paths)
        )
    if not scenarios:
        scenarios = [scenario_from_paths("demo", [str(DEMO_DIR / "cluster")])]
    cells = cells_of(variants(configs, weights), scenarios, seeds)
    workers = default_workers() if args.workers is None else args.workers
    if workers < 1:
        raise InputError("must be at least 1", path="--workers")
    started = time.perf_counter()
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        if args.ray:
            results, workers = run_on_ray(cells, args.ray, progress)
            backend = "ray"
        elif workers == 1 or len(cells) == 1:
            results, workers, backend = run_here(cells, progress), 1, "here"
        else:
            workers = min(workers, len(cells))
            results, backend = run_on_processes(cells, workers, progress), "processes"
    result = summarize(results, backend=backend, workers=workers, seconds=time.perf_counter() - started)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(result) + b"\n")
    else:
        render_sweep(result, Console(width=None if sys.stdout.isatty() else 200, highlight=False))
    for error in dict.fromkeys(c.error for c in results if c.error):
        print(f"kubesched: {error}", file=sys.stderr)
    return 2 if any(c.error for c in results) else 0
