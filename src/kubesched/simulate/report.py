"""The simulate report: a JSON contract that tests and outside tools rely on.

    {"pods": [...], "nodes": [...], "summary": {...}, "profiles": [...], "workloads": [...]}

Field names and meanings are documented in docs/simulate-report.md; change them only with care.
The `kubesched explain` report (`PodExplanation`, docs/explain.md) reuses its pieces.
"""

from __future__ import annotations

import msgspec

#: The values of `pods[].result`.
RESULTS = ("Scheduled", "Unschedulable", "Error", "Gated", "Waiting", "Ignored", "Deleted")


class _Out(msgspec.Struct, kw_only=True, rename="camel"):
    """Report structs: camelCase keys, every field always present (null when unknown)."""


class FilterVerdict(_Out):
    plugin: str
    code: str
    reasons: list[str]


class NodeScores(_Out):
    plugins: dict[str, int]
    total: int


class AllocatedDevice(_Out):
    """A device DynamicResources allocated to one of the pod's ResourceClaims."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")


class Rejection(_Out):
    """Nodes one plugin rejected for one reason: how many, and the first few names."""

    plugin: str
    code: str
    reason: str
    count: int
    nodes: list[str]


class RankedNode(_Out):
    """A feasible node with its total and per-plugin (unweighted) scores."""

    node: str
    total: int
    plugins: dict[str, int]


class Explanation(_Out):
    """The last attempt summarised per reason, bounded whatever the cluster's size."""

    rejected_nodes: int
    rejections: list[Rejection]
    scored_nodes: int
    top_nodes: list[RankedNode]


class PodResult(_Out):
    namespace: str
    name: str
    scheduler_name: str
    result: str
    node: str | None = None
    nominated_node: str | None = None
    #: Pods evicted to make room for this pod (preemption), as `namespace/name`; [] when none.
    victims: list[str] = []
    message: str | None = None
    attempts: int = 0
    filter: dict[str, FilterVerdict] = {}
    scores: dict[str, NodeScores] = {}
    #: Devices of the pod's ResourceClaims (DRA), as `claim` (namespace/name) -> driver/pool/device.
    devices: list[AllocatedDevice] = []
    #: The PreFilter rejection of the last attempt (then `filter` is empty: no node was filtered).
    pre_filter: FilterVerdict | None = None
    #: With --explain: the last attempt per reason (see explanation.py).
    explanation: Explanation | None = None


class NodeUsage(_Out):
    name: str
    pods: int
    allocatable: dict[str, str]
    requested: dict[str, str]


class WorkloadResult(_Out):
    """One workload of the input (Deployment, StatefulSet, ...): does it fit, and where."""

    kind: str
    namespace: str
    name: str
    #: Pods the workload wants (replicas; a DaemonSet's eligible nodes; a Job's parallel pods).
    desired: int
    #: Its current-revision pods bound to a node, and those still pending.
    scheduled: int
    pending: int
    #: Pods of earlier revisions still present (a Deployment whose rollout did not finish).
    old: int = 0
    #: Pods the simulated controller created and deleted.
    created: int = 0
    deleted: int = 0
    #: Every desired pod scheduled and no old pod left.
    complete: bool = False
    #: Where the scheduled pods are: node -> count, zone -> count (`topology.kubernetes.io/zone`).
    nodes: dict[str, int] = {}
    zones: dict[str, int] = {}
    #: Why it is not complete: a pending pod's FailedScheduling message, or what the controller waits for.
    message: str | None = None


class Summary(_Out):
    scheduled: int
    unschedulable: int
    pods: int
    nodes: int
    seconds: float
    pods_per_second: float
    errors: int = 0
    gated: int = 0
    waiting: int = 0
    ignored: int = 0


class ProfileWeights(_Out):
    """A profile's Score plugins and their weights: `total` sums plugin score * weight."""

    scheduler_name: str
    score_weights: dict[str, int]


class Report(_Out):
    pods: list[PodResult]
    nodes: list[NodeUsage]
    summary: Summary
    profiles: list[ProfileWeights] = []
    #: The input's workloads (empty when it has none).
    workloads: list[WorkloadResult] = []


def to_json(report: msgspec.Struct, *, indent: int = 2) -> bytes:
    """A report (simulate, capacity, compare, sweep) as indented JSON."""
    raw = msgspec.json.encode(report)
    return msgspec.json.format(raw, indent=indent) if indent else raw


class NearNode(_Out):
    """A node that rejected the pod, with every plugin that did and what is missing, in words."""

    node: str
    plugins: list[str]
    missing: list[str]


class Preemption(_Out):
    """What DefaultPreemption (or another PostFilter plugin) did for the pod, or why not."""

    helps: bool
    node: str | None
    victims: list[str]
    message: str


class PodExplanation(_Out):
    """`kubesched explain`: one scheduling cycle of one pod, in full."""

    pod: str
    scheduler_name: str
    source: str
    nodes: int
    #: Schedulable | Unschedulable | Error | Gated | Waiting
    verdict: str
    node: str | None
    running_on: str | None
    message: str | None
    pre_filter: FilterVerdict | None
    rejected_nodes: int
    rejections: list[Rejection]
    nearest_nodes: list[NearNode]
    preemption: Preemption | None
    scored_nodes: int
    top_nodes: list[RankedNode]
    score_weights: dict[str, int]
    notes: list[str]
    seconds: float


#: `--pods` values and the results each selects ("unschedulable": every pod the run did not place).
POD_SELECTIONS: dict[str, frozenset[str]] = {
    "all": frozenset(RESULTS),
    "scheduled": frozenset({"Scheduled"}),
    "unschedulable": frozenset({"Unschedulable", "Error", "Gated", "Waiting"}),
}


def select(
    report: Report, *, pods: str = "all", keys: frozenset[str] = frozenset(), nodes: bool = True
) -> Report:
    """The report limited to some pods (`pods` a POD_SELECTIONS key; `keys` as `namespace/name`,
    all when empty) and without `nodes[]` when `nodes` is False. The summary still counts every pod."""
    results = POD_SELECTIONS[pods]
    kept = [p for p in report.pods if p.result in results and (not keys or f"{p.namespace}/{p.name}" in keys)]
    return msgspec.structs.replace(report, pods=kept, nodes=report.nodes if nodes else [])
