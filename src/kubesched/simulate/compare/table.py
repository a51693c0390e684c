"""The human view of a comparison: one row per figure, one column per configuration."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.compare.model import Comparison, ConfigRun
from kubesched.simulate.units import human_quantity, human_requests

#: Reasons listed one per row; the rest are summed into one row.
_REASONS_SHOWN = 8


def render_comparison(comparison: Comparison, console: Console) -> None:
    runs = comparison.runs
    table = Table(
        title=f"{comparison.pods} pods on {comparison.nodes} nodes under {len(runs)} configurations",
        header_style="bold",
    )
    table.add_column("FIGURE")
    for run in runs:
        table.add_column(escape(run.name), justify="right")
    for label, cells in comparison_rows(comparison):
        table.add_row(escape(label), *(escape(c) for c in cells))
    console.print(table)


def comparison_rows(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """Every figure as (label, one cell per configuration): the table and the HTML report's table."""
    runs = comparison.runs
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, cells: Sequence[object]) -> None:
        rows.append((label, [str(c) for c in cells]))

    row("pods scheduled", [r.scheduled for r in runs])
    row("pods unschedulable", [r.unschedulable for r in runs])
    for reason, counts in unschedulable_reasons(runs):
        row(f"  {reason}", counts)
    if any(r.ignored for r in runs):
        row("pods held by another scheduler (no profile of that name)", [r.ignored for r in runs])
        held = [r.held_by_another_scheduler.requests for r in runs]
        for resource in dict.fromkeys(res for requests in held for res in requests):
            row(
                f"  their {resource} requests (not in the free figures)",
                [human_quantity(resource, h[resource]) if resource in h else "-" for h in held],
            )
    row("pods evicted (preemption)", [r.evicted for r in runs])
    row("pods that preempted", [r.preemptors for r in runs])
    resources = list(dict.fromkeys(res for run in runs for res in run.utilization))
    for resource in resources:
        row(f"{resource} utilization mean ± spread", [_spread(r, resource) for r in runs])
    for resource in dict.fromkeys(res for run in runs for res in run.stranded):
        row(f"{resource} stranded", [r.stranded.get(resource, 0) for r in runs])
    for resource in dict.fromkeys(res for run in runs for res in run.largest_free):
        cells = [r.largest_free.get(resource) for r in runs]
        row(
            f"most {resource} free on one node",
            ["-" if c is None else human_quantity(resource, c) for c in cells],
        )
    row("largest input pod still placeable", [shape_text(r.largest_placeable) for r in runs])
    zones = list(dict.fromkeys(z for run in runs for z in run.zones))
    for zone in zones:
        row(f"placed in zone {zone}", [r.zones.get(zone, 0) for r in runs])
    if zones:
        row("zone skew (max - min)", [r.zone_skew for r in runs])
    if any(r.gangs.total for r in runs):
        row("gangs placed whole", [f"{r.gangs.placed}/{r.gangs.total}" for r in runs])
        row("gangs placed in part", [r.gangs.partial for r in runs])
        row("gangs not placed", [r.gangs.not_placed for r in runs])
    row("seconds", [f"{r.seconds:.2f}" for r in runs])
    return rows


def unschedulable_reasons(runs: Sequence[ConfigRun]) -> list[tuple[str, list[int]]]:
    """The most frequent reasons (by their largest count in any run), one count per run; the rest summed."""
    reasons: dict[str, int] = {}
    for run in runs:
        for reason, n in run.unschedulable_by_reason.items():
            reasons[reason] = max(reasons.get(reason, 0), n)
    ranked = sorted(reasons, key=lambda reason: (-reasons[reason], reason))
    out = [
        (reason, [r.unschedulable_by_reason.get(reason, 0) for r in runs])
        for reason in ranked[:_REASONS_SHOWN]
    ]
    if len(ranked) > _REASONS_SHOWN:
        rest = ranked[_REASONS_SHOWN:]
        out.append(
            (
                f"{len(rest)} other reasons",
                [sum(r.unschedulable_by_reason.get(x, 0) for x in rest) for r in runs],
            )
        )
    return out


def shape_text(requests: dict[str, str] | None) -> str:
    return human_requests(requests) if requests else "none"


def _spread(run: ConfigRun, resource: str) -> str:
    s = run.utilization.get(resource)
    return "-" if s is None else f"{s.mean * 100:.0f}% ± {s.stddev * 100:.0f}"
