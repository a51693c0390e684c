"""`explain -f` of a workload: the pod its controller would create next, built from its template.

The workload joins the cluster's objects (replacing the one of the same kind and name there: the
file is its new version) and the simulated controllers run one round, as kube-controller-manager
would on seeing it. The first pod made for it is the answer: a new ReplicaSet's pod for a changed
Deployment, the next ordinal of a StatefulSet, a DaemonSet's pod for its first node that has none.
When the workload already has every pod it wants, the next pod is the one a scale-up by one makes.
Nothing is scheduled here: the pod is then explained like any manifest.
"""

from __future__ import annotations

import msgspec

from kubesched.api.controllers import DaemonSet
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.workloads import WorkloadObject
from kubesched.cluster.memory import MemoryCluster
from kubesched.errors import InputError
from kubesched.framework.node_info import pod_key
from kubesched.simulate.workloads import WorkloadControllers, with_room_for_controllers

__all__ = ["next_pod"]


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
