"""Summaries of one scheduling attempt that stay small however many nodes the cluster has.

A per-node explanation (every node's filter verdict and scores) grows with nodes * pods: on 2,000
nodes and 2,000 pending pods it is millions of entries. What a reader wants is per reason: which
plugin said no, why, on how many nodes, and a few of their names; and for a placed pod, the best
few nodes with their per-plugin scores. Both are computed here from an attempt's per-node maps,
which the caller can then drop.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from kubesched.framework.status import Status
from kubesched.simulate.explain.model import Explanation, FilterVerdict, RankedNode, Rejection

#: Node names kept per reason in a summary (the count says how many there are in all).
NODE_NAMES_PER_REASON = 10
#: Feasible nodes kept, best first, in a summary.
TOP_NODES = 5

Scores = Mapping[str, tuple[Mapping[str, int], int]]


def verdict(status: Status) -> FilterVerdict:
    """A status as the report writes it: plugin, code name, reasons."""
    return FilterVerdict(plugin=status.plugin, code=str(status.code), reasons=status.all_reasons())


def summarize_rejections(
    node_to_status: Mapping[str, Status], *, names_per_reason: int = NODE_NAMES_PER_REASON
) -> list[Rejection]:
    """Rejected nodes grouped by (plugin, code, reason), most nodes first.

    A node rejected for two reasons (`Insufficient cpu`, `Insufficient memory`) counts under both,
    as in the FailedScheduling message. Statuses are usually shared between many nodes, so the
    grouping works on distinct statuses first and touches each node once.
    """
    nodes_by_status: dict[int, tuple[Status, list[str]]] = {}
    for node, status in node_to_status.items():
        entry = nodes_by_status.get(id(status))
        if entry is None:
            nodes_by_status[id(status)] = (status, [node])
        else:
            entry[1].append(node)
    groups: dict[tuple[str, str, str], list[str]] = {}
    for status, nodes in nodes_by_status.values():
        code = str(status.code)
        for reason in status.all_reasons() or [""]:
            groups.setdefault((status.plugin, code, reason), []).extend(nodes)
    rejections = [
        Rejection(
            plugin=plugin,
            code=code,
            reason=reason,
            count=len(nodes),
            nodes=heapq.nsmallest(names_per_reason, nodes),
        )
        for (plugin, code, reason), nodes in groups.items()
    ]
    rejections.sort(key=lambda r: (-r.count, r.plugin, r.reason))
    return rejections


def top_nodes(scores: Scores, *, limit: int = TOP_NODES, chosen: str | None = None) -> list[RankedNode]:
    """The `limit` best-scored nodes: highest total first, the chosen node first among equals, then
    by name."""
    best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1][1], item[0] != chosen, item[0]))
    return [
        RankedNode(node=node, total=total, plugins=dict(sorted(plugins.items())))
        for node, (plugins, total) in best
    ]


def explain_attempt(
    node_to_status: Mapping[str, Status] | None,
    scores: Scores | None,
    *,
    names_per_reason: int = NODE_NAMES_PER_REASON,
    limit: int = TOP_NODES,
    chosen: str | None = None,
) -> Explanation:
    """The bounded explanation of one attempt from its per-node filter statuses and scores;
    `chosen` is the node the pod went to, if any."""
    return Explanation(
        rejected_nodes=len(node_to_status or {}),
        rejections=summarize_rejections(node_to_status or {}, names_per_reason=names_per_reason),
        scored_nodes=len(scores or {}),
        top_nodes=top_nodes(scores or {}, limit=limit, chosen=chosen),
    )
