"""Cluster events that move unschedulable pods back to the active queue (upstream's ClusterEvent)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum
from functools import cache
from typing import Any


class ActionType(IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_NODE_DECLARED_FEATURE = 128
    UPDATE_POD_LABEL = 256
    UPDATE_POD_SCALE_DOWN = 512
    UPDATE_POD_TOLERATION = 1024
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 2048
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 4096
    UPDATE = 8188  # every Update* bit
    ALL = 8191

    def label(self) -> str:
        """Upstream's spelling, e.g. `Add`, `UpdateNodeTaint`, `Add|Delete`."""
        return _action_label(int(self))


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
}


class Resource(StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    #: The pending pod itself, updated while it waits (v1.37's TargetPod): only registrations of
    #: TargetPod or Pod see its own changes.
    TARGET_POD = "TargetPod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    POD_GROUP = "scheduling.x-k8s.io/PodGroup"
    #: The native PodGroup of scheduling.k8s.io (GenericWorkload); the line above is scheduler-plugins'.
    SCHEDULING_POD_GROUP = "scheduling.k8s.io/PodGroup"
    #: Its CompositePodGroup (the CompositePodGroup gate).
    SCHEDULING_COMPOSITE_POD_GROUP = "scheduling.k8s.io/CompositePodGroup"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    DEVICE_TAINT_RULE = "resource.k8s.io/DeviceTaintRule"
    WILDCARD = "*"


_POD_KINDS = frozenset({Resource.POD, Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD, Resource.TARGET_POD})


@cache
def _action_label(action: int) -> str:
    """`ActionType.label`, spelled once per value: the queue labels every pod an event moves, and
    flag arithmetic on enum members is slow."""
    if action == ActionType.ALL:
        return "*"
    if action == ActionType.UPDATE:
        return "Update"
    return "|".join(label for a, label in _ACTION_LABELS.items() if int(a) & action)


@cache
def _event_label(resource: Resource, action: int, override: str) -> str:
    """`ClusterEvent.label`, spelled once per event."""
    return override or f"{resource.value.rsplit('/', 1)[-1]}{_action_label(action)}"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: ActionType
    label_override: str = ""

    @property
    def label(self) -> str:
        """Metric/event label, e.g. `NodeAdd`, `AssignedPodDelete`, `UnschedulableTimeout`."""
        return _event_label(self.resource, int(self.action), self.label_override)

    def matches(self, incoming: ClusterEvent) -> bool:
        """Does this registered event cover `incoming`? (resource equal or wildcard, action bits)."""
        if self.resource == Resource.WILDCARD or incoming.resource == Resource.WILDCARD:
            resource_ok = True
        elif self.resource == Resource.POD:
            resource_ok = incoming.resource in _POD_KINDS
        else:
            resource_ok = self.resource == incoming.resource
        return resource_ok and bool(int(self.action) & int(incoming.action))


class QueueingHint(Enum):
    QUEUE = "Queue"
    SKIP = "QueueSkip"


#: A hint function: given the object before and after the event, may this pod now be schedulable?
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


def always_queue(pod: Any, old: Any, new: Any) -> QueueingHint:
    """The hint of a change that may always help (e.g. the pending pod gained a toleration).

    The queue treats a registration without a hint the same way; upstream registers such hints
    explicitly, and kubesched registers them where upstream does so the two tables agree.
    """
    return QueueingHint.QUEUE


@dataclass(frozen=True, slots=True)
class HintIndex:
    """Which pods a hint can queue for an event, by key, so the queue need not ask every pod.

    `event_keys(old, new)` gives the keys one of which a pod must hold for the hint to return
    Queue, or None when any pod may be queued; `pod_keys(pod)` gives the keys a pod holds. The hint
    must return Skip for a pod holding none of the event's keys: the index only spares the queue
    the calls whose answer is known (upstream asks every pod; the requeued pods are the same).
    """

    pod_keys: Callable[[Any], Iterable[Hashable]]
    event_keys: Callable[[Any, Any], Iterable[Hashable] | None]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None
    index: HintIndex | None = None


# Events the scheduler itself raises.
WILDCARD_EVENT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "WildCardEvent")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD)
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
