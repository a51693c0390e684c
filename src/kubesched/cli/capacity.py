"""`kubesched capacity SHAPE [PATH ...]`: how many more of a pod or workload fit, where, and why not more."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kubesched.cli._flags import add_feature_gates_flag, feature_gates
from kubesched.cli.cluster_input import (
    add_cluster_options,
    cluster_given,
    cluster_objects,
    refuse_paths_with_cluster,
)
from kubesched.cli.inputs import (
    add_demo_option,
    add_output_option,
    add_seed_option,
    add_strict_option,
    check_priority_classes,
    load_inputs,
    load_objects,
    require_cluster,
)
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.api.loader import LoadedObjects
    from kubesched.simulate.capacity.gang import Gang

__all__ = ["add_capacity_command"]


def add_capacity_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `capacity`; it sets `func(args) -> int`."""
    cmd = subparsers.add_parser(
        "capacity",
        help="how many more replicas of a pod or workload fit, per node and zone, and why not one more",
        description=(
            "Schedule the cluster of PATHs (or the live cluster of --kubeconfig, read-only; or, with "
            "--demo, the bundled demo) as `simulate` does, "
            "then add copies of each pod or workload in SHAPE (a file: several objects mean several "
            "shapes, each answered on its own) until one does not fit. Prints how many fit, where, "
            "and the FailedScheduling message of the next one. Copies never preempt."
        ),
    )
    cmd.add_argument(
        "shape", metavar="SHAPE", help="a file holding Pods and/or workloads (Deployment, Job, ...)"
    )
    cmd.add_argument("paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories of objects")
    cmd.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream defaults)"
    )
    cmd.add_argument(
        "--max",
        type=int,
        default=None,
        metavar="N",
        help="stop counting a shape at N copies (default 10000), or adding nodes for a gang at N "
        "(default 1000); the answer is then 'at least N' (a gang: 'more than N')",
    )
    cmd.add_argument(
        "--node-shape",
        metavar="FILE",
        help="a Node manifest: for each gang (a scheduling.k8s.io PodGroup and its pods in SHAPE, "
        "GenericWorkload on), how many more nodes of this shape until the whole gang fits",
    )
    add_cluster_options(cmd)
    add_demo_option(cmd)
    add_output_option(cmd)
    add_seed_option(cmd)
    add_strict_option(cmd)
    add_feature_gates_flag(cmd)
    cmd.set_defaults(func=_capacity)


def _capacity(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.api.objects import Pod
    from kubesched.plugins import default_registry
    from kubesched.simulate.capacity.gang import DEFAULT_NODE_LIMIT, node_shape_of
    from kubesched.simulate.capacity.run import DEFAULT_LIMIT, capacity, shapes_of
    from kubesched.simulate.capacity.table import render_capacity
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json

    live = cluster_given(args)
    require_cluster(args.paths, demo=args.demo, live=live)
    refuse_paths_with_cluster(args.paths, args)
    gates = feature_gates(args)
    registry = default_registry(features=gates)
    reader = (lambda: cluster_objects(args, command="capacity", gates=gates)) if live else None
    objects, config = load_inputs(args.paths, args.config, registry, gates, strict=args.strict, live=reader)
    given = load_objects([args.shape], strict=args.strict, whole_cluster=False)
    check_priority_classes(
        given, strict=args.strict, known=[pc.metadata.name for pc in objects.priority_classes]
    )
    gangs = _gangs(given, args, enabled=gates.enabled("GenericWorkload"))
    found = [s for s in shapes_of(given) if not (isinstance(s, Pod) and any(s in g.pods for g in gangs))]
    if not found and not gangs:
        raise InputError(
            "holds no Pod or workload (Deployment, ReplicaSet, StatefulSet, ...)", source=args.shape
        )
    node_shape = None
    if args.node_shape:
        node_shape = node_shape_of(
            load_objects([args.node_shape], strict=args.strict, whole_cluster=False), args.node_shape
        )
    limit = DEFAULT_LIMIT if args.max is None else args.max
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = capacity(
            objects,
            found,
            config,
            registry,
            seed=args.seed,
            limit=limit,
            progress=progress,
            gangs=gangs,
            node_shape=node_shape,
            node_limit=DEFAULT_NODE_LIMIT if args.max is None else args.max,
        )
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    else:
        render_capacity(report, Console(width=None if sys.stdout.isatty() else 200, highlight=False))
    return 0


def _gangs(given: LoadedObjects, args: argparse.Namespace, *, enabled: bool) -> list[Gang]:
    """The gangs of SHAPE: its scheduling.k8s.io PodGroups with their pods (GenericWorkload on)."""
    from kubesched.simulate.capacity.gang import gangs_of

    if not given.scheduling_pod_groups:
        if args.node_shape:
            raise InputError(
                "--node-shape counts nodes for a gang: SHAPE holds no PodGroup (scheduling.k8s.io)"
            )
        return []
    if not enabled:
        name = given.scheduling_pod_groups[0].metadata.name
        raise InputError(
            f"holds PodGroup {name}: a gang is counted with --feature-gates=GenericWorkload=true, as "
            "kube-scheduler schedules pod groups only with it",
            source=args.shape,
        )
    return gangs_of(given)
