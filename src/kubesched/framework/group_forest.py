"""CompositePodGroup hierarchies (the CompositePodGroup gate): upstream's workload forest.

A PodGroup or a CompositePodGroup may name a parent composite in `spec.parentCompositePodGroupName`
(in its own namespace). The root of such a tree is what the scheduler queues, places and preempts
for as one entity: a pod of any PodGroup under a composite is scheduled with every other pending
pod of the tree. `GroupForest` answers the walks upstream's queue, cache and plugins make over
`SchedulingGroups`: a group's root, a composite's children and its tree, and the PodGroup states
under any key. A parent that does not exist (yet) leaves its children without a root; a cycle of
parents has none either.

A tree lists a composite's children in the order the objects arrived, the PodGroups before the
composites; the algorithm tries them in upstream's order (`GroupNode.trial_order`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple, Protocol, runtime_checkable

from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.pod_groups import PodGroupState, SchedulingGroups

__all__ = ["EntityKey", "ForestLookup", "GroupForest", "GroupNode", "group_key"]

#: upstream's WorkloadMaxTreeDepth: deeper hierarchies are not walked.
MAX_TREE_DEPTH = 4


class EntityKey(NamedTuple):
    """A PodGroup or CompositePodGroup by kind, namespace and name (upstream's EntityKey)."""

    composite: bool
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = "compositepodgroup" if self.composite else "podgroup"
        return f"{kind}/{self.namespace}/{self.name}"


def group_key(obj: PodGroup | CompositePodGroup) -> EntityKey:
    return EntityKey(
        isinstance(obj, CompositePodGroup), obj.metadata.namespace or "default", obj.metadata.name
    )


@dataclass(slots=True)
class GroupNode:
    """One group of a tree: a leaf PodGroup or a composite with its children."""

    key: EntityKey
    pod_group: PodGroup | None = None
    composite: CompositePodGroup | None = None
    children: list[GroupNode] = field(default_factory=list)

    @property
    def obj(self) -> PodGroup | CompositePodGroup:
        found = self.composite if self.composite is not None else self.pod_group
        assert found is not None
        return found

    def walk(self) -> list[GroupNode]:
        """This node and every node under it, parents before children."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out

    def leaves(self) -> list[GroupNode]:
        """The PodGroups of the tree, in the order their composites list them."""
        return [n for n in self.walk() if n.pod_group is not None]

    def trial_order(self) -> list[GroupNode]:
        """The children in the order upstream's algorithm tries them (PodGroupInfo.GetChildGroups):
        the oldest `creationTimestamp` first, equal ones by name. Fixed, not random: which child
        meets the room first decides whether a tree fits."""
        return sorted(self.children, key=lambda c: (_created(c.obj), c.key.name))


_ZERO = datetime.min.replace(tzinfo=UTC)


def _created(obj: PodGroup | CompositePodGroup) -> datetime:
    """`creationTimestamp` as a time; unset (or unreadable) is Go's zero time, before any other."""
    stamp = obj.metadata.creation_timestamp
    if not stamp:
        return _ZERO
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return _ZERO
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class GroupForest:
    """The hierarchies of the groups in `groups`; `assumed(pod_key)` tells assumed pods."""

    def __init__(self, groups: SchedulingGroups, assumed: Callable[[str], bool]) -> None:
        self.groups = groups
        self._assumed = assumed

    def get(self, key: EntityKey) -> PodGroup | CompositePodGroup | None:
        if key.composite:
            return self.groups.composite_pod_group(key.namespace, key.name)
        return self.groups.pod_group(key.namespace, key.name)

    def parent(self, key: EntityKey) -> EntityKey | None:
        """The composite `key` names as its parent (None: a root, or unknown)."""
        obj = self.get(key)
        name = None if obj is None else obj.spec.parent_composite_pod_group_name
        return None if name is None else EntityKey(True, key.namespace, name)

    def root(self, key: EntityKey) -> EntityKey | None:
        """The top of `key`'s tree; None when `key` or an ancestor is missing, or on a cycle."""
        seen: set[EntityKey] = set()
        current = key
        while True:
            if current in seen or self.get(current) is None:
                return None
            seen.add(current)
            parent = self.parent(current)
            if parent is None:
                return current
            current = parent

    def ancestry(self, key: EntityKey) -> list[tuple[EntityKey, PodGroup | CompositePodGroup]]:
        """`key`'s group, then its parent, and so on up (upstream's TraverseHierarchyUp): at most
        MAX_TREE_DEPTH groups, ending before a group that does not exist or one met twice."""
        out: list[tuple[EntityKey, PodGroup | CompositePodGroup]] = []
        seen: set[EntityKey] = set()
        current: EntityKey | None = key
        while current is not None and len(out) < MAX_TREE_DEPTH and current not in seen:
            obj = self.get(current)
            if obj is None:
                break
            seen.add(current)
            out.append((current, obj))
            name = obj.spec.parent_composite_pod_group_name
            current = None if name is None else EntityKey(True, current.namespace, name)
        return out

    def children(self, key: EntityKey) -> list[EntityKey]:
        """The groups naming composite `key` as parent: PodGroups, then composites, each in arrival order."""
        if not key.composite:
            return []
        pod_groups, composites = self.groups.children_of(key.namespace, key.name)
        return [*map(group_key, pod_groups), *map(group_key, composites)]

    def tree(self, key: EntityKey) -> GroupNode | None:
        """The tree under `key` with its objects (None when `key` is unknown); a key met twice is
        left out, as upstream leaves out a cycle."""
        seen: set[EntityKey] = set()

        def build(k: EntityKey) -> GroupNode | None:
            obj = self.get(k)
            if obj is None or k in seen:
                return None
            seen.add(k)
            if isinstance(obj, PodGroup):
                return GroupNode(k, pod_group=obj)
            node = GroupNode(k, composite=obj)
            node.children = [c for child in self.children(k) if (c := build(child)) is not None]
            return node

        return build(key)

    def states_under(self, key: EntityKey) -> list[PodGroupState]:
        """The states of the PodGroups at or under `key` (upstream's GetPodGroupStates walk)."""
        out: list[PodGroupState] = []

        def walk(k: EntityKey, depth: int) -> None:
            if depth >= MAX_TREE_DEPTH:
                return
            if k.composite:
                for child in self.children(k):
                    walk(child, depth + 1)
                return
            state = self.groups.state(k.namespace, k.name, self._assumed)
            if state is not None:
                out.append(state)

        walk(key, 0)
        return out


@runtime_checkable
class ForestLookup(Protocol):
    """What a plugin's Handle offers when hierarchies are on: the forest, None with the
    CompositePodGroup gate off (every PodGroup is then a root of its own)."""

    def group_forest(self) -> GroupForest | None: ...
