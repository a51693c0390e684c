"""`kubesched simulate --scenario --output html`: pending pods, utilization and waits over virtual time,
node heat maps over time, and every pod's life."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.simulate.html.figures import HEAT_COLORSCALE, Figure, chart_layout, new_figure
from kubesched.simulate.html.page import duration, render_page
from kubesched.simulate.replay.model import GpuReport, HeatMap, ReplayPod, ReplayReport
from kubesched.simulate.snapshot.html import pod_row, workload_row

__all__ = ["replay_figures", "replay_html"]

_REPLAY_COLUMNS = [
    ("pod", "POD"),
    ("result", "RESULT"),
    ("node", "NODE"),
    ("created", "CREATED (s)"),
    ("wait", "WAITED (s)"),
    ("ended", "ENDED"),
    ("attempts", "ATTEMPTS"),
    ("message", "REASON"),
]


def _line(name: str, x: list[Any], y: list[Any], line: dict[str, str], **extra: str) -> dict[str, Any]:
    """A plotly line trace; `extra` (fill, yaxis) follows the line style, as plotly reads it."""
    return {"type": "scatter", "mode": "lines", "name": name, "x": x, "y": y, "line": line, **extra}


def replay_html(report: ReplayReport, *, title: str | None = None) -> bytes:
    s = report.summary
    lat = s.latency
    cards: list[tuple[str, Any]] = [
        ("virtual time", duration(s.virtual_seconds)),
        ("timeline events", s.events),
        ("pods bound", f"{s.scheduled}/{s.pods}"),
        ("pending at the end", s.pending),
        ("completed", s.completed),
        ("evictions", sum(s.evictions.values())),
        *([("recreated by controllers", s.recreated)] if s.recreated else []),
        ("wait p50 / p90 / p99", "-" if not lat.count else f"{lat.p50} / {lat.p90} / {lat.p99} s"),
    ]
    cards += [(f"{r} peak", f"{v:.0%}") for r, v in s.utilization_peak.items() if r in ("cpu", "memory")]
    subtitle = (
        f"{s.events} events over {duration(s.virtual_seconds)} of virtual time, replayed in {s.seconds:.1f} s"
    )
    figures = replay_figures(report)
    for figure in figures:
        figure["wide"] = figure["id"].startswith("chart-heatmap") or figure["id"] == "chart-latency"
    return render_page(
        title or f"Replay of {s.scenario or 'a scenario'}",
        subtitle,
        cards,
        figures,
        _REPLAY_COLUMNS,
        [_pod(p) for p in report.pods],
        [workload_row(w) for w in report.workloads],
    )


def _pod(pod: ReplayPod) -> dict[str, Any]:
    """The snapshot's pod row, with when the pod was created, bound and ended."""
    times = {
        "created": pod.created_at,
        "bound": pod.bound_at,
        "wait": pod.wait_seconds,
        "ended": pod.ended,
        "endedAt": pod.ended_at,
    }
    return pod_row(pod) | {k: v for k, v in times.items() if v is not None}


def replay_figures(report: ReplayReport) -> list[Figure]:
    """Pending over time, utilization over time, waits until bound, evictions, node heat maps."""
    scale = time_scale(report)
    figures = [
        _pending_figure(report, scale),
        _utilization_figure(report, scale),
        _latency_figure(report, scale),
    ]
    if report.gpu is not None and report.gpu.samples:
        figures.append(_gpu_figure(report.gpu))
    figures += [_time_heatmap(h, scale) for h in report.heatmaps]
    return figures


#: Replays longer than this are plotted in hours: a day in minutes reads as "1440".
HOURS_FROM_SECONDS = 6 * 3600
#: The wait histogram has about this many bins over the waits up to their p99...
WAIT_BINS = 40
#: ... and at most this many over all of them (one outlier must not make thousands of bars).
MAX_WAIT_BINS = 400


@dataclass(frozen=True)
class TimeScale:
    """The unit of every virtual-time axis of one report."""

    seconds: float
    unit: str

    def of(self, times: Sequence[float]) -> list[float]:
        return [round(t / self.seconds, 3) for t in times]

    @property
    def axis(self) -> dict[str, Any]:
        return {"title": {"text": f"virtual time ({self.unit}s)"}}


def time_scale(report: ReplayReport) -> TimeScale:
    """Hours for a replay longer than HOURS_FROM_SECONDS, minutes otherwise."""
    end = max([report.summary.virtual_seconds, *(s.t for s in report.timeline)])
    return TimeScale(3600.0, "hour") if end > HOURS_FROM_SECONDS else TimeScale(60.0, "minute")


def wait_bin_size(waits: Sequence[float], p99: float | None) -> float | None:
    """A round bin width (1, 2 or 5 times a power of ten, seconds) that shows the waits most pods
    had: about WAIT_BINS bins up to the p99, at most MAX_WAIT_BINS in all. None when every wait is 0."""
    top = max(waits, default=0.0)
    if top <= 0:
        return None
    wanted = max((p99 or top) / WAIT_BINS, top / MAX_WAIT_BINS)
    if wanted <= 0:
        wanted = top / MAX_WAIT_BINS
    power = 10.0 ** math.floor(math.log10(wanted))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= wanted)


def _pending_figure(report: ReplayReport, scale: TimeScale) -> Figure:
    t = scale.of([s.t for s in report.timeline])
    data = [
        _line(
            "pending pods",
            t,
            [s.pending for s in report.timeline],
            {"color": "#c62828", "shape": "hv"},
            fill="tozeroy",
        ),
        _line(
            "running pods",
            t,
            [s.running for s in report.timeline],
            {"color": "#1565c0", "shape": "hv"},
            yaxis="y2",
        ),
        _line(
            "evictions (cumulative)",
            t,
            [s.evicted for s in report.timeline],
            {"color": "#6a1b9a", "dash": "dot", "shape": "hv"},
        ),
    ]
    layout = chart_layout(
        "Pending pods over time",
        xaxis=scale.axis,
        yaxis={"title": {"text": "pending / evicted"}, "rangemode": "tozero"},
        yaxis2={"title": {"text": "running"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
        margin={"l": 60, "r": 60, "t": 40, "b": 50},
    )
    return new_figure("chart-pending", data, layout)


def _utilization_figure(report: ReplayReport, scale: TimeScale) -> Figure:
    t = scale.of([s.t for s in report.timeline])
    resources = sorted({r for s in report.timeline for r in s.utilization}, key=lambda r: (r != "cpu", r))
    data = [
        _line(
            resource,
            t,
            [round(s.utilization.get(resource, 0.0) * 100, 2) for s in report.timeline],
            {"shape": "hv"},
        )
        for resource in resources
    ]
    layout = chart_layout(
        "Cluster utilization (requested / allocatable)",
        xaxis=scale.axis,
        yaxis={"title": {"text": "%"}, "range": [0, 100]},
    )
    return new_figure("chart-utilization", data, layout)


def _latency_figure(report: ReplayReport, scale: TimeScale) -> Figure:
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
            **({"xbins": {"start": 0, "size": size}} if (size := wait_bin_size(waits, lat.p99)) else {}),
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "p90 of the pods bound in each interval",
            "x": scale.of([s.t for s in report.timeline if s.wait_p90 is not None]),
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
    layout = chart_layout(
        title,
        hovermode="closest",
        grid={"rows": 1, "columns": 2, "pattern": "independent"},
        xaxis={"title": {"text": "seconds waited"}, "domain": [0, 0.47]},
        yaxis={"title": {"text": "pods"}, "type": "log" if len(waits) > 100 else "linear"},
        xaxis2={**scale.axis, "domain": [0.55, 1], "anchor": "y2"},
        yaxis2={"title": {"text": "p90 wait (s)"}, "anchor": "x2", "rangemode": "tozero"},
        shapes=shapes,
    )
    return new_figure("chart-latency", data, layout)


def _gpu_figure(gpu: GpuReport) -> Figure:
    """Unallocated and fragmented GPUs and failed pods against the arrived GPU requests, as the FGD
    paper plots them."""
    x = [s.arrived_percent for s in gpu.samples]
    data = [
        _line("unallocated GPUs (%)", x, [s.unallocated_percent for s in gpu.samples], {"color": "#2e7d32"}),
        _line(
            "fragmented GPUs (%, the FGD paper's measure)",
            x,
            [s.fragmented_percent for s in gpu.samples],
            {"color": "#ef6c00", "dash": "dash"},
        ),
        _line(
            "failed pods", x, [s.failed for s in gpu.samples], {"color": "#c62828", "shape": "hv"}, yaxis="y2"
        ),
    ]
    title = f"GPUs unallocated as requests arrive ({gpu.gpus} GPUs, {gpu.unallocated_percent}% at the end)"
    layout = chart_layout(
        title,
        xaxis={"title": {"text": "arrived GPU requests (% of the cluster's GPUs)"}},
        yaxis={"title": {"text": "% of all GPUs"}, "range": [0, 100]},
        yaxis2={"title": {"text": "failed pods"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
        margin={"l": 60, "r": 60, "t": 40, "b": 50},
    )
    return new_figure("chart-gpu", data, layout)


def _time_heatmap(heat: HeatMap, scale: TimeScale) -> Figure:
    data = [
        {
            "type": "heatmap",
            "x": scale.of(heat.times),
            "y": heat.rows,
            "z": heat.values,
            "zmin": 0,
            "zmax": 100,
            "colorscale": HEAT_COLORSCALE,
            "reversescale": True,
            "colorbar": {"title": {"text": "% requested"}},
            "hovertemplate": f"%{{y}}<br>{scale.unit} %{{x}}: %{{z}}% {heat.resource}<extra></extra>",
            "hoverongaps": False,
        }
    ]
    layout = chart_layout(
        f"Node {heat.resource} utilization over time",
        hovermode="closest",
        xaxis=scale.axis,
        yaxis={"autorange": "reversed", "automargin": True},
    )
    return new_figure(
        f"chart-heatmap-{heat.resource}", data, layout, height=min(900, 160 + 12 * len(heat.rows))
    )
