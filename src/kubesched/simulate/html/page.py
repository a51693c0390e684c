"""One self-contained HTML file: the page, its CSS and script, plotly.js and the report's data inlined.

Nothing is fetched when the file is opened (no CDN, no fonts), so it can be mailed, attached to a
ticket or opened on an air-gapped laptop. plotly.js comes from the pinned `plotly` package
(docs/html-report.md says why plotly). Each command fills the page with its own cards, figures and rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

import msgspec

from kubesched.simulate.html.figures import Figure

__all__ = ["duration", "render_page"]

_MARKER = re.compile(r"@@(TITLE|CSS|PLOTLY|DATA|APP)@@")


def render_page(
    title: str,
    subtitle: str,
    cards: Sequence[tuple[str, Any]],
    figures: Sequence[Figure],
    columns: Sequence[tuple[str, str]],
    pods: Sequence[dict[str, Any]],
    workloads: Sequence[dict[str, Any]] = (),
    pod_groups: Sequence[dict[str, Any]] = (),
) -> bytes:
    """The page for any report: summary cards, figures (drawn in order), the workloads and pod
    groups tables (if any; see `workload_row`, `pod_group_row`) and the pods table (if columns)."""
    data = {
        "title": title,
        "subtitle": subtitle,
        "cards": [{"label": label, "value": str(value)} for label, value in cards],
        "figures": list(figures),
        "columns": [list(c) for c in columns],
        "pods": list(pods),
        "workloads": list(workloads),
        "podGroups": list(pod_groups),
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


def duration(seconds: float) -> str:
    """`1h05m`, or `4m07s` under an hour."""
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
