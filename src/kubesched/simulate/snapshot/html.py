"""`kubesched simulate --output html`: result counts, the node utilization heat map, the workloads
(does each fit, where, why not), the pod groups (placed all or nothing, or why not), and every pod
with its explanation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.simulate.html.figures import (
    HEAT_COLORSCALE,
    MAX_HEATMAP_ROWS,
    RESULT_COLORS,
    Figure,
    chart_layout,
    new_figure,
)
from kubesched.simulate.html.page import render_page
from kubesched.simulate.snapshot.model import NodeUsage, PodGroupResult, PodResult, Report, WorkloadResult
from kubesched.simulate.snapshot.nearest import Nearest
from kubesched.simulate.snapshot.workloads import workload_label

__all__ = ["pod_group_row", "pod_row", "snapshot_figures", "snapshot_html", "workload_row"]

#: With --explain, a pod lists at most this many rejected nodes per (plugin, reason) and scored nodes.
NODES_PER_REASON = 10
TOP_SCORES = 10
_SNAPSHOT_COLUMNS = [
    ("pod", "POD"),
    ("profile", "PROFILE"),
    ("result", "RESULT"),
    ("node", "NODE"),
    ("attempts", "ATTEMPTS"),
    ("message", "REASON"),
]


def snapshot_html(
    report: Report, *, title: str = "kubesched simulate", nearest: Mapping[str, Nearest] | None = None
) -> bytes:
    """The page; `nearest` (`snapshot.nearest.nearest_by_pod`) adds the nearest nodes of
    unschedulable pods to their panel."""
    s = report.summary
    cards = [
        ("pods scheduled", f"{s.scheduled}/{s.pods}"),
        ("unschedulable", s.unschedulable),
        ("errors", s.errors),
        ("gated", s.gated),
        ("nodes", s.nodes),
        ("pods/s", s.pods_per_second),
    ]
    subtitle = f"{s.scheduled} of {s.pods} pods scheduled on {s.nodes} nodes"
    figures = snapshot_figures(report)
    for figure in figures:
        figure["wide"] = figure["id"] == "chart-heatmap"
    return render_page(
        title,
        subtitle,
        cards,
        figures,
        _SNAPSHOT_COLUMNS,
        [pod_row(p, (nearest or {}).get(f"{p.namespace}/{p.name}")) for p in report.pods],
        [workload_row(w) for w in report.workloads],
        [pod_group_row(g) for g in report.pod_groups],
    )


def pod_row(pod: PodResult, nearest: Nearest | None = None) -> dict[str, Any]:
    """A pod as the page's table and explanation panel read it; empty fields are left out. A pod
    whose group's first pod holds the nearest nodes names that pod (`nearestOf`), so 2000 replicas
    carry one copy."""
    out: dict[str, Any] = {
        "ns": pod.namespace,
        "name": pod.name,
        "profile": pod.scheduler_name,
        "result": pod.result,
        "node": pod.node,
        "workload": pod.workload,
        "nominated": pod.nominated_node,
        "message": pod.message,
        "attempts": pod.attempts,
        "victims": pod.victims or None,
        "filter": _filter_rows(pod) or None,
        "scores": _score_rows(pod) or None,
    }
    if nearest is not None:
        out["nearest"] = [msgspec.to_builtins(n) for n in nearest.nodes] or None
        out["nearestOf"] = nearest.of
    return {k: v for k, v in out.items() if v is not None}


def workload_row(w: WorkloadResult) -> dict[str, Any]:
    """A workload as the page's Workloads table reads it: its label is what its pods' `workload` says."""
    return {
        "workload": workload_label(w.kind, w.namespace, w.name),
        "scheduled": w.scheduled,
        "desired": w.desired,
        "pending": w.pending,
        "old": w.old,
        "complete": w.complete,
        "zones": " ".join(f"{zone}:{n}" for zone, n in w.zones.items()),
        "message": w.message or "",
    }


def pod_group_row(g: PodGroupResult) -> dict[str, Any]:
    """A PodGroup as the page's Pod groups table reads it; `members` are `namespace/name` keys."""
    return {
        "group": f"{g.namespace}/{g.name}" + (" (composite)" if g.kind == "CompositePodGroup" else ""),
        "result": g.result,
        "minCount": g.min_count,
        "bound": len(g.placement),
        "pods": g.pods,
        "message": g.message or "",
        "placement": " ".join(f"{pod}→{node}" for pod, node in g.placement.items()),
        "members": [f"{g.namespace}/{m}" for m in g.members],
    }


def _filter_rows(pod: PodResult) -> list[dict[str, Any]]:
    """Rejected nodes grouped by plugin and reasons, biggest group first (the --explain summary)."""
    if pod.explanation is not None:
        return [
            {"plugin": r.plugin, "reasons": r.reason, "count": r.count, "nodes": r.nodes[:NODES_PER_REASON]}
            for r in pod.explanation.rejections
        ]
    groups: dict[tuple[str, str], list[str]] = {}
    for node, verdict in pod.filter.items():
        groups.setdefault((verdict.plugin, "; ".join(verdict.reasons)), []).append(node)
    rows = [
        {"plugin": plugin, "reasons": reasons, "count": len(nodes), "nodes": nodes[:NODES_PER_REASON]}
        for (plugin, reasons), nodes in groups.items()
    ]
    return sorted(rows, key=lambda r: (-r["count"], r["plugin"]))


def _score_rows(pod: PodResult) -> list[dict[str, Any]]:
    if pod.explanation is not None:
        return [{"node": n.node, "total": n.total, "plugins": n.plugins} for n in pod.explanation.top_nodes]
    best = sorted(pod.scores.items(), key=lambda kv: (-kv[1].total, kv[0]))[:TOP_SCORES]
    return [{"node": node, "total": s.total, "plugins": s.plugins} for node, s in best]


def snapshot_figures(report: Report) -> list[Figure]:
    """Results by count and the node utilization heat map (nodes x resources)."""
    return [_results_figure(report), _node_heatmap(report.nodes)]


def _results_figure(report: Report) -> Figure:
    counts: dict[str, int] = {}
    for pod in report.pods:
        counts[pod.result] = counts.get(pod.result, 0) + 1
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": result,
            "y": [result],
            "x": [n],
            "marker": {"color": RESULT_COLORS.get(result, "#607d8b")},
            "hovertemplate": f"{result}: %{{x}} pods<extra></extra>",
        }
        for result, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    layout = chart_layout(
        "Pods by result",
        showlegend=False,
        hovermode="closest",
        xaxis={"title": {"text": "pods"}},
        yaxis={"automargin": True},  # room for the longest result name ("Unschedulable")
    )
    return new_figure("chart-results", data, layout, height=80 + 40 * max(1, len(counts)))


def _node_heatmap(nodes: Sequence[NodeUsage]) -> Figure:
    """Percent of allocatable requested, per node (rows) and resource (columns)."""
    resources = ["cpu", "memory", "pods"]
    resources += sorted({r for n in nodes for r in n.allocatable if "/" in r})
    percent: list[list[float | None]] = []
    for node in nodes:
        row: list[float | None] = []
        for resource in resources:
            row.append(_percent(node, resource))
        percent.append(row)
    names = [n.name for n in nodes]
    rows, values = _group_rows(names, percent)
    data = [
        {
            "type": "heatmap",
            "x": resources,
            "y": rows,
            "z": values,
            "zmin": 0,
            "zmax": 100,
            "colorscale": HEAT_COLORSCALE,
            "reversescale": True,
            "colorbar": {"title": {"text": "% requested"}},
            "hovertemplate": "%{y}<br>%{x}: %{z:.0f}% requested<extra></extra>",
            "xgap": 1,
            "ygap": 1 if len(rows) <= 60 else 0,
        }
    ]
    layout = chart_layout(
        "Node utilization (requested / allocatable)",
        hovermode="closest",
        # Row labels on any size: plotly shows as many as fit (a group's first and last node on
        # clusters grouped to MAX_HEATMAP_ROWS rows), and every row says its name on hover.
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"side": "top"},
        # The resource names sit above the map, under the title: room for both.
        margin={"l": 60, "r": 20, "t": 72, "b": 20},
    )
    return new_figure("chart-heatmap", data, layout, height=min(900, 120 + 14 * len(rows)))


def _percent(node: NodeUsage, resource: str) -> float | None:
    alloc = node.allocatable.get(resource)
    if alloc is None:
        return None
    if resource == "pods":
        total, used = float(alloc), float(node.pods)
    else:
        try:
            total = float(parse_quantity(alloc))
            used = float(parse_quantity(node.requested.get(resource, "0")))
        except QuantityError:
            return None
    return round(used * 100 / total, 1) if total > 0 else None


def _group_rows(
    names: list[str], values: list[list[float | None]]
) -> tuple[list[str], list[list[float | None]]]:
    """At most MAX_HEATMAP_ROWS rows: consecutive nodes are averaged into groups on big clusters."""
    if len(names) <= MAX_HEATMAP_ROWS:
        return names, values
    rows, out = [], []
    n = len(names)
    for i in range(MAX_HEATMAP_ROWS):
        lo, hi = round(i * n / MAX_HEATMAP_ROWS), round((i + 1) * n / MAX_HEATMAP_ROWS)
        rows.append(f"{names[lo]} … {names[hi - 1]} ({hi - lo} nodes)")
        columns = list(zip(*values[lo:hi], strict=True))
        out.append([_mean([v for v in col if v is not None]) for col in columns])
    return rows, out


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None
