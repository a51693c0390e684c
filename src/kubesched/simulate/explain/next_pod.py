"""`explain -f` of a workload: the pod its controller would create next, built from its template.

The workload joins the cluster's objects (replacing the one of the same kind and name there: the
file is its new version) and the simulated controllers run one round, as kube-controller-manager
would on seeing it. The first pod made for it is the answer: a new ReplicaSet's pod for a changed
Deployment, the next ordinal of a StatefulSet, a DaemonSet's pod for its first node that has none.
When the workload already has every pod it wants, the next pod is the one a scale-up by one makes.
Nothing is scheduled here: the pod is then explained like any manifest.

With WorkloadWithJob on, a Job's pods join the PodGroup its controller makes for it: `job_group`
gives that PodGroup with the Job's Workload and every pod of the round, so that the group is
explained, as the scheduler would take it.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from kubesched.api.controllers import DaemonSet, Job
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import PodGroup, Workload
from kubesched.api.workloads import WorkloadObject
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.features import FeatureGates
from kubesched.errors import InputError
from kubesched.framework.node_info import pod_key
from kubesched.framework.pod_groups import pod_group_of
from kubesched.simulate.workloads import WorkloadControllers, with_room_for_controllers

__all__ = ["JobGroup", "job_group", "next_pod"]


@dataclass(frozen=True)
class JobGroup:
    """What a Job's controller makes in one round with WorkloadWithJob on, when its pods get a group."""

    workload: Workload
    pod_group: PodGroup
    pods: list[Pod]

    def added_to(self, objects: LoadedObjects) -> LoadedObjects:
        """`objects` with the Workload, the PodGroup and the pods."""
        objects = objects.with_object(self.workload).with_object(self.pod_group)
        for pod in self.pods:
            objects = objects.with_object(pod)
        return objects


def job_group(objects: LoadedObjects, job: Job, gates: FeatureGates, *, seed: int = 0) -> JobGroup | None:
    """The Workload, PodGroup and pods `job`'s controller makes on `objects`' cluster with `gates`
    (None when its pods join no group it made: WorkloadWithJob off, a Job it leaves alone)."""
    meta = job.metadata
    namespace = meta.namespace or "default"
    if meta.namespace != namespace:
        job = msgspec.structs.replace(job, metadata=msgspec.structs.replace(meta, namespace=namespace))
    cluster = MemoryCluster(with_room_for_controllers(objects.with_object(job)))
    before = set(cluster.groups.pod_groups)
    controllers = WorkloadControllers(cluster, seed=seed, gates=gates)
    created = controllers.reconcile().created
    made = [k for k in cluster.groups.pod_groups if k not in before]
    if not made:
        return None
    pod_group = cluster.groups.pod_groups[made[0]]
    ref = pod_group.spec.workload_ref
    workload = cluster.groups.workload(namespace, ref.workload_name) if ref is not None else None
    if workload is None:
        return None
    pods = [p for p in created if pod_group_of(p) == made[0]]
    return JobGroup(workload, pod_group, pods)


def next_pod(objects: LoadedObjects, workload: WorkloadObject, *, seed: int = 0) -> Pod:
    """The pod `workload`'s controller would create next on `objects`' cluster."""
    meta = workload.metadata
    namespace = meta.namespace or "default"
    if meta.namespace != namespace:
        named = msgspec.structs.replace(meta, namespace=namespace)
        workload = msgspec.structs.replace(workload, metadata=named)
    same = (workload.kind, namespace, meta.name)
    cluster = MemoryCluster(with_room_for_controllers(objects.with_object(workload)))
    controllers = WorkloadControllers(cluster, seed=seed)
    mine = _made_for(controllers, same)
    if mine is None and not isinstance(workload, DaemonSet):
        status = controllers.status_of(*same)
        controller = controllers.find(*same)
        assert status is not None and controller is not None
        controller.scale(status.desired + 1)
        mine = _made_for(controllers, same)
    if mine is None:
        raise InputError(
            "its controller would create no pod on this cluster (it has every pod it wants)",
            source=f"{workload.kind} {namespace}/{meta.name}",
        )
    return mine


def _made_for(controllers: WorkloadControllers, key: tuple[str, str, str]) -> Pod | None:
    """One reconcile round; the first pod it created for the workload `key`, if any."""
    created = {pod_key(p): p for p in controllers.reconcile().created}
    status = controllers.status_of(*key)
    assert status is not None
    return next((created[pod_key(p)] for p in status.current if pod_key(p) in created), None)
