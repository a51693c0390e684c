"""`kubesched compare --output html`: the configurations side by side: each configuration side by side.

Every chart gives each configuration the same color (one trace per configuration, named after it)
so a reader can follow one configuration across the page; the full table of figures closes it.
Charts with nothing to show (no unschedulable pod, no extended resource, no zone, no gang) are left
out rather than drawn empty.
"""

from __future__ import annotations

from typing import Any

from kubesched.simulate.compare.model import Comparison, ConfigRun
from kubesched.simulate.compare.table import comparison_rows, unschedulable_reasons
from kubesched.simulate.html.figures import RESULT_COLORS, Figure, chart_layout, new_figure
from kubesched.simulate.html.page import render_page

__all__ = ["CONFIG_COLORS", "compare_figures", "compare_html"]

#: One color per configuration, in --config order, the same in every chart.
CONFIG_COLORS = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#c62828", "#5d4037", "#546e7a"]


def compare_html(comparison: Comparison, *, title: str = "kubesched compare") -> bytes:
    """The configurations side by side; no pods table (each pod has one explanation per configuration)."""
    runs = comparison.runs
    cards: list[tuple[str, Any]] = [
        ("pods", comparison.pods),
        ("nodes", comparison.nodes),
        ("configurations", len(runs)),
    ]
    cards += [(f"scheduled by {r.name}", f"{r.scheduled}/{comparison.pods}") for r in runs]
    subtitle = (
        f"{comparison.pods} pods on {comparison.nodes} nodes under "
        + ", ".join(f"{r.name} ({r.config})" for r in runs)
        + f"; seed {comparison.seed}"
    )
    figures = compare_figures(comparison)
    for figure in figures:
        figure["wide"] = figure["id"] in ("chart-compare-table", "chart-compare-reasons")
    return render_page(title, subtitle, cards, figures, [], [])


def compare_figures(comparison: Comparison) -> list[Figure]:
    """Results, reasons, preemptions, utilization, stranded resources, zones, gangs, then the table;
    a chart with nothing to show (no pod evicted by any configuration, ...) is left out."""
    runs = comparison.runs
    figures = [_results(runs)]
    if any(r.unschedulable_by_reason for r in runs):
        figures.append(_reasons(runs))
    if any(r.evicted or r.preemptors for r in runs):
        figures.append(_preemptions(runs))
    figures.append(_utilization(runs))
    if any(r.stranded for r in runs):
        figures.append(_stranded(runs))
    if any(r.zones for r in runs):
        figures.append(_zones(runs))
    if any(r.gangs.total for r in runs):
        figures.append(_gangs(runs))
    figures.append(_table(comparison))
    return figures


def _color(i: int) -> str:
    return CONFIG_COLORS[i % len(CONFIG_COLORS)]


def _per_config(
    runs: list[ConfigRun], x: list[str], y: list[list[Any]], hover: str, **extra: Any
) -> list[dict[str, Any]]:
    """One bar trace per configuration over the same categories."""
    return [
        {
            "type": "bar",
            "name": run.name,
            "x": x,
            "y": values,
            "marker": {"color": _color(i)},
            "hovertemplate": f"{run.name}<br>%{{x}}: {hover}<extra></extra>",
            **extra,
        }
        for i, (run, values) in enumerate(zip(runs, y, strict=True))
    ]


def _results(runs: list[ConfigRun]) -> Figure:
    names = [r.name for r in runs]
    columns = [("Scheduled", "scheduled"), ("Unschedulable", "unschedulable"), ("Error", "errors")]
    if any(r.ignored for r in runs):
        columns.append(("Ignored", "ignored"))
    data = [
        {
            "type": "bar",
            "name": result,
            "x": names,
            "y": [getattr(r, field) for r in runs],
            "marker": {"color": RESULT_COLORS[result]},
            "hovertemplate": f"%{{x}}: %{{y}} pods {result.lower()}<extra></extra>",
        }
        for result, field in columns
    ]
    layout = chart_layout(
        "Pods by result", barmode="group", hovermode="closest", yaxis={"title": {"text": "pods"}}
    )
    return new_figure("chart-compare-results", data, layout)


def _reasons(runs: list[ConfigRun]) -> Figure:
    reasons = unschedulable_reasons(runs)
    labels = [reason for reason, _ in reasons]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": run.name,
            "y": labels,
            "x": [counts[i] for _, counts in reasons],
            "marker": {"color": _color(i)},
            "hovertemplate": f"{run.name}<br>%{{y}}: %{{x}} pods<extra></extra>",
        }
        for i, run in enumerate(runs)
    ]
    layout = chart_layout(
        "Unschedulable pods by reason (a pod counts under each of its reasons)",
        barmode="group",
        hovermode="closest",
        xaxis={"title": {"text": "pods"}},
        yaxis={"autorange": "reversed", "automargin": True},
    )
    return new_figure(
        "chart-compare-reasons", data, layout, height=120 + 26 * len(labels) * max(1, len(runs))
    )


def _preemptions(runs: list[ConfigRun]) -> Figure:
    x = ["pods evicted", "pods that preempted"]
    data = _per_config(runs, x, [[r.evicted, r.preemptors] for r in runs], "%{y}")
    layout = chart_layout("Preemptions", barmode="group", hovermode="closest", yaxis={"rangemode": "tozero"})
    return new_figure("chart-compare-preemptions", data, layout)


def _utilization(runs: list[ConfigRun]) -> Figure:
    """Mean percent requested per resource; the spread over nodes (one standard deviation) as error bars."""
    resources = list(dict.fromkeys(res for run in runs for res in run.utilization))
    data = []
    for i, run in enumerate(runs):
        spreads = [run.utilization.get(res) for res in resources]
        data.append(
            {
                "type": "bar",
                "name": run.name,
                "x": resources,
                "y": [None if s is None else round(s.mean * 100, 2) for s in spreads],
                "error_y": {
                    "type": "data",
                    "array": [None if s is None else round(s.stddev * 100, 2) for s in spreads],
                    "visible": True,
                },
                "customdata": [
                    [None, None, None]
                    if s is None
                    else [round(s.stddev * 100, 1), round(s.min * 100, 1), round(s.max * 100, 1)]
                    for s in spreads
                ],
                "marker": {"color": _color(i)},
                "hovertemplate": (
                    f"{run.name}<br>%{{x}}: mean %{{y}}% ± %{{customdata[0]}}<br>"
                    "nodes from %{customdata[1]}% to %{customdata[2]}%<extra></extra>"
                ),
            }
        )
    layout = chart_layout(
        "Utilization: mean over nodes ± spread (requested / allocatable)",
        barmode="group",
        hovermode="closest",
        yaxis={"title": {"text": "%"}, "rangemode": "tozero"},
    )
    return new_figure("chart-compare-utilization", data, layout)


def _stranded(runs: list[ConfigRun]) -> Figure:
    resources = list(dict.fromkeys(res for run in runs for res in run.stranded))
    y = [[r.stranded.get(res, 0) for res in resources] for r in runs]
    data = _per_config(runs, resources, y, "%{y} free units stranded")
    layout = chart_layout(
        "Stranded extended resources",  # the definition is the axis title: the toolbar covered it
        barmode="group",
        hovermode="closest",
        yaxis={"title": {"text": "free units no pending pod can use"}, "rangemode": "tozero"},
    )
    return new_figure("chart-compare-stranded", data, layout)


def _zones(runs: list[ConfigRun]) -> Figure:
    zones = list(dict.fromkeys(z for run in runs for z in run.zones))
    y = [[r.zones.get(z, 0) for z in zones] for r in runs]
    data = _per_config(runs, zones, y, "%{y} pods placed")
    skews = ", ".join(f"{r.name} {r.zone_skew}" for r in runs)
    layout = chart_layout(
        "Pods placed per zone",
        barmode="group",
        hovermode="closest",
        xaxis={"title": {"text": f"zone skew (max - min): {skews}"}},
        yaxis={"title": {"text": "pods"}, "rangemode": "tozero"},
        # The legend below the axis title, not on it.
        legend={"orientation": "h", "y": -0.32},
        margin={"l": 60, "r": 20, "t": 40, "b": 90},
    )
    return new_figure("chart-compare-zones", data, layout)


def _gangs(runs: list[ConfigRun]) -> Figure:
    names = [r.name for r in runs]
    parts = [
        ("placed whole", "placed", "#2e7d32"),
        ("in part", "partial", "#f9a825"),
        ("not placed", "not_placed", "#c62828"),
    ]
    data = [
        {
            "type": "bar",
            "name": label,
            "x": names,
            "y": [getattr(r.gangs, field) for r in runs],
            "marker": {"color": color},
            "hovertemplate": f"%{{x}}: %{{y}} gangs {label}<extra></extra>",
        }
        for label, field, color in parts
    ]
    layout = chart_layout(
        "Gangs (pod groups)", barmode="stack", hovermode="closest", yaxis={"title": {"text": "gangs"}}
    )
    return new_figure("chart-compare-gangs", data, layout)


def _table(comparison: Comparison) -> Figure:
    """Every figure of the text table, largest free amounts and largest placeable shape included."""
    rows = comparison_rows(comparison)
    header = ["figure", *(r.name for r in comparison.runs)]
    columns = [[label.strip() for label, _ in rows]]
    columns += [[cells[i] for _, cells in rows] for i in range(len(comparison.runs))]
    data = [
        {
            "type": "table",
            "columnwidth": [3] + [2] * len(comparison.runs),
            "header": {
                "values": header,
                "align": "left",
                "fill": {"color": "#eef2f7"},
                "font": {"color": ["#1f2933"] + [_color(i) for i in range(len(comparison.runs))]},
            },
            "cells": {"values": columns, "align": ["left"] + ["right"] * len(comparison.runs)},
        }
    ]
    layout = chart_layout("Every figure", margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return new_figure("chart-compare-table", data, layout, height=90 + 22 * len(rows))
