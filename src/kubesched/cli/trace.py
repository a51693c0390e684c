"""`kubesched trace import openb NODES.csv PODS.csv`: a published GPU trace as a replayable scenario.

The logic is in `kubesched.simulate.trace`; this module reads the flags, writes the file and says
what was written. The format and the protocol are described in docs/trace-import.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubesched.cli._output import check_writable, write_atomically
from kubesched.errors import InputError

__all__ = ["add_trace_command"]


def add_trace_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `trace import openb`; it sets `func(args) -> int`."""
    trace = subparsers.add_parser(
        "trace",
        help="turn a published cluster trace into a scenario that simulate --scenario replays",
        description="Turn a published cluster trace into a scenario that `simulate --scenario` replays.",
    )
    commands = trace.add_subparsers(dest="trace_command", metavar="COMMAND", required=True)
    imp = commands.add_parser(
        "import",
        help="write a trace's machines and tasks as a scenario",
        description="Write a trace's machines and tasks as a kubesched.io/v1alpha1 Scenario.",
    )
    formats = imp.add_subparsers(dest="trace_format", metavar="FORMAT", required=True)
    openb = formats.add_parser(
        "openb",
        help='the Alibaba GPU trace "openb" (cluster-trace-gpu-v2023) of the FGD paper',
        description=(
            'Import the Alibaba GPU trace "openb" (cluster-trace-gpu-v2023; Weng et al., "Beware of '
            'Fragmentation", USENIX ATC 2023): every machine of NODES.csv becomes a node whose GPUs '
            "are DRA devices with a consumable share (or nvidia.com/gpu counts), every task of "
            "PODS.csv a pod arriving at its creation time, with no departures. The paper uses the "
            "GPU node list (openb_node_list_gpu_node.csv)."
        ),
    )
    openb.add_argument("nodes", metavar="NODES.csv", help="the node list: sn,cpu_milli,memory_mib,gpu,model")
    openb.add_argument(
        "pods",
        metavar="PODS.csv",
        help="the task list: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...,creation_time,...]",
    )
    openb.add_argument(
        "-o", "--output", default="-", metavar="OUT", help="where to write the scenario (default: stdout)"
    )
    openb.add_argument(
        "--format",
        choices=("json", "yaml"),
        help="file format (default: yaml for a .yaml or .yml OUT, else json, which replays faster)",
    )
    openb.add_argument(
        "--gpu-as",
        choices=("dra", "extended"),
        default="dra",
        help="GPUs as DRA devices with a consumable share (default), or as nvidia.com/gpu counts "
        "(no sharing: a task wanting part of a GPU gets a whole one)",
    )
    openb.add_argument(
        "--target-gpu-percent",
        type=_percent,
        metavar="P",
        help="resize the workload until the GPUs it asks for reach P%% of the cluster's, drawing "
        "tasks from the trace (seeded, with replacement) or removing some, as the FGD authors do",
    )
    openb.add_argument(
        "--seed", type=int, default=0, help="seed of the draws and of --order shuffled (default 0)"
    )
    openb.add_argument(
        "--order",
        choices=("trace", "sequence", "shuffled"),
        default="trace",
        help="tasks arrive at their trace times (default), or one every millisecond in trace order "
        "or in a seeded random order (shuffled: the paper's Fig. 9 runs); drawn tasks come last",
    )
    openb.add_argument(
        "--rank-nodes",
        action="store_true",
        help="prefix each node's name with a seeded random rank (0412-openb-node-0000), as the FGD "
        "authors' simulator does: with --tie-break nodeName, ties then go to a seeded random node order",
    )
    openb.add_argument("--name", metavar="NAME", help="the scenario's metadata.name (default: from PODS.csv)")
    openb.set_defaults(func=_import_openb)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a percentage above 0, got {text}")
    return value


def _import_openb(args: argparse.Namespace) -> int:
    from kubesched.simulate.scenario import dump_scenario
    from kubesched.simulate.trace.openb import scenario_for
    from kubesched.simulate.trace.openb_csv import GPU_MILLI, read_nodes, read_tasks
    from kubesched.simulate.trace.openb_workload import arrange, ranked_nodes

    as_yaml = args.format == "yaml" if args.format else str(args.output).endswith((".yaml", ".yml"))
    check_writable(args.output)
    nodes = read_nodes(args.nodes)
    tasks = read_tasks(args.pods)
    capacity = sum(n.gpus for n in nodes) * GPU_MILLI
    if args.target_gpu_percent is not None and capacity == 0:
        raise InputError("has no GPUs: --target-gpu-percent needs some", source=args.nodes)
    workload = arrange(
        tasks, capacity, target_percent=args.target_gpu_percent, seed=args.seed, order=args.order
    )
    if args.rank_nodes:
        nodes = ranked_nodes(nodes, args.seed)
    annotations = {
        "kubesched.io/trace": "openb",
        "kubesched.io/trace-nodes": Path(args.nodes).name,
        "kubesched.io/trace-pods": Path(args.pods).name,
        "kubesched.io/gpu-as": args.gpu_as,
        "kubesched.io/seed": str(args.seed),
        "kubesched.io/order": args.order,
    }
    if args.rank_nodes:
        annotations["kubesched.io/rank-nodes"] = "true"
    if args.target_gpu_percent is not None:
        annotations["kubesched.io/target-gpu-percent"] = f"{args.target_gpu_percent:g}"
    name = args.name or f"openb-{Path(args.pods).stem.removeprefix('openb_pod_list_')}"
    imported = scenario_for(name, nodes, workload, gpu_as=args.gpu_as, annotations=annotations)
    write_atomically(args.output, dump_scenario(imported.document, json=not as_yaml))
    where = "stdout" if args.output == "-" else args.output
    share = f"{100 * workload.gpu_requested / capacity:.1f}% of the cluster's" if capacity else "no GPUs"
    drawn = f", {workload.sampled} drawn" if workload.sampled else ""
    removed = f", {workload.removed} removed" if workload.removed else ""
    print(
        f"kubesched trace import: {imported.nodes} nodes ({imported.gpus} GPUs), {imported.pods} pods "
        f"({workload.kept} from the trace{drawn}{removed}; GPUs asked for: {share}) written to {where}",
        file=sys.stderr,
    )
    if imported.rounded_up:
        print(
            f"kubesched trace import: {imported.rounded_up} tasks want part of a GPU and ask for a whole "
            "nvidia.com/gpu instead: extended resources cannot be shared (--gpu-as dra can)",
            file=sys.stderr,
        )
    return 0
