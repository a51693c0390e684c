"""The `kubesched capacity` report: how many more copies of each shape fit, and where (docs/what-if.md)."""

from __future__ import annotations

from kubesched.simulate.held import HeldPods
from kubesched.simulate.report import ReportStruct


class ShapeCapacity(ReportStruct):
    """The answer for one shape."""

    #: `Pod default/web` or `Deployment shop/api`.
    shape: str
    #: What one copy requests (cpu in cores or millicores, memory in bytes with a binary suffix, ...).
    requests: dict[str, str]
    #: A workload's own pods (`replicas`, a Job's parallel pods), placed before counting (0 for a
    #: pod), and how many of them were scheduled.
    replicas: int
    replicas_scheduled: int
    #: Copies that fit beyond those (for a DaemonSet: its pods that fit).
    fits: int
    #: True when the count stopped at the limit: at least `fits` fit.
    limited: bool
    #: Why the next copy does not fit: its FailedScheduling message; null when `limited`.
    reason: str | None
    #: Where the copies went: node -> count and `topology.kubernetes.io/zone` -> count.
    nodes: dict[str, int]
    zones: dict[str, int]


class GangCapacity(ReportStruct):
    """The answer for a gang (a scheduling.k8s.io PodGroup and its pods, GenericWorkload on): how
    many more nodes of the node shape until it fits, all or nothing."""

    #: `PodGroup default/train`.
    pod_group: str
    min_count: int
    #: Its pods in SHAPE, and what they request together.
    pods: int
    requests: dict[str, str]
    #: `Node gpu-node`: the node copies are made of; null without --node-shape.
    node_shape: str | None
    #: Nodes of that shape to add before minCount members are placed at once: 0 when the gang fits
    #: already; null when it does not fit within --max nodes (`limited`) or no node shape was given.
    nodes_needed: int | None
    limited: bool
    #: The PodGroup condition's message with one node fewer: why it does not fit then; null when
    #: it fits on the cluster as it is.
    reason: str | None
    #: Where its pods go once it fits: node -> count.
    nodes: dict[str, int]


class CapacityReport(ReportStruct):
    shapes: list[ShapeCapacity]
    #: The gangs of SHAPE (empty with GenericWorkload off).
    gangs: list[GangCapacity]
    #: Nodes in the cluster.
    nodes: int
    #: Wall-clock seconds for every shape (loading files not included).
    seconds: float
    #: Pending pods of the input that no profile schedules: `fits` does not keep room for them.
    held_by_another_scheduler: HeldPods
