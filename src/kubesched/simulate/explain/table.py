"""The human view of an explanation: rejections per reason, the top nodes' scores per plugin, and
`kubesched explain`'s whole page (verdict, reasons, nearest nodes, preemption, scores).

The tables are shared by `kubesched simulate --explain` and `kubesched explain`, so both read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.explain.model import FilterVerdict, NearNode, PodExplanation, RankedNode, Rejection

#: Node names shown per reason in a table (the JSON report keeps more).
NAMES_SHOWN = 3
#: Nodes shown side by side in a score table.
SCORED_SHOWN = 3


def node_names(names: Sequence[str], count: int, *, shown: int = NAMES_SHOWN) -> str:
    """`a, b, c, +42 more`: a few of `count` node names."""
    text = ", ".join(names[:shown])
    more = count - min(len(names), shown)
    return f"{text}, +{more} more" if more > 0 and text else text


def rejection_table(rejections: Sequence[Rejection], *, title: str | None = None) -> Table:
    """One row per (plugin, reason): how many nodes, and a few of them."""
    table = Table(title=title, title_justify="left", header_style="bold", show_edge=False, pad_edge=False)
    table.add_column("PLUGIN", overflow="fold")
    table.add_column("NODES", justify="right", no_wrap=True)
    table.add_column("REASON", overflow="fold")
    table.add_column("FOR EXAMPLE", overflow="fold")
    for r in rejections:
        code = "" if r.code == "Unschedulable" else " [dim](unresolvable)[/]"
        table.add_row(
            escape(r.plugin or "-"),
            str(r.count),
            escape(r.reason) + code,
            escape(node_names(r.nodes, r.count)),
        )
    return table


def pre_filter_line(verdict: FilterVerdict) -> str:
    """The PreFilter rejection: no node was even filtered."""
    reasons = "; ".join(verdict.reasons)
    return (
        f"PreFilter plugin [bold]{escape(verdict.plugin)}[/] rejected the pod before any node was "
        f"filtered ({escape(verdict.code)}): {escape(reasons)}"
    )


def score_table(
    top: Sequence[RankedNode],
    weights: Mapping[str, int],
    *,
    title: str | None = None,
    shown: int = SCORED_SHOWN,
) -> Table:
    """Rows are Score plugins with their weights, columns the best nodes, then the weighted TOTAL row."""
    nodes = list(top[:shown])
    table = Table(title=title, title_justify="left", header_style="bold", show_edge=False, pad_edge=False)
    table.add_column("SCORE PLUGIN (weight)", overflow="fold")
    for n in nodes:
        table.add_column(escape(n.node), justify="right", overflow="fold")
    plugins = sorted({p for n in nodes for p in n.plugins}, key=lambda p: (-weights.get(p, 1), p))
    for plugin in plugins:
        cells = [str(n.plugins[plugin]) if plugin in n.plugins else "-" for n in nodes]
        # An extender's score arrives already weighted (score * weight * 10).
        label = plugin if plugin.startswith("extender:") else f"{plugin} ({weights.get(plugin, 1)})"
        table.add_row(escape(label), *cells)
    table.add_row("[bold]TOTAL[/] (sum of score * weight)", *(f"[bold]{n.total}[/]" for n in nodes))
    return table


#: Rich style of each verdict.
STYLE = {"Schedulable": "green", "Unschedulable": "red", "Error": "bold red", "Gated": "yellow"}


def render_explanation(report: PodExplanation, console: Console) -> None:
    r = report
    style = STYLE.get(r.verdict, "cyan")
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
        console.print(nearest_table(r.nearest_nodes))
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
    render_closing(r.plain_words, r.notes, r.seconds, console)


def render_closing(
    plain_words: Sequence[str], notes: Sequence[str], seconds: float, console: Console
) -> None:
    """The end of every explanation, a pod's or a group's: the plain-words meanings, notes, time."""
    if plain_words:
        console.print()
        console.print("In plain words")
        for meaning in plain_words:
            console.print(f"- {escape(meaning)}")
    for note in notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    console.print(f"[dim]explained in {seconds:.2f}s[/]")


def nearest_table(nodes: list[NearNode]) -> Table:
    """One row per nearest node: the plugins that reject it and what is missing, in words."""
    table = Table(header_style="bold", show_edge=False, pad_edge=False)
    table.add_column("NODE", overflow="fold")
    table.add_column("REJECTED BY", overflow="fold")
    table.add_column("WHAT IS MISSING", overflow="fold", ratio=3)
    for n in nodes:
        table.add_row(escape(n.node), escape(", ".join(n.plugins)), escape("; ".join(n.missing)))
    return table
