"""The human view of a simulate report: one line per pod, node utilization, a summary."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.api.quantity import parse_quantity
from kubesched.simulate.report import NodeUsage, Report, WorkloadResult

_STYLE = {
    "Scheduled": "green",
    "Unschedulable": "red",
    "Error": "bold red",
    "Gated": "yellow",
    "Waiting": "cyan",
    "Ignored": "dim",
}
REASON_WIDTH = 110


def render_table(report: Report, console: Console) -> None:
    pods = Table(title="Pods", show_lines=False, header_style="bold")
    for column in ("POD", "PROFILE", "RESULT", "NODE", "ATTEMPTS", "REASON"):
        pods.add_column(column, overflow="fold" if column == "REASON" else "ellipsis")
    for p in report.pods:
        reason = p.message or ""
        if len(reason) > REASON_WIDTH:
            reason = reason[: REASON_WIDTH - 3] + "..."
        style = _STYLE.get(p.result, "")
        # Cells hold input text: escape it, or rich takes `[a b]` (scheduling gates) for markup.
        pods.add_row(
            escape(f"{p.namespace}/{p.name}"),
            escape(p.scheduler_name),
            f"[{style}]{p.result}[/]" if style else p.result,
            escape(p.node or ""),
            str(p.attempts),
            escape(reason),
        )
    console.print(pods)
    if report.workloads:
        console.print(_workload_table(report.workloads))
    console.print(_node_table(report.nodes))
    s = report.summary
    console.print(
        f"[bold]{s.scheduled}/{s.pods}[/] pods scheduled on {s.nodes} nodes in {s.seconds:.2f}s "
        f"({s.pods_per_second:g} pods/s); {s.unschedulable} unschedulable, {s.errors} error, "
        f"{s.gated} gated, {s.waiting} waiting, {s.ignored} ignored (other schedulers)"
    )


def _workload_table(workloads: list[WorkloadResult]) -> Table:
    """Does each workload fit, and where: scheduled/desired, old pods left, zones, why not."""
    table = Table(title="Workloads", header_style="bold")
    for column in ("WORKLOAD", "SCHEDULED", "PENDING", "OLD", "ZONES", "REASON"):
        table.add_column(column, overflow="fold" if column == "REASON" else "ellipsis")
    for w in workloads:
        style = "green" if w.complete else "red"
        zones = " ".join(f"{zone}:{n}" for zone, n in w.zones.items())
        reason = w.message or ""
        if len(reason) > REASON_WIDTH:
            reason = reason[: REASON_WIDTH - 3] + "..."
        table.add_row(
            escape(f"{w.kind} {w.namespace}/{w.name}"),
            f"[{style}]{w.scheduled}/{w.desired}[/]",
            str(w.pending),
            str(w.old),
            escape(zones),
            escape(reason),
        )
    return table


def _node_table(nodes: list[NodeUsage]) -> Table:
    extended = sorted({r for n in nodes for r in n.allocatable if "/" in r})
    table = Table(title="Node utilization (requested / allocatable)", header_style="bold")
    for column in ("NODE", "PODS", "CPU (cores)", "MEMORY", *(r.upper() for r in extended)):
        table.add_column(column)
    for n in nodes:
        cells = [escape(n.name), f"{n.pods}/{n.allocatable.get('pods', '0')}"]
        cells += [_usage(n, r) for r in ("cpu", "memory", *extended)]
        table.add_row(*cells)
    return table


def _usage(node: NodeUsage, resource: str) -> str:
    alloc = node.allocatable.get(resource)
    if alloc is None:
        return "-"
    used = node.requested.get(resource, "0")
    total = parse_quantity(alloc)
    pct = f" {float(parse_quantity(used) * 100 / total):.0f}%" if total else ""
    if resource == "cpu":  # one unit for both sides: cores, e.g. "3.1/3.92"
        return f"{float(parse_quantity(used)):g}/{float(total):g}{pct}"
    return f"{used}/{alloc}{pct}"
