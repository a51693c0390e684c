"""A sweep's results gathered into one comparison: per configuration and scenario, over the seeds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kubesched.simulate.compare.model import ConfigRun
from kubesched.simulate.report import ReportStruct
from kubesched.simulate.sweep.cell import CellResult

__all__ = ["FIGURES", "Group", "Stat", "SweepResult", "summarize"]


class Stat(ReportStruct):
    mean: float
    stddev: float


class Group(ReportStruct):
    """One configuration on one scenario, over its seeds."""

    variant: str
    scenario: str
    seeds: int
    #: Cells that could not run (their `error` is in `cells`).
    errors: int
    figures: dict[str, Stat]


class SweepResult(ReportStruct):
    groups: list[Group]
    cells: list[CellResult]
    #: `here`, `processes` or `ray`; the workers (processes, or the Ray cluster's CPUs).
    backend: str
    workers: int
    seconds: float


def _resource_mean(resource: str) -> Callable[[ConfigRun], float]:
    return lambda r: r.utilization[resource].mean if resource in r.utilization else 0.0


def _resource_spread(resource: str) -> Callable[[ConfigRun], float]:
    return lambda r: r.utilization[resource].stddev if resource in r.utilization else 0.0


#: The figures summarized over seeds, by name (the compare figures that are numbers).
FIGURES: dict[str, Callable[[ConfigRun], float]] = {
    "scheduled": lambda r: r.scheduled,
    "unschedulable": lambda r: r.unschedulable,
    "evicted": lambda r: r.evicted,
    "cpuUtilization": _resource_mean("cpu"),
    "cpuSpread": _resource_spread("cpu"),
    "memoryUtilization": _resource_mean("memory"),
    "strandedExtended": lambda r: sum(r.stranded.values()),
    "zoneSkew": lambda r: r.zone_skew,
    "gangsPlaced": lambda r: r.gangs.placed,
    "gangsPartial": lambda r: r.gangs.partial,
}


def _stat(values: Sequence[float]) -> Stat:
    if not values:
        return Stat(mean=0.0, stddev=0.0)
    mean = sum(values) / len(values)
    return Stat(
        mean=round(mean, 4), stddev=round(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), 4)
    )


def summarize(cells: Sequence[CellResult], *, backend: str, workers: int, seconds: float) -> SweepResult:
    keys = list(dict.fromkeys((c.variant, c.scenario) for c in cells))
    groups = []
    for variant, scenario in keys:
        mine = [c for c in cells if (c.variant, c.scenario) == (variant, scenario)]
        runs = [c.run for c in mine if c.run is not None]
        groups.append(
            Group(
                variant=variant,
                scenario=scenario,
                seeds=len(mine),
                errors=len(mine) - len(runs),
                figures={name: _stat([float(f(r)) for r in runs]) for name, f in FIGURES.items()},
            )
        )
    return SweepResult(
        groups=groups, cells=list(cells), backend=backend, workers=workers, seconds=round(seconds, 3)
    )
