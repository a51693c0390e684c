"""`kubesched simulate [PATH ...]`: schedule pods on an in-memory cluster and explain every decision."""

from __future__ import annotations

import argparse
import sys

from kubesched.cli.inputs import DEMO_DIR, add_seed_option, load_inputs

__all__ = ["DEMO_DIR", "add_simulate_command"]


def add_simulate_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `simulate`; it sets `func(args) -> int`."""
    sim = subparsers.add_parser(
        "simulate",
        help="schedule pods on an in-memory cluster loaded from YAML and explain every decision",
        description=(
            "Schedule the pending pods of PATHs (files or directories of Kubernetes objects, e.g. the "
            "output of `kubectl get nodes,pods -A -o yaml`) in memory. Without PATH the bundled demo "
            "cluster and its configuration are used."
        ),
    )
    sim.add_argument("paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories of objects")
    sim.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream defaults)"
    )
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table", help="report format")
    sim.add_argument("--explain", action="store_true", help="per node: filter verdicts and plugin scores")
    add_seed_option(sim)
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.plugins import default_registry
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json
    from kubesched.simulate.runner import simulate
    from kubesched.simulate.table import render_table

    registry = default_registry()
    objects, config = load_inputs(args.paths, args.config, registry)
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = simulate(objects, config, registry, seed=args.seed, explain=args.explain, progress=progress)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    else:
        width = None if sys.stdout.isatty() else 200
        render_table(report, Console(width=width, highlight=False))
    return 0
