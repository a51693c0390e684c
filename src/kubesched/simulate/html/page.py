"""One self-contained HTML file: the page, its CSS and script, plotly.js and the report's data inlined.

Nothing is fetched when the file is opened (no CDN, no fonts), so it can be mailed, attached to a
ticket or opened on an air-gapped laptop. plotly.js comes from the pinned `plotly` package
(docs/html-report.md says why plotly).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

import msgspec

from kubesched.simulate.compare import Comparison
from kubesched.simulate.html.compare_figures import compare_figures
from kubesched.simulate.html.figures import Figure, replay_figures, snapshot_figures
from kubesched.simulate.replay_report import ReplayPod, ReplayReport
from kubesched.simulate.report import PodResult, Report

__all__ = ["compare_html", "render_page", "replay_html", "snapshot_html"]

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
_MARKER = re.compile(r"@@(TITLE|CSS|PLOTLY|DATA|APP)@@")


def snapshot_html(report: Report, *, title: str = "kubesched simulate") -> bytes:
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
    return render_page(title, subtitle, cards, figures, _SNAPSHOT_COLUMNS, [_pod(p) for p in report.pods])


def replay_html(report: ReplayReport, *, title: str | None = None) -> bytes:
    s = report.summary
    lat = s.latency
    cards: list[tuple[str, Any]] = [
        ("virtual time", _duration(s.virtual_seconds)),
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
        f"{s.events} events over {_duration(s.virtual_seconds)} of virtual time, "
        f"replayed in {s.seconds:.1f} s"
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
    )


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


def render_page(
    title: str,
    subtitle: str,
    cards: Sequence[tuple[str, Any]],
    figures: Sequence[Figure],
    columns: Sequence[tuple[str, str]],
    pods: Sequence[dict[str, Any]],
) -> bytes:
    """The page for any report: summary cards, figures (drawn in order) and the pods table (if columns)."""
    data = {
        "title": title,
        "subtitle": subtitle,
        "cards": [{"label": label, "value": str(value)} for label, value in cards],
        "figures": list(figures),
        "columns": [list(c) for c in columns],
        "pods": list(pods),
    }
    parts = {
        "TITLE": _escape_text(title),
        "CSS": _asset("report.css"),
        "PLOTLY": _plotly_js(),
        "DATA": _script_json(data),
        "APP": _asset("report.js"),
    }
    page = _MARKER.sub(lambda m: parts[m[1]], _asset("page.html"))
    return page.encode()


def _pod(pod: PodResult) -> dict[str, Any]:
    """A pod as the page's table and explanation panel read it; empty fields are left out."""
    out: dict[str, Any] = {
        "ns": pod.namespace,
        "name": pod.name,
        "profile": pod.scheduler_name,
        "result": pod.result,
        "node": pod.node,
        "nominated": pod.nominated_node,
        "message": pod.message,
        "attempts": pod.attempts,
        "victims": pod.victims or None,
        "filter": _filter_rows(pod) or None,
        "scores": _score_rows(pod) or None,
    }
    if isinstance(pod, ReplayPod):
        out |= {
            "created": pod.created_at,
            "bound": pod.bound_at,
            "wait": pod.wait_seconds,
            "ended": pod.ended,
            "endedAt": pod.ended_at,
        }
    return {k: v for k, v in out.items() if v is not None}


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


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _asset(name: str) -> str:
    return (resources.files("kubesched.simulate.html") / "assets" / name).read_text(encoding="utf-8")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element: `</` and `<!--` cannot end or confuse it."""
    text = msgspec.json.encode(data).decode()
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
