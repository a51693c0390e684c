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

from collections.abc import Iterable
from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.api.scheduling_groups import (
    COMPOSITE_POD_GROUP_KEY,
    POD_GROUP_KEY,
    WORKLOAD_KEY,
    CompositePodGroup,
    PodGroup,
    Workload,
)
from kubesched.framework.node_info import pod_key

__all__ = ["GroupKey", "SchedulingGroups", "pod_group_of"]

#: (namespace, name) of a group object.
GroupKey = tuple[str, str]

SchedulingObject = Workload | PodGroup | CompositePodGroup


def pod_group_of(pod: Pod) -> GroupKey | None:
    """(namespace, PodGroup name) the pod belongs to, or None for a pod scheduled on its own."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return (pod.metadata.namespace or "default", group.pod_group_name)


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
