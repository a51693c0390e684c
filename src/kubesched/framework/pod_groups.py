"""The workload-aware scheduling objects a cluster holds, looked up as the pod-group cycle needs them.

Upstream's scheduler keeps, per PodGroup, the PodGroup object and the pods that name it (its cache's
pod-group states; `snapshot.PodGroups().Get(namespace, name)`). `SchedulingGroups` is that state for
every kind of cluster kubesched runs on (the simulator's MemoryCluster, the live informers, the
extender's cache): PodGroups, CompositePodGroups and Workloads by namespace and name, and the pods of
each PodGroup, in the order they arrived. A pod joins the group its `spec.schedulingGroup.podGroupName`
names in its own namespace, whether or not that PodGroup exists yet (the API allows either order).

It is fed like the scheduler is: `on_pod_add/update/delete` with the pods a cluster delivers, `put`
and `remove` with the group objects. It decides nothing; it only answers lookups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import Condition
from kubesched.api.scheduling_groups import (
    COMPOSITE_POD_GROUP_KEY,
    POD_GROUP_KEY,
    WORKLOAD_KEY,
    CompositePodGroup,
    PodGroup,
    Workload,
)
from kubesched.framework.node_info import pod_key

__all__ = [
    "AssumedNodeLookup",
    "GroupKey",
    "PodGroupLookup",
    "PodGroupState",
    "SchedulingGroups",
    "min_count",
    "pod_group_of",
    "pod_group_priority",
    "with_condition",
]

#: (namespace, name) of a group object.
GroupKey = tuple[str, str]

SchedulingObject = Workload | PodGroup | CompositePodGroup


def pod_group_of(pod: Pod) -> GroupKey | None:
    """(namespace, PodGroup name) the pod belongs to, or None for a pod scheduled on its own."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return (pod.metadata.namespace or "default", group.pod_group_name)


def min_count(pod_group: PodGroup) -> int:
    """The pods a PodGroup needs placed together: its gang's minCount, 1 for a basic group."""
    gang = pod_group.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_count


def pod_group_priority(pod_group: PodGroup | CompositePodGroup) -> int:
    """`spec.priority`, or 0 when unset (a group created without any priority class, as upstream)."""
    return pod_group.spec.priority if pod_group.spec.priority is not None else 0


def with_condition(pod_group: PodGroup, condition: Condition) -> PodGroup:
    """`pod_group` with `condition` in its status, replacing the one of that type (a status patch)."""
    kept = [c for c in pod_group.status.conditions if c.type != condition.type]
    status = msgspec.structs.replace(pod_group.status, conditions=[*kept, condition])
    return msgspec.structs.replace(pod_group, status=status)


class PodGroupState:
    """One PodGroup as the scheduler sees it now (upstream's PodGroupState): its object, if it
    exists yet, and the pods that name it, split into scheduled (assumed or bound) and not.

    Taken for every member's PreEnqueue and Permit, so it works out only what is asked: the
    scheduled split costs a cache lookup per pod, which PreEnqueue never needs, and the pods'
    keys come from the group's table rather than being formatted again.
    """

    __slots__ = ("_assumed", "_members", "_scheduled", "pod_group")

    def __init__(
        self, pod_group: PodGroup | None, members: dict[str, Pod], assumed: Callable[[str], bool]
    ) -> None:
        self.pod_group = pod_group
        #: pod_key -> pod, every pod of the group the scheduler knows, in arrival order (a copy).
        self._members = members
        self._assumed = assumed
        self._scheduled: frozenset[str] | None = None

    @property
    def pods(self) -> tuple[Pod, ...]:
        """Every pod of the group the scheduler knows, in arrival order."""
        return tuple(self._members.values())

    @property
    def scheduled(self) -> frozenset[str]:
        """Keys of the pods assumed in the scheduler's cache or bound to a node."""
        if self._scheduled is None:
            assumed = self._assumed
            self._scheduled = frozenset(k for k, p in self._members.items() if p.spec.node_name or assumed(k))
        return self._scheduled

    def all_pods_count(self) -> int:
        return len(self._members)

    def scheduled_count(self) -> int:
        return len(self.scheduled)

    def unscheduled_pods(self) -> list[Pod]:
        scheduled = self.scheduled
        return [p for k, p in self._members.items() if k not in scheduled]

    def assumed_keys(self) -> list[str]:
        """The scheduled pods not bound yet (waiting at Permit, or binding)."""
        scheduled = self.scheduled
        return [k for k, p in self._members.items() if k in scheduled and not p.spec.node_name]


@runtime_checkable
class PodGroupLookup(Protocol):
    """What a plugin's Handle offers when the scheduler tracks pod groups (upstream's
    PodGroupManager): the state of one PodGroup, None when neither it nor a pod of it is known."""

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None: ...


@runtime_checkable
class AssumedNodeLookup(Protocol):
    """What a plugin's Handle offers to find the node of a pod the scheduler assumed (its
    `nodeName` is not written yet) without scanning every node."""

    def assumed_node(self, pod_key: str) -> str | None: ...


def _key(obj: SchedulingObject) -> GroupKey:
    return (obj.metadata.namespace or "default", obj.metadata.name)


class SchedulingGroups:
    """PodGroups, CompositePodGroups and Workloads by (namespace, name), and each PodGroup's pods."""

    def __init__(self, objects: Iterable[SchedulingObject] = (), pods: Iterable[Pod] = ()) -> None:
        self.pod_groups: dict[GroupKey, PodGroup] = {}
        self.composite_pod_groups: dict[GroupKey, CompositePodGroup] = {}
        self.workloads: dict[GroupKey, Workload] = {}
        #: Group -> pod_key -> the pod as last delivered.
        self._members: dict[GroupKey, dict[str, Pod]] = {}
        for obj in objects:
            self.put(obj)
        for pod in pods:
            self.on_pod_add(pod)

    # ------------------------------------------------------------------ lookups

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self.pod_groups.get((namespace, name))

    def composite_pod_group(self, namespace: str, name: str) -> CompositePodGroup | None:
        return self.composite_pod_groups.get((namespace, name))

    def workload(self, namespace: str, name: str) -> Workload | None:
        return self.workloads.get((namespace, name))

    def pods_of(self, namespace: str, name: str) -> list[Pod]:
        """The pods that name PodGroup `namespace/name`, in the order they arrived."""
        members = self._members.get((namespace, name))
        return list(members.values()) if members else []

    def children_of(self, namespace: str, name: str) -> tuple[list[PodGroup], list[CompositePodGroup]]:
        """The PodGroups and CompositePodGroups whose `parentCompositePodGroupName` is CompositePodGroup
        `namespace/name` (a parent and its children share a namespace), in the order they were put."""
        groups = [
            g
            for (ns, _), g in self.pod_groups.items()
            if ns == namespace and g.spec.parent_composite_pod_group_name == name
        ]
        composites = [
            c
            for (ns, _), c in self.composite_pod_groups.items()
            if ns == namespace and c.spec.parent_composite_pod_group_name == name
        ]
        return groups, composites

    def state(self, namespace: str, name: str, assumed: Callable[[str], bool]) -> PodGroupState | None:
        """PodGroup `namespace/name` and its pods; `assumed(pod_key)` says which pods the scheduler
        has assumed on a node (bound pods count as scheduled by their `nodeName`)."""
        pod_group = self.pod_groups.get((namespace, name))
        members = self._members.get((namespace, name))
        if pod_group is None and not members:
            return None
        return PodGroupState(pod_group, dict(members) if members else {}, assumed)

    def groups_with_pods(self) -> list[GroupKey]:
        """Every group some pod names (its PodGroup may not exist yet), in the order first named."""
        return list(self._members)

    def lister(self, key: str) -> list[Any] | None:
        """The objects `Handle.lister(key)` returns for the group-qualified keys of
        `api.scheduling_groups`; None for any other key."""
        table: dict[str, dict[GroupKey, Any]] = {
            POD_GROUP_KEY: self.pod_groups,
            COMPOSITE_POD_GROUP_KEY: self.composite_pod_groups,
            WORKLOAD_KEY: self.workloads,
        }
        found = table.get(key)
        return None if found is None else list(found.values())

    # ------------------------------------------------------------------ group objects

    def put(self, obj: SchedulingObject) -> None:
        """Add or replace a group object."""
        self._table(obj)[_key(obj)] = obj

    def update(self, old: SchedulingObject, new: SchedulingObject) -> None:
        """An informer's update: `new` replaces `old` (same kind, namespace and name)."""
        self.put(new)

    def remove(self, obj: SchedulingObject) -> None:
        self._table(obj).pop(_key(obj), None)

    def _table(self, obj: SchedulingObject) -> dict[GroupKey, Any]:
        if isinstance(obj, PodGroup):
            return self.pod_groups
        if isinstance(obj, CompositePodGroup):
            return self.composite_pod_groups
        return self.workloads

    # ------------------------------------------------------------------ pods (the cluster's handlers)

    def on_pod_add(self, pod: Pod) -> None:
        group = pod_group_of(pod)
        if group is not None:
            self._members.setdefault(group, {})[pod_key(pod)] = pod

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        if pod_group_of(old) != pod_group_of(new):  # immutable in the API; a replayed edit may change it
            self.on_pod_delete(old)
        self.on_pod_add(new)

    def on_pod_delete(self, pod: Pod) -> None:
        group = pod_group_of(pod)
        members = None if group is None else self._members.get(group)
        if group is None or members is None:
            return
        members.pop(pod_key(pod), None)
        if not members:
            del self._members[group]

    # Nodes do not concern groups; present so a cluster can deliver to this as to any watcher.
    def on_node_add(self, node: Node) -> None:
        pass

    def on_node_update(self, old: Node, new: Node) -> None:
        pass

    def on_node_delete(self, node: Node) -> None:
        pass
