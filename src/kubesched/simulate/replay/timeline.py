"""Measurements of a replay over time: periodic samples, per-node heat maps, wait percentiles.

Samples are taken on a fixed grid of virtual time. The grid is bounded: when it would exceed
MAX_SAMPLES points, every other point is dropped and the interval doubles, so an unexpectedly long
replay costs a coarser picture, never unbounded memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.framework.node_info import PODS
from kubesched.framework.node_table import NodeTable
from kubesched.simulate.html.figures import MAX_HEATMAP_ROWS
from kubesched.simulate.replay.model import HeatMap, Latency, Sample

__all__ = [
    "HEATMAP_RESOURCES",
    "MAX_SAMPLES",
    "Counters",
    "Sampler",
    "default_interval",
    "latency",
    "nearest_rank",
]

MAX_SAMPLES = 1000
HEATMAP_RESOURCES = ("cpu", "memory")
#: Grid steps the default interval is rounded up to, in seconds.
_NICE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


def default_interval(span: float, points: int = 300) -> float:
    """A round interval giving about `points` samples over `span` seconds (1 s at least)."""
    wanted = span / points
    return float(next((s for s in _NICE_STEPS if s >= wanted), _NICE_STEPS[-1]))


def nearest_rank(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile: the smallest value with at least q% of the values at or below it."""
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def latency(waits: Sequence[float]) -> Latency:
    if not waits:
        return Latency(count=0, p50=None, p90=None, p99=None, max=None, mean=None)
    ordered = sorted(waits)
    return Latency(
        count=len(ordered),
        p50=_round(nearest_rank(ordered, 50)),
        p90=_round(nearest_rank(ordered, 90)),
        p99=_round(nearest_rank(ordered, 99)),
        max=_round(ordered[-1]),
        mean=_round(sum(ordered) / len(ordered)),
    )


def _round(value: float) -> float:
    return round(value, 3)


@dataclass(slots=True)
class Counters:
    """What the replay counts as it goes; a sample copies them."""

    pending: int = 0
    running: int = 0
    created: int = 0
    bound: int = 0
    completed: int = 0
    evicted: int = 0
    #: Waits of the pods bound since the last sample (for the per-sample p90).
    recent_waits: list[float] = field(default_factory=list)


@dataclass(slots=True)
class _NodeColumns:
    """Heat-map columns: per sample, which node ids were present and their percent per resource."""

    ids: list[npt.NDArray[np.int32]] = field(default_factory=list)
    percent: dict[str, list[npt.NDArray[np.uint8]]] = field(default_factory=dict)


class Sampler:
    """Samples the cluster on a grid of virtual time, filled up to each jump of the clock."""

    def __init__(self, interval: float, snapshot: Callable[[], NodeTable], counters: Counters) -> None:
        self.interval = interval
        self._snapshot = snapshot
        self._counters = counters
        self.samples: list[Sample] = []
        self._columns = _NodeColumns(percent={r: [] for r in HEATMAP_RESOURCES})
        self._node_ids: dict[str, int] = {}
        self._table_ids: tuple[NodeTable, npt.NDArray[np.int32]] | None = None
        self._next = 0.0

    def take(self, until: float, *, inclusive: bool = False) -> None:
        """Record the current state at every grid point before `until` (or at it, when inclusive)."""
        while self._next < until or (inclusive and self._next <= until):
            self._record(self._next)
            self._next += self.interval

    def _record(self, t: float) -> None:
        table = self._snapshot()
        c = self._counters
        waits = sorted(c.recent_waits)
        c.recent_waits.clear()
        self.samples.append(
            Sample(
                t=_round(t),
                pending=c.pending,
                running=c.running,
                nodes=len(table),
                created=c.created,
                bound=c.bound,
                completed=c.completed,
                evicted=c.evicted,
                utilization=_cluster_utilization(table),
                wait_p90=_round(nearest_rank(waits, 90)) if waits else None,
            )
        )
        self._columns.ids.append(self._ids(table))
        for resource in HEATMAP_RESOURCES:
            self._columns.percent[resource].append(_node_percent(table, resource))
        if len(self.samples) > MAX_SAMPLES:
            self._thin()

    def _ids(self, table: NodeTable) -> npt.NDArray[np.int32]:
        """Stable ids of the table's nodes (by first appearance); recomputed only for a new table."""
        if self._table_ids is not None and self._table_ids[0] is table:
            return self._table_ids[1]
        ids = np.fromiter(
            (self._node_ids.setdefault(name, len(self._node_ids)) for name in table.names),
            dtype=np.int32,
            count=len(table),
        )
        self._table_ids = (table, ids)
        return ids

    def _thin(self) -> None:
        """Keep every other sample and double the interval (bounded memory for long replays)."""
        self.samples = self.samples[::2]
        self._columns.ids = self._columns.ids[::2]
        for resource in HEATMAP_RESOURCES:
            self._columns.percent[resource] = self._columns.percent[resource][::2]
        self.interval *= 2
        self._next = self.samples[-1].t + self.interval

    def heatmaps(self) -> list[HeatMap]:
        """One heat map per resource: nodes (or groups of nodes) by sample time."""
        names = sorted(self._node_ids, key=_natural_key)
        times = [s.t for s in self.samples]
        maps: list[HeatMap] = []
        groups = _groups(len(names), MAX_HEATMAP_ROWS)
        labels = [_group_label(names[lo:hi]) for lo, hi in groups]
        row_of = np.empty(len(self._node_ids), dtype=np.intp)
        for position, name in enumerate(names):
            row_of[self._node_ids[name]] = position
        for resource in HEATMAP_RESOURCES:
            full = np.full((len(names), len(times)), np.nan, dtype=np.float32)
            for col, (ids, percent) in enumerate(
                zip(self._columns.ids, self._columns.percent[resource], strict=True)
            ):
                full[row_of[ids], col] = percent
            if not np.isfinite(full).any():
                continue  # no node has this resource
            values: list[list[int | None]] = []
            for lo, hi in groups:
                block = full[lo:hi]
                present = np.isfinite(block)
                counts = present.sum(axis=0)
                sums = np.where(present, block, 0.0).sum(axis=0)
                values.append(
                    [round(s / n) if n else None for s, n in zip(sums.tolist(), counts.tolist(), strict=True)]
                )
            maps.append(HeatMap(resource=resource, times=times, rows=labels, values=values))
        return maps


def _cluster_utilization(table: NodeTable) -> dict[str, float]:
    out: dict[str, float] = {}
    if len(table) == 0:
        return out
    allocatable = table.allocatable.sum(axis=0)
    requested = table.requested.sum(axis=0)
    for resource, col in table.resource_index.items():
        total = int(allocatable[col])
        if total > 0:
            out[resource] = round(float(requested[col]) / total, 4)
    pods_total = int(table.allowed_pods.sum())
    if pods_total > 0:
        out[PODS] = round(float(table.pod_count.sum()) / pods_total, 4)
    return out


def _node_percent(table: NodeTable, resource: str) -> npt.NDArray[np.uint8]:
    """Per node, percent of `resource` requested; 0 where the node has none of it."""
    col = table.resource_index.get(resource)
    if col is None:
        return np.zeros(len(table), dtype=np.uint8)
    alloc = table.allocatable[:, col]
    used = table.requested[:, col]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(alloc > 0, used * 100.0 / np.maximum(alloc, 1), 0.0)
    return np.clip(np.rint(share), 0, 255).astype(np.uint8)


def _groups(n: int, max_rows: int) -> list[tuple[int, int]]:
    """Split n sorted rows into at most max_rows contiguous groups of near-equal size."""
    rows = min(n, max_rows)
    if rows == 0:
        return []
    bounds = [round(i * n / rows) for i in range(rows + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(rows)]


def _group_label(names: Sequence[str]) -> str:
    if len(names) == 1:
        return names[0]
    return f"{names[0]} … {names[-1]} ({len(names)} nodes)"


def _natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """`node-2` before `node-10`: digit runs compare as numbers."""
    parts: list[tuple[int, int | str]] = []
    token = ""
    for ch in name + "\0":
        if token and (ch.isdigit() != token[-1].isdigit() or ch == "\0"):
            parts.append((0, int(token)) if token[0].isdigit() else (1, token))
            token = ""
        if ch != "\0":
            token += ch
    return tuple(parts)
