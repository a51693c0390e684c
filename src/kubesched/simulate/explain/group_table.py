"""The human view of a pod group's explanation: verdict, condition message, placement, the minCount
arithmetic in plain words, and each member with what blocked it."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.explain.model import GroupMember, PodGroupExplanation
from kubesched.simulate.explain.table import STYLE, nearest_table, rejection_table, render_closing

__all__ = ["render_group_explanation"]

#: Members listed in the table (the JSON report has them all).
MEMBERS_SHOWN = 20


def render_group_explanation(report: PodGroupExplanation, console: Console) -> None:
    r = report
    what = f"gang, minCount {r.min_count}" if r.policy == "gang" else "basic policy"
    console.print(
        f"PodGroup [bold]{escape(r.pod_group)}[/] ({what}; {r.pods} pod(s), {r.bound} bound; profile "
        f"{escape(r.scheduler_name)}) on {r.nodes} nodes of {escape(r.source)}"
    )
    if r.pod:
        console.print(f"{escape(r.pod)} is scheduled with its group, which is explained here.")
    console.print(f"Verdict: [{STYLE.get(r.verdict, 'cyan')}]{r.verdict}[/]")
    if r.message:
        console.print(escape(r.message))
    console.print(f"Placement tried: {escape(r.placement)}")
    if r.tree:
        console.print(f"Scheduled whole with its CompositePodGroup tree {escape(r.tree)}, all or nothing")
    for sib in r.siblings:
        mark = " [red](holds the tree back)[/]" if sib.blocking else ""
        text = f": {escape(sib.message)}" if sib.message else ""
        console.print(f"  sibling {escape(sib.pod_group)}: {sib.verdict}{mark}{text}")
    if r.members:
        console.print()
        console.print(_members_table(r.members))
    for m in r.members:
        if m.outcome != "FitsNowhere" or not (m.rejections or m.nearest_nodes):
            continue
        console.print()
        console.print(f"[bold]{escape(m.pod)}[/] fits on no node")
        if m.rejections:
            console.print(rejection_table(m.rejections))
        if m.nearest_nodes:
            console.print("Nearest nodes, with the members placed before it on theirs, and what is missing")
            console.print(nearest_table(m.nearest_nodes))
    render_closing(r.plain_words, r.notes, r.seconds, console)


def _members_table(members: list[GroupMember]) -> Table:
    table = Table(header_style="bold", show_edge=False, pad_edge=False)
    table.add_column("MEMBER", overflow="fold")
    table.add_column("OUTCOME", no_wrap=True)
    table.add_column("NODE", overflow="fold")
    table.add_column("MESSAGE", overflow="fold", ratio=3)
    for m in members[:MEMBERS_SHOWN]:
        table.add_row(escape(m.pod), m.outcome, escape(m.node or ""), escape(m.message or ""))
    if len(members) > MEMBERS_SHOWN:
        table.add_row(f"+{len(members) - MEMBERS_SHOWN} more", "", "", "")
    return table
