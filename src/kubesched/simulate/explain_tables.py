"""Rich tables for explanations: rejections per reason, and the top nodes' scores per plugin.

Shared by `kubesched simulate --explain` and `kubesched explain`, so both read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.markup import escape
from rich.table import Table

from kubesched.simulate.report import FilterVerdict, RankedNode, Rejection

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
