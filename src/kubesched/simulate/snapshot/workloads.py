"""The `workloads` part of the simulate report: per workload, does it fit, and where."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from kubesched.api.meta import controller_of
from kubesched.api.objects import Node, Pod
from kubesched.framework.node_info import pod_key
from kubesched.scheduler.cache import ZONE_LABEL
from kubesched.simulate.snapshot.model import WorkloadResult
from kubesched.simulate.workloads import WorkloadControllers, WorkloadStatus
from kubesched.simulate.workloads.replica_set import ReplicaSetController

__all__ = ["owner_label", "owner_labels", "pod_workloads", "workload_label", "workload_results"]


def workload_label(kind: str, namespace: str, name: str) -> str:
    """A workload as every report prints it: `Deployment shop/checkout`."""
    return f"{kind} {namespace}/{name}"


def owner_label(pod: Pod) -> str | None:
    """The pod's controller ownerReference as a workload label; None for a bare pod."""
    ref = controller_of(pod.metadata)
    return None if ref is None else workload_label(ref.kind, pod.metadata.namespace or "default", ref.name)


def owner_labels(pod: Pod, controllers: WorkloadControllers | None) -> list[str]:
    """The pod's controller, and the Deployment above it when that is a Deployment's ReplicaSet."""
    ref = controller_of(pod.metadata)
    if ref is None:
        return []
    namespace = pod.metadata.namespace or "default"
    labels = [workload_label(ref.kind, namespace, ref.name)]
    if ref.kind == "ReplicaSet" and controllers is not None:
        rs = controllers.lookup("ReplicaSet", namespace, ref.name)
        if isinstance(rs, ReplicaSetController) and rs.deployment:
            labels.append(workload_label("Deployment", namespace, rs.deployment))
    return labels


def pod_workloads(controllers: WorkloadControllers) -> dict[str, str]:
    """pod key -> the label of the input's workload that holds it (a Deployment, not its ReplicaSet)."""
    owners: dict[str, str] = {}
    for status in controllers.statuses():
        label = workload_label(status.kind, status.namespace, status.name)
        for pod in [*status.current, *status.old]:
            owners.setdefault(pod_key(pod), label)
    return owners


def workload_results(
    controllers: WorkloadControllers, nodes: Mapping[str, Node], messages: Mapping[str, str]
) -> list[WorkloadResult]:
    """One result per workload of the input; `messages` are the pods' last scheduling messages by key."""
    return [_result(s, controllers, nodes, messages) for s in controllers.statuses()]


def _result(
    status: WorkloadStatus,
    controllers: WorkloadControllers,
    nodes: Mapping[str, Node],
    messages: Mapping[str, str],
) -> WorkloadResult:
    bound = [p for p in status.current if p.spec.node_name]
    pending = sorted((p for p in status.current if not p.spec.node_name), key=lambda p: p.metadata.name)
    per_node = Counter(p.spec.node_name for p in bound)
    per_zone: Counter[str] = Counter()
    for name, count in per_node.items():
        node = nodes.get(name)
        zone = node.labels.get(ZONE_LABEL) if node is not None else None
        if zone:
            per_zone[zone] += count
    message = status.waiting_for
    for pod in pending:
        message = messages.get(pod_key(pod)) or message
        if message:
            break
    complete = len(bound) >= status.desired and not pending and not status.old
    return WorkloadResult(
        kind=status.kind,
        namespace=status.namespace,
        name=status.name,
        desired=status.desired,
        scheduled=len(bound),
        pending=len(pending),
        old=len(status.old),
        created=controllers.created(status),
        deleted=controllers.deleted(status),
        complete=complete,
        nodes=dict(sorted(per_node.items())),
        zones=dict(sorted(per_zone.items())),
        message=None if complete else message,
    )
