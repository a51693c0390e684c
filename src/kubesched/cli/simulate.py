"""`kubesched simulate [PATH ...]`: schedule pods on an in-memory cluster and explain every decision."""

from __future__ import annotations

import argparse
import sys

from kubesched.cli.inputs import DEMO_DIR, load_inputs
from kubesched.errors import InputError, did_you_mean
from kubesched.simulate.report import POD_SELECTIONS

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
    sim.add_argument(
        "--explain",
        action="store_true",
        help="why each pod went where it did: rejections by plugin and reason with node counts and "
        "names, the top nodes' scores; in JSON also every node's verdict and scores on clusters of "
        "at most 100 nodes",
    )
    sim.add_argument(
        "--scores",
        action="store_true",
        help="with --explain, the table also shows the top nodes and per-plugin scores of scheduled pods",
    )
    sim.add_argument(
        "--per-node",
        action="store_true",
        help="with --explain, the JSON report keeps every node's filter verdict and scores for every "
        "pod, whatever the cluster's size (large: nodes x pods entries)",
    )
    sim.add_argument(
        "--pods",
        choices=tuple(POD_SELECTIONS),
        default="all",
        help="which pods to list: all (default), scheduled, or unschedulable (every pod not placed)",
    )
    sim.add_argument(
        "--pod",
        action="append",
        default=[],
        metavar="NS/NAME",
        help="list only this pod (repeatable); with --explain it gets full per-node detail and scores",
    )
    sim.add_argument("--no-nodes", action="store_true", help="leave out the node utilization")
    sim.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from kubesched.cli._console import stdout_console
    from kubesched.plugins import default_registry
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import select, to_json
    from kubesched.simulate.runner import simulate
    from kubesched.simulate.table import TableOptions, render_table

    registry = default_registry()
    objects, config = load_inputs(args.paths, args.config, registry)
    wanted = frozenset(args.pod)
    pending = {
        f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in objects.pods if not p.spec.node_name
    }
    _check_pod_names(wanted, pending)
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = simulate(
            objects,
            config,
            registry,
            seed=args.seed,
            explain=args.explain,
            per_node=True if args.per_node else None,
            detail_pods=wanted,
            progress=progress,
        )
    report = select(report, pods=args.pods, keys=wanted, nodes=not args.no_nodes)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    else:
        options = TableOptions(
            explain=args.explain, scores=args.scores or bool(wanted), nodes=not args.no_nodes
        )
        render_table(report, stdout_console(), options)
    return 0


def _check_pod_names(wanted: frozenset[str], pending: set[str]) -> None:
    """Every `--pod` must name a pending pod of the input (`namespace/name`)."""
    for key in sorted(wanted):
        if key not in pending:
            if "/" not in key:
                hint = did_you_mean(f"default/{key}", pending) or did_you_mean(key, pending)
                raise InputError(f"expected NAMESPACE/NAME, got {key!r}{hint}", source="--pod")
            raise InputError(f"no pending pod {key} in the input{did_you_mean(key, pending)}", source="--pod")
