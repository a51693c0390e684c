"""Draw the unallocated-GPU curves of `benchmarks/fgd_openb.py` as an SVG line chart.

A hand-written SVG (a few kilobytes, no plotting library): one line per policy, unallocated GPUs in
% against the GPUs arrived in % of the cluster's, with the paper's Fig. 9(a) values as dots where
the JSON carries them (`expected`).

    .venv/bin/python tools/figures/fgd_curves.py SWEEP.json [MORE.json ...] -o docs/images/fgd-openb.svg

Several JSON files are merged (a later file's policy replaces an earlier one's).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 200, 20, 50
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
Curve = Mapping[str, float]


def curves_of(documents: Sequence[Mapping[str, object]]) -> tuple[dict[str, Curve], dict[str, Curve]]:
    """(measured, expected) curves by policy, from the benchmark's JSON objects."""
    measured: dict[str, Curve] = {}
    expected: dict[str, Curve] = {}
    for doc in documents:
        for key, value in doc.items():
            if key == "expected" and isinstance(value, dict):
                expected.update({p: {str(k): float(v) for k, v in c.items()} for p, c in value.items()})
            elif isinstance(value, dict) and value and all(k.isdigit() for k in value):
                measured[key] = {k: float(v) for k, v in value.items()}
    return measured, expected


def svg(measured: Mapping[str, Curve], expected: Mapping[str, Curve], title: str) -> str:
    levels = sorted({int(k) for c in measured.values() for k in c})
    values = [v for c in (*measured.values(), *expected.values()) for v in c.values()]
    if not levels or not values:
        raise ValueError("no curves in the input")
    y_max = max(2.0, (int(max(values)) // 2 + 1) * 2.0)
    x_lo, x_hi = levels[0], levels[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(level: float) -> float:
        return LEFT + (level - x_lo) / max(x_hi - x_lo, 1) * plot_w

    def y(value: float) -> float:
        return TOP + (1 - value / y_max) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="{TOP - 6}" font-size="13">{escape(title)}</text>',
    ]
    for tick in range(0, int(y_max) + 1, 2):
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    for level in levels:
        out.append(f'<text x="{x(level):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{level}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">'
        "GPUs arrived (% of the cluster's)</text>"
        f'<text x="16" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2:.1f})">unallocated GPUs (%)</text>'
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>'
    )
    for i, (policy, curve) in enumerate(measured.items()):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(
            f"{x(int(k)):.1f},{y(v):.1f}" for k, v in sorted(curve.items(), key=lambda kv: int(kv[0]))
        )
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for k, v in (expected.get(policy) or {}).items():
            if int(k) in levels:
                out.append(
                    f'<circle cx="{x(int(k)):.1f}" cy="{y(v):.1f}" r="3" fill="none" stroke="{colour}"/>'
                )
        ly = TOP + 14 + 18 * i
        out.append(
            f'<line x1="{LEFT + plot_w + 12}" x2="{LEFT + plot_w + 36}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<text x="{LEFT + plot_w + 42}" y="{ly}">{escape(policy)}</text>'
        )
    if expected:
        ly = TOP + 14 + 18 * len(measured) + 6
        out.append(
            f'<circle cx="{LEFT + plot_w + 24}" cy="{ly - 4}" r="3" fill="none" stroke="#444"/>'
            f'<text x="{LEFT + plot_w + 42}" y="{ly}">the paper (Fig. 9a)</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="JSON printed by benchmarks/fgd_openb.py")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--title", default="openb trace, mean of seeds 42-51, ties by (ranked) node name")
    opts = parser.parse_args(argv)
    measured, expected = curves_of([json.loads(p.read_text()) for p in opts.inputs])
    opts.output.write_text(svg(measured, expected, opts.title))


if __name__ == "__main__":
    main()
