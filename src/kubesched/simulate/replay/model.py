"""The report of a scenario replay: what happened over (virtual) time, as a JSON contract.

    {"scenario": str, "pods": [ReplayPod, ...], "nodes": [NodeUsage, ...], "summary": ReplaySummary,
     "timeline": [Sample, ...], "heatmaps": [HeatMap, ...], "workloads": [WorkloadResult, ...],
     "gpu": GpuReport | null}

Fields are documented in docs/scenarios.md; like the simulate report, they are added, never
renamed. Times are seconds of virtual time since the scenario's start.
"""

from __future__ import annotations

from kubesched.simulate.report import ReportStruct
from kubesched.simulate.snapshot.model import NodeUsage, PodResult, WorkloadResult


class ReplayPod(PodResult, kw_only=True):
    """A pod's simulate result plus its life in the replay."""

    created_at: float
    bound_at: float | None = None
    #: From creation to bind (the pod's time in the queue); null when never bound.
    wait_seconds: float | None = None
    ended_at: float | None = None
    #: How the pod left the cluster: Completed | Deleted | Preempted | NodeDeleted; null while it runs.
    ended: str | None = None


class Latency(ReportStruct):
    """Creation-to-bind seconds over the pods that were bound (nearest-rank percentiles)."""

    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    mean: float | None


class Sample(ReportStruct):
    """The cluster at time `t` (after that instant's events and scheduling); counters are cumulative."""

    t: float
    pending: int
    running: int
    nodes: int
    created: int
    bound: int
    completed: int
    evicted: int
    #: requested / allocatable summed over the nodes, per resource (cpu, memory, pods, nvidia.com/gpu, ...).
    utilization: dict[str, float]
    #: Creation-to-bind seconds of the pods bound since the previous sample (p90); null when none.
    wait_p90: float | None = None


class HeatMap(ReportStruct):
    """Per-node utilization over time in percent; `rows` are nodes, or groups of nodes on big clusters."""

    resource: str
    times: list[float]
    rows: list[str]
    #: values[row][column]: percent of allocatable requested (0-100), null while the node(s) did not exist.
    values: list[list[int | None]]


class GpuSample(ReportStruct):
    """The cluster when the arrived GPU requests reach `arrivedPercent` % of its GPUs."""

    arrived_percent: int
    #: Mean, over the observations at this percent, of the GPU share unallocated (% of all GPUs).
    unallocated_percent: float
    #: The same for the FGD paper's fragmentation: free share the typical tasks cannot use.
    fragmented_percent: float
    #: Pods created and not bound, at the last observation at this percent.
    failed: int
    #: Of those, pods that ask for GPUs.
    failed_gpu: int


class GpuReport(ReportStruct):
    """GPU allocation over the arriving workload; `samples` one per whole percent reached."""

    #: Where the GPUs are: "dra" (devices of gpu.kubesched.io) or "extended" (nvidia.com/gpu).
    source: str
    gpus: int
    #: GPU requests of every pod created, in % of the cluster's GPUs.
    arrived_percent: float
    unallocated_percent: float
    fragmented_percent: float
    #: How many task shapes the fragmentation is measured against.
    typical_tasks: int
    samples: list[GpuSample]


class ReplaySummary(ReportStruct):
    scenario: str
    events: int
    virtual_seconds: float
    #: Wall-clock seconds the replay took, and timeline events replayed per wall second.
    seconds: float
    events_per_second: float
    pods: int
    scheduled: int
    pending: int
    completed: int
    deleted: int
    ignored: int
    errors: int
    evictions: dict[str, int]
    latency: Latency
    #: Per resource: mean over the samples and peak of the cluster-wide utilization.
    utilization_mean: dict[str, float]
    utilization_peak: dict[str, float]
    #: Timeline events that could not apply when their time came, by reason (e.g. the pod was gone).
    skipped_events: dict[str, int] = {}
    #: Pods their controllers (ReplicaSet, StatefulSet, Job, ...) created to replace evicted ones.
    recreated: int = 0


class ReplayReport(ReportStruct):
    pods: list[ReplayPod]
    nodes: list[NodeUsage]
    summary: ReplaySummary
    timeline: list[Sample]
    heatmaps: list[HeatMap]
    #: The workloads (timeline and PATHs) as they stand at the end, as in the simulate report.
    workloads: list[WorkloadResult] = []
    #: GPU allocation over the arriving workload (replay/gpu.py); null when the cluster has no GPUs.
    gpu: GpuReport | None = None
