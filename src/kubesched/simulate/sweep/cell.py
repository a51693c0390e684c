"""One cell of a sweep, run wherever it lands: decode its configuration and scenario, simulate, measure.

A worker runs many cells of the same scenario, so decoded scenarios are kept per process (a few,
least recently used first out): the 5000-node scenario is decoded once per worker, not per cell.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Final

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.config.loader import decode_config
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.simulate.compare.model import ConfigRun
from kubesched.simulate.compare.run import measure
from kubesched.simulate.report import ReportStruct
from kubesched.simulate.snapshot.run import simulate_cluster
from kubesched.simulate.sweep.grid import Cell, Scenario

__all__ = ["CellResult", "run_cell"]

_KEPT_SCENARIOS: Final = 4
_decoded: OrderedDict[Scenario, LoadedObjects] = OrderedDict()


class CellResult(ReportStruct):
    variant: str
    scenario: str
    seed: int
    run: ConfigRun | None = None
    #: Why the cell could not run (bad input found on the worker); null when it ran.
    error: str | None = None
    #: CPU seconds the cell took where it ran (decoding, simulating, measuring).
    cpu_seconds: float = 0.0


def _objects(scenario: Scenario) -> LoadedObjects:
    objects = _decoded.get(scenario)
    if objects is not None:
        _decoded.move_to_end(scenario)
        return objects
    objects = LoadedObjects()
    for source, text in scenario.files:
        for obj in load_documents(text, source, skipped=objects.skipped):
            objects.add(obj)
    _decoded[scenario] = objects
    while len(_decoded) > _KEPT_SCENARIOS:
        _decoded.popitem(last=False)
    return objects


def run_cell(cell: Cell) -> CellResult:
    """Simulate one cell; bad input becomes the result's `error`, so one bad cell never stops a sweep."""
    result = CellResult(variant=cell.variant.name, scenario=cell.scenario.name, seed=cell.seed)
    started = time.process_time()
    try:
        registry = default_registry()
        config = decode_config(cell.variant.config, cell.variant.name, registry)
        objects = _objects(cell.scenario)
        report, cluster = simulate_cluster(objects, config, registry, seed=cell.seed)
    except InputError as err:
        result.error = str(err)
    else:
        result.run = measure(cell.variant.name, cell.variant.name, report, cluster, objects)
    result.cpu_seconds = round(time.process_time() - started, 3)
    return result
