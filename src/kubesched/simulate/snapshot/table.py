"""The human view of a simulate report: one line per pod, explanations, node utilization, a summary.

Messages are never cut: the REASON column wraps to the console's width (the terminal's, or
`COLUMNS` when the output is piped).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from kubesched.api.quantity import parse_quantity
from kubesched.simulate.explain.table import pre_filter_line, rejection_table, score_table
from kubesched.simulate.snapshot.groups import PodGroup, group_pods
from kubesched.simulate.snapshot.model import NodeUsage, PodGroupResult, PodResult, Report, WorkloadResult
from kubesched.simulate.snapshot.workloads import workload_label

_STYLE = {
    "Scheduled": "green",
    "Unschedulable": "red",
    "Error": "bold red",
    "Gated": "yellow",
    "Waiting": "cyan",
    "Ignored": "dim",
    "Deleted": "dim",
}
#: Bytes in a GiB: node memory is shown in GiB on both sides of the usage column.
GIB = 1024**3
#: Pod names a grouped explanation lists before `...`.
GROUP_NAMES = 3


@dataclass(frozen=True, slots=True)
class TableOptions:
    #: Explain the pods that were not placed (rejections per plugin and reason).
    explain: bool = False
    #: With `explain`, also show the top nodes and their scores for scheduled pods.
    scores: bool = False
    #: Show the node utilization table.
    nodes: bool = True


def render_table(report: Report, console: Console, options: TableOptions = TableOptions()) -> None:
    console.print(_pod_table(report.pods))
    if options.explain:
        weights = {p.scheduler_name: p.score_weights for p in report.profiles}
        for group in group_pods(report.pods):
            p = group.first
            block = _explanation(group, weights.get(p.scheduler_name, {}), scores=options.scores)
            if block is not None:
                console.print()
                console.print(block)
        console.print()
    if report.workloads:
        console.print(workload_table(report.workloads))
    if report.pod_groups:
        console.print(pod_group_table(report.pod_groups))
    if options.nodes:
        console.print(_node_table(report.nodes))
    s = report.summary
    console.print(
        f"[bold]{s.scheduled}/{s.pods}[/] pods scheduled on {s.nodes} nodes in {s.seconds:.2f}s "
        f"({s.pods_per_second:g} pods/s); {s.unschedulable} unschedulable, {s.errors} error, "
        f"{s.gated} gated, {s.waiting} waiting, {s.ignored} ignored (other schedulers)",
        soft_wrap=True,  # one line whatever the width, for grep and tail
    )


def workload_table(workloads: list[WorkloadResult], *, title: str = "Workloads") -> Table:
    """Does each workload fit, and where: scheduled/desired, old pods left, zones, why not."""
    table = Table(title=title, header_style="bold")
    table.add_column("WORKLOAD", overflow="fold", ratio=2)
    for column in ("SCHEDULED", "PENDING", "OLD"):
        table.add_column(column, justify="right")
    table.add_column("ZONES", overflow="fold")
    table.add_column("REASON", overflow="fold", ratio=5)
    for w in workloads:
        style = "green" if w.complete else "red"
        table.add_row(
            escape(workload_label(w.kind, w.namespace, w.name)),
            f"[{style}]{w.scheduled}/{w.desired}[/]",
            str(w.pending),
            str(w.old),
            escape(" ".join(f"{zone}:{n}" for zone, n in w.zones.items())),
            escape(w.message or ""),
        )
    return table


def _styled(result: str) -> str:
    """A result in its colour (Scheduled green, Unschedulable red...), plain when it has none."""
    style = _STYLE.get(result, "")
    return f"[{style}]{result}[/]" if style else result


def pod_group_table(groups: list[PodGroupResult]) -> Table:
    """Each PodGroup: its result, pods bound of minCount, and the condition's message."""
    table = Table(title="Pod groups", header_style="bold")
    table.add_column("POD GROUP", overflow="fold", ratio=2)
    table.add_column("RESULT")
    table.add_column("BOUND", justify="right")
    table.add_column("REASON", overflow="fold", ratio=5)
    for g in groups:
        composite = g.kind == "CompositePodGroup"
        name = f"{g.namespace}/{g.name}" + (" (composite)" if composite else "")
        if g.parent is not None:
            name += f" in {g.parent}"
        table.add_row(
            escape(name),
            _styled(g.result),
            f"{len(g.placement)}/{g.pods} pods" if composite else f"{len(g.placement)}/{g.min_count}",
            escape(g.message or ""),
        )
    return table


def _pod_table(pods: list[PodResult]) -> Table:
    table = Table(title="Pods", show_lines=False, header_style="bold")
    table.add_column("POD", overflow="fold", ratio=2)
    table.add_column("PROFILE", overflow="fold")
    table.add_column("RESULT")
    table.add_column("NODE", overflow="fold")
    table.add_column("ATTEMPTS", justify="right")
    table.add_column("REASON", overflow="fold", ratio=5)
    for p in pods:
        # Cells hold input text: escape it, or rich takes `[a b]` (scheduling gates) for markup.
        table.add_row(
            escape(f"{p.namespace}/{p.name}"),
            escape(p.scheduler_name),
            _styled(p.result),
            escape(p.node or ""),
            str(p.attempts),
            escape(p.message or ""),
        )
    return table


def _explanation(group: PodGroup, weights: dict[str, int], *, scores: bool) -> RenderableType | None:
    """Why one pod (or a group of identical pods) ended where it did; None when there is nothing
    to explain."""
    p = group.first
    ex = p.explanation
    name = escape(_group_name(group))
    if p.result == "Scheduled":
        if not scores or ex is None:
            return None
        if not ex.top_nodes:
            return (
                f"[bold]{name}[/] went to [bold]{escape(p.node or '')}[/]: the only feasible node, not scored"
            )
        head = (
            f"[bold]{name}[/] went to [bold]{escape(p.node or '')}[/]: top of "
            f"{ex.scored_nodes} scored nodes, {ex.rejected_nodes} filtered out"
        )
        return Group(head, score_table(ex.top_nodes, weights))
    if p.result not in ("Unschedulable", "Waiting") or ex is None:
        return None
    parts: list[RenderableType] = []
    verb = "is" if len(group.pods) == 1 else "are"
    head = f"[bold]{name}[/] {verb} [red]{p.result}[/] after {group.attempts} attempt(s)"
    if p.pre_filter is not None:
        parts.append(head)
        parts.append(Padding(pre_filter_line(p.pre_filter), (0, 0, 0, 2)))
    elif ex.rejections:
        parts.append(f"{head}: {ex.rejected_nodes} node(s) rejected")
        parts.append(rejection_table(ex.rejections))
    else:
        parts.append(head)
    if p.victims:
        victims = ", ".join(p.victims)
        parts.append(
            f"  preemption evicted {escape(victims)}"
            + (f" to make room on {escape(p.nominated_node)}" if p.nominated_node else "")
        )
    elif p.nominated_node:
        parts.append(f"  nominated to {escape(p.nominated_node)} (waiting for victims to leave)")
    return Group(*parts)


def _group_name(group: PodGroup) -> str:
    """`ns/pod` for one pod; `N pods of Deployment ns/name (first, second, ...)` for a group."""
    p = group.first
    if len(group.pods) == 1:
        return f"{p.namespace}/{p.name}"
    names = ", ".join(q.name for q in group.pods[:GROUP_NAMES])
    more = ", ..." if len(group.pods) > GROUP_NAMES else ""
    return f"{len(group.pods)} pods of {p.workload} ({names}{more})"


def _node_table(nodes: list[NodeUsage]) -> Table:
    extended = sorted({r for n in nodes for r in n.allocatable if "/" in r})
    table = Table(title="Node utilization (requested / allocatable)", header_style="bold")
    for column in ("NODE", "PODS", "CPU (cores)", "MEMORY (GiB)", *(r.upper() for r in extended)):
        table.add_column(column)
    for n in nodes:
        cells = [escape(n.name), f"{n.pods}/{n.allocatable.get('pods', '0')}"]
        cells += [_usage(n, r) for r in ("cpu", "memory", *extended)]
        table.add_row(*cells)
    return table


def _usage(node: NodeUsage, resource: str) -> str:
    """`used/total pct%`, both sides in one unit: cores for cpu, GiB for memory."""
    alloc = node.allocatable.get(resource)
    if alloc is None:
        return "-"
    used = node.requested.get(resource, "0")
    total = parse_quantity(alloc)
    pct = f" {float(parse_quantity(used) * 100 / total):.0f}%" if total else ""
    if resource == "cpu":
        return f"{float(parse_quantity(used)):g}/{float(total):g}{pct}"
    if resource == "memory":
        return f"{_gib(float(parse_quantity(used)))}/{_gib(float(total))}{pct}"
    return f"{used}/{alloc}{pct}"


def _gib(amount: float) -> str:
    """Bytes as GiB with up to two decimals: `1.25`, `60.55`, `0`."""
    return f"{round(amount / GIB, 2):g}"
