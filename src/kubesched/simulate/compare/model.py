"""The `kubesched compare` report: each configuration's figures side by side (docs/what-if.md)."""

from __future__ import annotations

import msgspec

from kubesched.simulate.compare.gangs import GangCounts
from kubesched.simulate.held import HeldPods
from kubesched.simulate.report import ReportStruct


class Spread(ReportStruct):
    """A per-node fraction (0..1) over the nodes that have the resource."""

    mean: float
    stddev: float
    min: float
    max: float


class ConfigRun(ReportStruct):
    """One configuration's figures."""

    name: str
    config: str
    scheduled: int
    unschedulable: int
    errors: int
    #: Pods whose schedulerName names no profile of this configuration.
    ignored: int
    #: Unschedulable pods per FailedScheduling reason (a pod counts under each of its reasons).
    unschedulable_by_reason: dict[str, int]
    #: Pods evicted by preemption, and pods whose scheduling evicted others.
    evicted: int
    preemptors: int
    utilization: dict[str, Spread]
    #: Per extended resource: free units on nodes with less free than the smallest pending request.
    stranded: dict[str, int]
    #: Per resource: the most free on one schedulable node.
    largest_free: dict[str, str]
    #: The biggest pod shape of the input that still fits on a schedulable node (by requests), if any.
    largest_placeable: dict[str, str] | None
    #: Pods placed in the run per zone, and max - min over the zones.
    zones: dict[str, int]
    zone_skew: int
    gangs: GangCounts
    seconds: float
    #: The `ignored` pods (held by another scheduler) and what they request: the free figures
    #: (`stranded`, `largestFree`, `largestPlaceable`) do not keep room for them.
    held_by_another_scheduler: HeldPods = msgspec.field(
        default_factory=lambda: HeldPods(pods=0, scheduler_names={}, requests={})
    )


class Comparison(ReportStruct):
    runs: list[ConfigRun]
    #: Pods to schedule (those of the input's workloads included).
    pods: int
    nodes: int
    seed: int
