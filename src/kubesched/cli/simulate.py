"""`kubesched simulate [PATH ...]`: schedule pods on an in-memory cluster and explain every decision."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubesched.cli._flags import add_feature_gates_flag, feature_gates
from kubesched.cli.cluster_input import (
    add_cluster_options,
    cluster_given,
    cluster_objects,
    refuse_paths_with_cluster,
)
from kubesched.cli.inputs import (
    DEMO_DIR,
    add_strict_option,
    check_priority_classes,
    input_notes,
    load_inputs,
    load_objects,
    print_warnings,
    refuse_html_on_terminal,
)
from kubesched.config.features import FeatureGates
from kubesched.errors import InputError
from kubesched.framework.registry import Registry
from kubesched.scheduler.options import TIE_BREAK_RANDOM, TIE_BREAKS
from kubesched.simulate.snapshot.model import POD_SELECTIONS

if TYPE_CHECKING:
    from kubesched.api.loader import LoadedObjects
    from kubesched.cluster.memory import MemoryCluster
    from kubesched.scheduler.scheduler import Attempt, Scheduler
    from kubesched.simulate.snapshot.model import Report
    from kubesched.simulate.snapshot.nearest import Nearest

__all__ = ["DEMO_DIR", "EXIT_UNSCHEDULABLE", "add_simulate_command", "errors_into", "print_tracebacks"]

#: `--fail-on-unschedulable` and a pod was not placed: distinct from bad input (2) and a crash (1).
EXIT_UNSCHEDULABLE = 3


def add_simulate_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `simulate`; it sets `func(args) -> int`."""
    sim = subparsers.add_parser(
        "simulate",
        help="schedule pods on an in-memory cluster loaded from YAML and explain every decision",
        description=(
            "Schedule the pending pods of PATHs (files or directories of Kubernetes objects, e.g. the "
            "output of `kubectl get nodes,pods -A -o yaml`), or of the live cluster of --kubeconfig "
            "(read-only, one consistent snapshot), in memory. Without either, the bundled demo "
            "cluster and its configuration are used."
        ),
    )
    sim.add_argument(
        "paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories of objects; - reads stdin"
    )
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
        metavar="NAME",
        help="list only this pod (NS/NAME, or NAME), or the pods of this workload as the report prints "
        "it ('Deployment NS/NAME'); repeatable; with --explain the pods named so get full per-node "
        "detail and scores",
    )
    sim.add_argument("--no-nodes", action="store_true", help="leave out the node utilization")
    sim.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help=f"exit with code {EXIT_UNSCHEDULABLE} when a pod was not placed (Unschedulable, Error, "
        "Gated or Waiting; with --scenario, still pending at the end), after printing the report",
    )
    sim.add_argument(
        "--debug",
        action="store_true",
        help="print the traceback of every plugin error (and of an unexpected failure) on stderr",
    )
    sim.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )
    sim.add_argument(
        "--tie-break",
        choices=TIE_BREAKS,
        default=TIE_BREAK_RANDOM,
        help="among equal best nodes: random (kube-scheduler's, seeded by --seed) or nodeName, the "
        "lowest name (the rule of the FGD paper's simulator; not a kube-scheduler setting)",
    )
    add_cluster_options(sim)
    add_feature_gates_flag(sim)
    add_strict_option(sim)
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from kubesched.cli._console import stdout_console
    from kubesched.plugins import default_registry
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json
    from kubesched.simulate.snapshot.model import select
    from kubesched.simulate.snapshot.names import resolve_pod_names
    from kubesched.simulate.snapshot.run import simulate
    from kubesched.simulate.snapshot.table import TableOptions, render_table

    gates = feature_gates(args)
    registry = default_registry(features=gates)
    refuse_html_on_terminal(args.output)
    refuse_paths_with_cluster(args.paths, args)
    if args.scenario is not None:
        return _replay(args, registry, gates)
    live = (lambda: cluster_objects(args, command="simulate", gates=gates)) if cluster_given(args) else None
    objects, config = load_inputs(args.paths, args.config, registry, gates, strict=args.strict, live=live)
    for note in input_notes(objects, gates):
        print(f"kubesched: note: {note}", file=sys.stderr)
    wanted = frozenset(args.pod)
    errors: dict[str, BaseException] = {}
    nearest: dict[str, Nearest] = {}
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = simulate(
            objects,
            config,
            registry,
            seed=args.seed,
            tie_break=args.tie_break,
            explain=args.explain,
            per_node=True if args.per_node else None,
            detail_pods=wanted,
            progress=progress,
            on_attempt=errors_into(errors) if args.debug else None,
            # The page's pod panel says what is missing on the nearest nodes, as `explain` does.
            on_settled=nearest_into(nearest) if args.explain and args.output == "html" else None,
        )
    not_placed = sum(1 for p in report.pods if p.result in POD_SELECTIONS["unschedulable"])
    keys = resolve_pod_names(report.pods, sorted(wanted))
    report = select(report, pods=args.pods, keys=keys, nodes=not args.no_nodes)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    elif args.output == "html":
        from kubesched.simulate.snapshot.html import snapshot_html

        sys.stdout.buffer.write(snapshot_html(report, nearest=nearest))
    else:
        options = TableOptions(
            explain=args.explain, scores=args.scores or bool(wanted), nodes=not args.no_nodes
        )
        render_table(report, stdout_console(), options)
    print_tracebacks({pod: e for pod, e in errors.items() if not keys or pod in keys})
    return _exit_code(args, not_placed)


def _exit_code(args: argparse.Namespace, not_placed: int) -> int:
    """0, or `EXIT_UNSCHEDULABLE` (with one line on stderr) for `--fail-on-unschedulable`."""
    if not (args.fail_on_unschedulable and not_placed):
        return 0
    print(f"kubesched: {not_placed} pod(s) not scheduled (--fail-on-unschedulable)", file=sys.stderr)
    return EXIT_UNSCHEDULABLE


def errors_into(errors: dict[str, BaseException]) -> Callable[[Attempt], None]:
    """An `on_attempt` that keeps each pod's last error (for `--debug`)."""

    def keep(attempt: Attempt) -> None:
        if attempt.error is not None:
            errors[attempt.pod.key] = attempt.error

    return keep


def nearest_into(nearest: dict[str, Nearest]) -> Callable[[Scheduler, MemoryCluster, Report], None]:
    """An `on_settled` that keeps the nearest nodes of the run's unschedulable pods (for the page)."""

    def keep(scheduler: Scheduler, cluster: MemoryCluster, report: Report) -> None:
        from kubesched.simulate.snapshot.nearest import nearest_by_pod

        nearest.update(nearest_by_pod(scheduler, cluster, report.pods))

    return keep


def print_tracebacks(errors: dict[str, BaseException]) -> None:
    """`--debug`: the traceback behind each pod's last Error (a plugin's exception is the cause)."""
    import traceback

    for pod, error in sorted(errors.items()):
        cause = error.__cause__ or error
        text = "".join(traceback.format_exception(cause)).rstrip()
        print(f"kubesched: traceback of {pod}'s error ({error}):\n{text}", file=sys.stderr)


def _replay(args: argparse.Namespace, registry: Registry, gates: FeatureGates) -> int:
    """`--scenario FILE`: replay a timeline (after the objects of PATHs, created at 0s)."""
    from kubesched.cli._console import stdout_console
    from kubesched.config import default_config, load_config
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.replay.run import replay
    from kubesched.simulate.replay.table import render_replay_table
    from kubesched.simulate.report import to_json
    from kubesched.simulate.scenario import load_scenario

    config = load_config(args.config, registry, gates) if args.config else default_config(registry, gates)
    ignored: list[InputError] | None = None if args.strict else []
    scenario = load_scenario(args.scenario, lenient=ignored)
    print_warnings(ignored or [])
    initial: LoadedObjects | None = None
    if cluster_given(args):
        initial = cluster_objects(args, command="simulate", gates=gates)
    elif args.paths:
        initial = load_objects(args.paths, strict=args.strict)
    check_priority_classes(
        scenario.every_object(),
        strict=args.strict,
        known=[pc.metadata.name for pc in initial.priority_classes] if initial is not None else [],
    )
    with progress_reporter(enabled=sys.stderr.isatty(), label="replaying") as progress:
        report = replay(
            scenario,
            config,
            registry,
            initial=initial,
            seed=args.seed,
            tie_break=args.tie_break,
            explain=args.explain,
            progress=progress,
        )
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    elif args.output == "html":
        from kubesched.simulate.replay.html import replay_html

        sys.stdout.buffer.write(replay_html(report))
    else:
        render_replay_table(report, stdout_console())
    return _exit_code(args, report.summary.pending)
