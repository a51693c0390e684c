"""Plotly figures as plain JSON data, and the layout every chart of every report shares.

The figures are plain dicts in plotly.js's schema, so they can be checked in unit tests without a
browser; the page only hands them to `Plotly.newPlot`. Only SVG/canvas trace types are used (no
WebGL), so the report renders in any browser, headless ones included. Each command draws its own
figures (`snapshot.html`, `replay.html`, `compare.html`) with these helpers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEAT_COLORSCALE", "MAX_HEATMAP_ROWS", "RESULT_COLORS", "Figure", "chart_layout", "new_figure"]

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
#: The colorscale of every utilization heat map.
HEAT_COLORSCALE = "YlOrRd"
#: Rows of a heat map; bigger clusters are shown as this many groups of nodes (sorted by name).
MAX_HEATMAP_ROWS = 200
_FONT = {"family": "system-ui, sans-serif", "size": 12}


def chart_layout(title: str, **extra: Any) -> dict[str, Any]:
    """A chart's layout: its title at the top left, the shared font, margins and legend."""
    return {
        "title": {"text": title, "x": 0.01, "xanchor": "left"},
        "font": _FONT,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.2},
        # Plotly's toolbar, shown on hover, stands at the right edge rather than across the top,
        # where it covered the end of a long title.
        "modebar": {"orientation": "v"},
        **extra,
    }


def new_figure(fig_id: str, data: list[dict[str, Any]], layout: dict[str, Any], height: int = 360) -> Figure:
    """A figure the page draws into the element `fig_id`."""
    return {"id": fig_id, "data": data, "layout": {**layout, "height": height}}
