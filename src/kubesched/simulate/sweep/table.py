"""The human view of a sweep: one row per configuration and scenario, mean ± spread over the seeds."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.sweep.summary import Stat, SweepResult

#: (column, figure, shown as a percentage)
_COLUMNS = (
    ("SCHEDULED", "scheduled", False),
    ("UNSCHEDULABLE", "unschedulable", False),
    ("EVICTED", "evicted", False),
    ("CPU USED", "cpuUtilization", True),
    ("CPU SPREAD", "cpuSpread", True),
    ("STRANDED EXT.", "strandedExtended", False),
    ("ZONE SKEW", "zoneSkew", False),
    ("GANGS WHOLE", "gangsPlaced", False),
    ("GANGS PART", "gangsPartial", False),
)


def _cell(stat: Stat, percent: bool) -> str:
    scale = 100 if percent else 1
    mean, spread = stat.mean * scale, stat.stddev * scale
    text = f"{mean:.1f}" if percent or mean != int(mean) else f"{int(mean)}"
    return f"{text} ± {spread:.1f}" if spread else text


def render_sweep(result: SweepResult, console: Console) -> None:
    seeds = max((g.seeds for g in result.groups), default=0)
    table = Table(
        title=f"Sweep: {len(result.cells)} simulations, mean ± spread over {seeds} seed(s)",
        header_style="bold",
    )
    table.add_column("CONFIG", overflow="fold")
    table.add_column("SCENARIO", overflow="fold")
    for column, _, _ in _COLUMNS:
        table.add_column(column, justify="right")
    for group in result.groups:
        cells = [_cell(group.figures[name], percent) for _, name, percent in _COLUMNS]
        if group.errors:
            cells[0] += f" ({group.errors} failed)"
        table.add_row(escape(group.variant), escape(group.scenario), *cells)
    console.print(table)
    console.print(
        f"{len(result.cells)} cells on {result.workers} worker(s) ({result.backend}) in {result.seconds:.2f}s"
    )
