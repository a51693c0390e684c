"""Plotly figures (plain JSON data) for the HTML report, built from the typed reports.

The figures are plain dicts in plotly.js's schema, so they can be checked in unit tests without a
browser; the page only hands them to `Plotly.newPlot`. Only SVG/canvas trace types are used (no
WebGL), so the report renders in any browser, headless ones included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.simulate.replay_report import HeatMap, ReplayReport
from kubesched.simulate.report import NodeUsage, Report
from kubesched.simulate.timeline import MAX_HEATMAP_ROWS

__all__ = ["Figure", "replay_figures", "snapshot_figures"]

Figure = dict[str, Any]
#: One color per pod result, the same in every chart.
RESULT_COLORS = {
    "Scheduled": "#2e7d32",
    "Unschedulable": "#c62828",
    "Error": "#6a1b9a",
    "Gated": "#f9a825",
    "Waiting": "#00838f",
    "Ignored": "#9e9e9e",
}
_HEAT = "YlOrRd"
_FONT = {"family": "system-ui, sans-serif", "size": 12}


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01, "xanchor": "left"},
        "font": _FONT,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.2},
        **extra,
    }


def _figure(fig_id: str, data: list[dict[str, Any]], layout: dict[str, Any], height: int = 360) -> Figure:
    return {"id": fig_id, "data": data, "layout": {**layout, "height": height}}


# --------------------------------------------------------------------------- a snapshot (simulate)


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
    layout = _layout(
        "Pods by result", showlegend=False, hovermode="closest", xaxis={"title": {"text": "pods"}}
    )
    return _figure("chart-results", data, layout, height=80 + 40 * max(1, len(counts)))


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
            "colorscale": _HEAT,
            "reversescale": True,
            "colorbar": {"title": {"text": "% requested"}},
            "hovertemplate": "%{y}<br>%{x}: %{z:.0f}% requested<extra></extra>",
            "xgap": 1,
            "ygap": 1 if len(rows) <= 60 else 0,
        }
    ]
    layout = _layout(
        "Node utilization (requested / allocatable)",
        hovermode="closest",
        yaxis={"autorange": "reversed", "automargin": True, "showticklabels": len(rows) <= 80},
        xaxis={"side": "top"},
    )
    return _figure("chart-heatmap", data, layout, height=min(900, 120 + 14 * len(rows)))


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


# --------------------------------------------------------------------------- a replay


def replay_figures(report: ReplayReport) -> list[Figure]:
    """Pending over time, utilization over time, waits until bound, evictions, node heat maps."""
    figures = [
        _pending_figure(report),
        _utilization_figure(report),
        _latency_figure(report),
    ]
    figures += [_time_heatmap(h) for h in report.heatmaps]
    return figures


def _minutes(times: Sequence[float]) -> list[float]:
    return [round(t / 60, 3) for t in times]


_TIME_AXIS = {"title": {"text": "virtual time (minutes)"}}


def _pending_figure(report: ReplayReport) -> Figure:
    t = _minutes([s.t for s in report.timeline])
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "pending pods",
            "x": t,
            "y": [s.pending for s in report.timeline],
            "line": {"color": "#c62828", "shape": "hv"},
            "fill": "tozeroy",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "running pods",
            "x": t,
            "y": [s.running for s in report.timeline],
            "line": {"color": "#1565c0", "shape": "hv"},
            "yaxis": "y2",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "evictions (cumulative)",
            "x": t,
            "y": [s.evicted for s in report.timeline],
            "line": {"color": "#6a1b9a", "dash": "dot", "shape": "hv"},
        },
    ]
    layout = _layout(
        "Pending pods over time",
        xaxis=_TIME_AXIS,
        yaxis={"title": {"text": "pending / evicted"}, "rangemode": "tozero"},
        yaxis2={"title": {"text": "running"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
        margin={"l": 60, "r": 60, "t": 40, "b": 50},
    )
    return _figure("chart-pending", data, layout)


def _utilization_figure(report: ReplayReport) -> Figure:
    t = _minutes([s.t for s in report.timeline])
    resources = sorted({r for s in report.timeline for r in s.utilization}, key=lambda r: (r != "cpu", r))
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": resource,
            "x": t,
            "y": [round(s.utilization.get(resource, 0.0) * 100, 2) for s in report.timeline],
            "line": {"shape": "hv"},
        }
        for resource in resources
    ]
    layout = _layout(
        "Cluster utilization (requested / allocatable)",
        xaxis=_TIME_AXIS,
        yaxis={"title": {"text": "%"}, "range": [0, 100]},
    )
    return _figure("chart-utilization", data, layout)


def _latency_figure(report: ReplayReport) -> Figure:
    """Histogram of creation-to-bind waits, with the per-sample p90 over time beside it."""
    waits = [p.wait_seconds for p in report.pods if p.wait_seconds is not None]
    lat = report.summary.latency
    data: list[dict[str, Any]] = [
        {
            "type": "histogram",
            "name": "pods",
            "x": waits,
            "marker": {"color": "#1565c0"},
            "hovertemplate": "waited %{x} s: %{y} pods<extra></extra>",
            "xaxis": "x",
            "yaxis": "y",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "p90 of the pods bound in each interval",
            "x": _minutes([s.t for s in report.timeline if s.wait_p90 is not None]),
            "y": [s.wait_p90 for s in report.timeline if s.wait_p90 is not None],
            "marker": {"color": "#ef6c00", "size": 5},
            "xaxis": "x2",
            "yaxis": "y2",
        },
    ]
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": value,
            "x1": value,
            "y0": 0,
            "y1": 1,
            "line": {"color": color, "dash": "dash"},
        }
        for value, color in ((lat.p50, "#2e7d32"), (lat.p90, "#ef6c00"), (lat.p99, "#c62828"))
        if value is not None
    ]
    title = "Wait from creation to bind"
    if lat.count:
        title += f" — p50 {lat.p50} s, p90 {lat.p90} s, p99 {lat.p99} s over {lat.count} pods"
    layout = _layout(
        title,
        hovermode="closest",
        grid={"rows": 1, "columns": 2, "pattern": "independent"},
        xaxis={"title": {"text": "seconds waited"}, "domain": [0, 0.47]},
        yaxis={"title": {"text": "pods"}, "type": "log" if len(waits) > 100 else "linear"},
        xaxis2={**_TIME_AXIS, "domain": [0.55, 1], "anchor": "y2"},
        yaxis2={"title": {"text": "p90 wait (s)"}, "anchor": "x2", "rangemode": "tozero"},
        shapes=shapes,
    )
    return _figure("chart-latency", data, layout)


def _time_heatmap(heat: HeatMap) -> Figure:
    data = [
        {
            "type": "heatmap",
            "x": _minutes(heat.times),
            "y": heat.rows,
            "z": heat.values,
            "zmin": 0,
            "zmax": 100,
            "colorscale": _HEAT,
            "reversescale": True,
            "colorbar": {"title": {"text": "% requested"}},
            "hovertemplate": "%{y}<br>minute %{x}: %{z}% " + heat.resource + "<extra></extra>",
            "hoverongaps": False,
        }
    ]
    layout = _layout(
        f"Node {heat.resource} utilization over time",
        hovermode="closest",
        xaxis=_TIME_AXIS,
        yaxis={"autorange": "reversed", "automargin": True, "showticklabels": len(heat.rows) <= 80},
    )
    return _figure(f"chart-heatmap-{heat.resource}", data, layout, height=min(900, 160 + 12 * len(heat.rows)))
