"""The human view of a capacity report: one row per shape."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.capacity.model import CapacityReport, GangCapacity
from kubesched.simulate.held import held_text
from kubesched.simulate.units import human_requests

#: Nodes named per shape in the table; the JSON report has them all.
_NODES_SHOWN = 6


def render_capacity(report: CapacityReport, console: Console) -> None:
    table = Table(title="Capacity: how many more fit", header_style="bold")
    for column in ("SHAPE", "REQUESTS", "FITS", "ZONES", "NODES", "WHY NOT ONE MORE"):
        table.add_column(column, overflow="fold")
    for s in report.shapes:
        fits = f"≥{s.fits}" if s.limited else str(s.fits)
        if s.replicas:
            fits += f" more (beyond its {s.replicas_scheduled}/{s.replicas} replicas)"
        busiest = sorted(s.nodes.items(), key=lambda kv: (-kv[1], kv[0]))
        nodes = " ".join(f"{n}:{c}" for n, c in busiest[:_NODES_SHOWN])
        if len(busiest) > _NODES_SHOWN:
            nodes += f" (+{len(busiest) - _NODES_SHOWN} nodes)"
        table.add_row(
            escape(s.shape),
            escape(human_requests(s.requests)),
            f"[bold]{fits}[/]",
            escape(" ".join(f"{z}:{c}" for z, c in s.zones.items())),
            escape(nodes),
            escape(s.reason or ("stopped at --max" if s.limited else "")),
        )
    if report.shapes:
        console.print(table)
    if report.gangs:
        console.print(_gang_table(report.gangs))
    shapes = f"{len(report.shapes)} shape(s)" + (f" and {len(report.gangs)} gang(s)" if report.gangs else "")
    console.print(f"{shapes} on {report.nodes} nodes in {report.seconds:.2f}s")
    if report.held_by_another_scheduler.pods:
        console.print(escape(f"note: {held_text(report.held_by_another_scheduler)}"), soft_wrap=True)


def _gang_table(gangs: list[GangCapacity]) -> Table:
    """One row per gang: the nodes of the node shape it needs before it fits, all or nothing."""
    table = Table(title="Gangs: how many more nodes until it fits", header_style="bold")
    for column in (
        "GANG",
        "REQUESTS (ALL PODS)",
        "NODE SHAPE",
        "NODES NEEDED",
        "NODES",
        "WHY NOT WITH ONE FEWER",
    ):
        table.add_column(column, overflow="fold")
    for g in gangs:
        if g.nodes_needed is not None:
            needed = str(g.nodes_needed)
        elif g.limited:
            needed = "more than --max"
        else:
            needed = "-"
        busiest = sorted(g.nodes.items(), key=lambda kv: (-kv[1], kv[0]))
        nodes = " ".join(f"{n}:{c}" for n, c in busiest[:_NODES_SHOWN])
        if len(busiest) > _NODES_SHOWN:
            nodes += f" (+{len(busiest) - _NODES_SHOWN} nodes)"
        reason = g.reason or ""
        if g.node_shape is None and g.reason:
            reason += " (give --node-shape to count the nodes it needs)"
        table.add_row(
            escape(f"{g.pod_group} ({g.pods} pods, minCount {g.min_count})"),
            escape(human_requests(g.requests)),
            escape(g.node_shape or "-"),
            f"[bold]{needed}[/]",
            escape(nodes),
            escape(reason),
        )
    return table
