"""The API server's Priority admission, as far as it refuses objects: a pod or pod group that names a
PriorityClass the cluster does not hold.

The API server refuses such an object (`no PriorityClass with name X was found`), so a simulation
that takes it at priority 0 answers for a cluster that cannot exist. The check runs once all input
files are loaded, because a class and the pods naming it may sit in different files. A workload
(Deployment, Job, ...) is accepted by the server, but every pod its controller makes from the
template is refused, so its template is checked too.

The two system classes exist in every cluster: the API server creates them at start-up.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Final

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import ObjectMeta
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.api.workloads import WorkloadObject, pod_template_of
from kubesched.errors import InputError

__all__ = ["SYSTEM_PRIORITY_CLASSES", "unknown_priority_classes"]

#: What the API server creates at start-up (value `2 * 10^9`, and 1000 more for node-critical).
SYSTEM_PRIORITY_CLASSES: Final[dict[str, PriorityClass]] = {
    pc.metadata.name: pc
    for pc in (
        PriorityClass(
            metadata=ObjectMeta(name="system-node-critical"),
            value=2_000_001_000,
            preemption_policy="PreemptLowerPriority",
        ),
        PriorityClass(
            metadata=ObjectMeta(name="system-cluster-critical"),
            value=2_000_000_000,
            preemption_policy="PreemptLowerPriority",
        ),
    )
}

#: Per workload kind, the resource name and the field path of its pod template's spec.
_TEMPLATE_PATHS: Final = {
    "CronJob": ("cronjobs", "spec.jobTemplate.spec.template.spec"),
    "Deployment": ("deployments", "spec.template.spec"),
    "ReplicaSet": ("replicasets", "spec.template.spec"),
    "StatefulSet": ("statefulsets", "spec.template.spec"),
    "DaemonSet": ("daemonsets", "spec.template.spec"),
    "Job": ("jobs", "spec.template.spec"),
    "ReplicationController": ("replicationcontrollers", "spec.template.spec"),
}


def unknown_priority_classes(objects: LoadedObjects, known: Collection[str] = ()) -> list[InputError]:
    """One error per object of `objects` that names a PriorityClass neither `objects`, `known` nor
    the API server's system classes hold. An object whose `spec.priority` is already set (read back
    from a cluster, which admitted it then) is not checked."""
    names = {pc.metadata.name for pc in objects.priority_classes} | set(known) | set(SYSTEM_PRIORITY_CLASSES)
    return [
        InputError(f"no PriorityClass with name {name} was found{why}", source=where, path=path)
        for name, where, path, why in _references(objects)
        if name not in names
    ]


def _object_name(resource: str, meta: ObjectMeta, *, namespaced: bool = True) -> str:
    return (
        f"{resource}/{meta.namespace or 'default'}/{meta.name}" if namespaced else f"{resource}/{meta.name}"
    )


def _references(objects: LoadedObjects) -> Iterator[tuple[str, str, str, str]]:
    """(class name, object, field path, why it matters) of every class reference in `objects`."""
    for pod in objects.pods:
        if pod.spec.priority_class_name and pod.spec.priority is None:
            yield (
                pod.spec.priority_class_name,
                _object_name("pods", pod.metadata),
                "spec.priorityClassName",
                "",
            )
    groups: list[PodGroup | CompositePodGroup] = [
        *objects.scheduling_pod_groups,
        *objects.composite_pod_groups,
    ]
    for group in groups:
        if group.spec.priority_class_name and group.spec.priority is None:
            resource = "podgroups" if group.kind == "PodGroup" else "compositepodgroups"
            where = _object_name(resource, group.metadata)
            yield group.spec.priority_class_name, where, "spec.priorityClassName", ""
    refused = " (the API server refuses every pod made from this template)"
    workloads: list[WorkloadObject] = [
        *objects.deployments,
        *objects.replica_sets,
        *objects.stateful_sets,
        *objects.daemon_sets,
        *objects.jobs,
        *objects.cron_jobs,
        *objects.replication_controllers,
    ]
    for workload in workloads:
        template = pod_template_of(workload)
        if template is None or not template.spec.priority_class_name or template.spec.priority is not None:
            continue
        resource, path = _TEMPLATE_PATHS[workload.kind]
        where = _object_name(resource, workload.metadata)
        yield template.spec.priority_class_name, where, f"{path}.priorityClassName", refused
