"""The registry of every kind the object model knows: `KINDS` by `kind`, and the `KubeObject` union."""

from __future__ import annotations

import msgspec

from kubesched.api.cluster_objects import Namespace, PodDisruptionBudget, PriorityClass, Service
from kubesched.api.controllers import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.objects import Node, Pod
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

#: Every kind the object model knows, by `kind`.
KINDS: dict[str, type[msgspec.Struct]] = {
    "Pod": Pod,
    "Node": Node,
    "Namespace": Namespace,
    "PriorityClass": PriorityClass,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "CSIStorageCapacity": CSIStorageCapacity,
    "PodDisruptionBudget": PodDisruptionBudget,
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "Deployment": Deployment,
    "DaemonSet": DaemonSet,
    "Job": Job,
    "CronJob": CronJob,
    "PodGroup": PodGroup,
}

KubeObject = (
    Pod
    | Node
    | Namespace
    | PriorityClass
    | PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | PodDisruptionBudget
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
    | Deployment
    | DaemonSet
    | Job
    | CronJob
    | PodGroup
)
