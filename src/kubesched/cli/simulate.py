"""`kubesched simulate [PATH ...]`: schedule pods on an in-memory cluster and explain every decision."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.config.types import KubeSchedulerConfiguration
    from kubesched.framework.registry import Registry

__all__ = ["DEMO_DIR", "add_simulate_command"]

DEMO_DIR = Path(__file__).resolve().parents[1] / "simulate" / "demo"


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
    sim.add_argument(
        "--scenario",
        metavar="FILE",
        help="replay this timeline of creates and deletes in virtual time (docs/scenarios.md); "
        "PATHs, if given, are the cluster at 0s",
    )
    sim.add_argument(
        "--output",
        "-o",
        choices=("table", "json", "html"),
        default="table",
        help="report format; html is one self-contained page with charts (redirect it to a file)",
    )
    sim.add_argument("--explain", action="store_true", help="per node: filter verdicts and plugin scores")
    sim.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.api.loader import load_paths
    from kubesched.config import default_config, load_config
    from kubesched.plugins import default_registry
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json
    from kubesched.simulate.runner import simulate
    from kubesched.simulate.table import render_table

    registry = default_registry()
    paths: list[str] = list(args.paths)
    config_path: str | None = args.config
    if not paths and args.scenario is None:
        if not DEMO_DIR.is_dir():
            raise InputError("the bundled demo cluster is not installed; pass PATHs of objects")
        paths = [str(DEMO_DIR / "cluster")]
        if config_path is None:
            config_path = str(DEMO_DIR / "scheduler-config.yaml")
    if args.output == "html" and sys.stdout.isatty():
        raise InputError("--output html writes a whole web page: redirect it to a file (> report.html)")
    config = load_config(config_path, registry) if config_path else default_config(registry)
    if args.scenario is not None:
        return _replay(args, config, registry)
    objects = load_paths(paths)
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = simulate(objects, config, registry, seed=args.seed, explain=args.explain, progress=progress)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    elif args.output == "html":
        from kubesched.simulate.html import snapshot_html

        sys.stdout.buffer.write(snapshot_html(report))
    else:
        width = None if sys.stdout.isatty() else 200
        render_table(report, Console(width=width, highlight=False))
    return 0


def _replay(args: argparse.Namespace, config: KubeSchedulerConfiguration, registry: Registry) -> int:
    from rich.console import Console

    from kubesched.api.loader import load_paths
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.replay import replay
    from kubesched.simulate.replay_report import replay_to_json
    from kubesched.simulate.replay_table import render_replay_table
    from kubesched.simulate.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    initial = load_paths(args.paths) if args.paths else None
    with progress_reporter(enabled=sys.stderr.isatty(), label="replaying") as progress:
        report = replay(
            scenario,
            config,
            registry,
            initial=initial,
            seed=args.seed,
            explain=args.explain,
            progress=progress,
        )
    if args.output == "json":
        sys.stdout.buffer.write(replay_to_json(report) + b"\n")
    elif args.output == "html":
        from kubesched.simulate.html import replay_html

        sys.stdout.buffer.write(replay_html(report))
    else:
        width = None if sys.stdout.isatty() else 200
        render_replay_table(report, Console(width=width, highlight=False))
    return 0
