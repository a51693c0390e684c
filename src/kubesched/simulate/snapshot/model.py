"""The simulate report: a JSON contract that tests and outside tools rely on.

    {"pods": [...], "nodes": [...], "summary": {...}, "profiles": [...], "workloads": [...],
     "podGroups": [...]}

Field names and meanings are documented in docs/simulate-report.md; change them only with care.
"""

from __future__ import annotations

import msgspec

from kubesched.simulate.explain.model import Explanation, FilterVerdict, NodeScores
from kubesched.simulate.report import ReportStruct

#: The values of `pods[].result`.
RESULTS = ("Scheduled", "Unschedulable", "Error", "Gated", "Waiting", "Ignored", "Deleted")


class AllocatedDevice(ReportStruct):
    """A device DynamicResources allocated to one of the pod's ResourceClaims."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")


class PodResult(ReportStruct):
    namespace: str
    name: str
    scheduler_name: str
    result: str
    node: str | None = None
    nominated_node: str | None = None
    #: The workload the pod belongs to, as the report prints it (`Deployment shop/checkout`): the
    #: input's workload whose controller made it, else its controller ownerReference; None for a bare pod.
    workload: str | None = None
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
    #: With --explain: the last attempt per reason (see explain/verdicts.py).
    explanation: Explanation | None = None


class NodeUsage(ReportStruct):
    name: str
    pods: int
    allocatable: dict[str, str]
    requested: dict[str, str]


class WorkloadResult(ReportStruct):
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


class PodGroupResult(ReportStruct):
    """One scheduling.k8s.io PodGroup (GenericWorkload on), or CompositePodGroup (CompositePodGroup
    on): was it placed, why not, and where."""

    namespace: str
    name: str
    #: Scheduled | Unschedulable | Error, from its PodGroupInitiallyScheduled condition; Pending when
    #: it has none (no pod-group cycle ran: fewer than minCount pods, or members still gated).
    result: str
    #: Pods that must be placed together (1 for a `basic` policy); for a composite, its child
    #: groups (`minGroupCount`).
    min_count: int
    #: Pods that name it, bound or not.
    pods: int
    #: The condition's message, the text the binary writes ("" when scheduled); null without one.
    message: str | None = None
    #: Its bound pods: pod name -> node.
    placement: dict[str, str] = {}
    #: The names of the pods that name it, in the order they arrived (a composite: of every
    #: PodGroup under it).
    members: list[str] = []
    #: PodGroup | CompositePodGroup
    kind: str = "PodGroup"
    #: The CompositePodGroup it belongs to (`spec.parentCompositePodGroupName`), null for a root.
    parent: str | None = None


class Summary(ReportStruct):
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


class ProfileWeights(ReportStruct):
    """A profile's Score plugins and their weights: `total` sums plugin score * weight."""

    scheduler_name: str
    score_weights: dict[str, int]


class Report(ReportStruct):
    pods: list[PodResult]
    nodes: list[NodeUsage]
    summary: Summary
    profiles: list[ProfileWeights] = []
    #: The input's workloads (empty when it has none).
    workloads: list[WorkloadResult] = []
    #: The input's scheduling.k8s.io PodGroups with GenericWorkload on (empty with the gate off).
    pod_groups: list[PodGroupResult] = []


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
