"""The human view of `kubesched explain`: verdict, reasons by plugin, nearest nodes, preemption, scores."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.explain_tables import pre_filter_line, rejection_table, score_table
from kubesched.simulate.report import NearNode, PodExplanation

_STYLE = {"Schedulable": "green", "Unschedulable": "red", "Error": "bold red", "Gated": "yellow"}


def render_explanation(report: PodExplanation, console: Console) -> None:
    r = report
    style = _STYLE.get(r.verdict, "cyan")
    profile = escape(r.scheduler_name)
    console.print(f"[bold]{escape(r.pod)}[/] (profile {profile}) on {r.nodes} nodes of {escape(r.source)}")
    if r.running_on:
        console.print(f"It runs on {escape(r.running_on)}; explained as if it were pending now.")
    where = f" on [bold]{escape(r.node)}[/]" if r.node else ""
    console.print(f"Verdict: [{style}]{r.verdict}[/]{where}")
    if r.message and r.verdict != "Schedulable":
        console.print(escape(r.message))
    if r.pre_filter is not None:
        console.print(pre_filter_line(r.pre_filter))
    if r.rejections:
        console.print()
        console.print(f"Rejected: {r.rejected_nodes} of {r.nodes} nodes, by plugin and reason")
        console.print(rejection_table(r.rejections))
    if r.nearest_nodes:
        console.print()
        console.print("Nearest nodes, and what is missing on each")
        console.print(_nearest_table(r.nearest_nodes))
    if r.preemption is not None:
        console.print()
        p = r.preemption
        if p.helps and p.victims:
            console.print(
                f"Preemption would evict {escape(', '.join(p.victims))}"
                + (f" to make room on [bold]{escape(p.node)}[/]" if p.node else "")
            )
        elif p.helps:
            console.print(f"Preemption: the pod is nominated to {escape(p.node or '')}")
        else:
            why = p.message.removeprefix("preemption: ") or "no victims found"
            console.print(f"Preemption would not help: {escape(why)}")
    if r.top_nodes:
        console.print()
        console.print(f"Top nodes of {r.scored_nodes} scored (score 0-100 before weight; total weighted)")
        console.print(score_table(r.top_nodes, r.score_weights))
    elif r.verdict == "Schedulable":
        console.print("It was the only feasible node, so nothing was scored.")
    for note in r.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    console.print(f"[dim]explained in {r.seconds:.2f}s[/]")


def _nearest_table(nodes: list[NearNode]) -> Table:
    table = Table(header_style="bold", show_edge=False, pad_edge=False)
    table.add_column("NODE", overflow="fold")
    table.add_column("REJECTED BY", overflow="fold")
    table.add_column("WHAT IS MISSING", overflow="fold", ratio=3)
    for n in nodes:
        table.add_row(escape(n.node), escape(", ".join(n.plugins)), escape("; ".join(n.missing)))
    return table
