"""GangScheduling: the native all-or-nothing scheduling of a PodGroup (GenericWorkload, v1.37).

Pods join a `scheduling.k8s.io` PodGroup through `spec.schedulingGroup.podGroupName`; a PodGroup with
`schedulingPolicy.gang.minCount` is placed only when at least minCount of its pods can be. The plugin
has upstream's three parts:

* PreEnqueue keeps a member out of the queue until its PodGroup exists and, for a gang, until
  minCount of its pods exist;
* PlacementFeasible is asked by the pod-group cycle (scheduler/pod_group_cycle.py) after each pod:
  Wait while minCount may still be reached, Unschedulable once it cannot be, nothing once it is;
* Permit holds each assumed member until minCount of the group are assumed or bound, then allows
  every waiting member at once (5 minutes at most, as upstream).

With CompositePodGroup on, a PodGroup under a CompositePodGroup answers for its whole tree:
PreEnqueue holds its pods until the tree meets quorum with the pods that exist (a composite counts a
child once the child would, and needs `gang.minGroupCount` of them, 1 for a basic composite), Permit
holds them until it does with the pods assumed or bound, then allows every waiting pod of the tree,
and PlacementFeasible counts a composite's placed children against minGroupCount.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.group_forest import EntityKey, ForestLookup, GroupForest, group_key
from kubesched.framework.interfaces import EnqueueExtensions, Handle, PermitPlugin, PreEnqueuePlugin
from kubesched.framework.node_info import pod_key
from kubesched.framework.pod_groups import PodGroupLookup, PodGroupState, min_count, pod_group_of
from kubesched.framework.status import Status

__all__ = ["PERMIT_TIMEOUT_SECONDS", "GangScheduling"]

#: How long members wait at Permit for the rest of their gang (upstream's permitTimeoutDuration).
PERMIT_TIMEOUT_SECONDS = 300.0


class GangScheduling(PreEnqueuePlugin, PermitPlugin, EnqueueExtensions):
    """PreEnqueue, Permit and PlacementFeasible for pods of a gang PodGroup."""

    name: ClassVar[str] = "GangScheduling"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        #: The scheduler's pod-group states; None on a Handle without them (the extender's).
        lookup: object = handle
        self._groups: PodGroupLookup | None = lookup if isinstance(lookup, PodGroupLookup) else None
        self._forest_lookup: ForestLookup | None = lookup if isinstance(lookup, ForestLookup) else None

    def _forest(self) -> GroupForest | None:
        """The hierarchies, None with CompositePodGroup off."""
        return None if self._forest_lookup is None else self._forest_lookup.group_forest()

    def _state(self, namespace: str, name: str) -> PodGroupState | None:
        return None if self._groups is None else self._groups.pod_group_state(namespace, name)

    # ------------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a member until its PodGroup exists and, for a gang, minCount of its pods do."""
        group = pod_group_of(pod)
        if group is None or self._groups is None:
            return None
        state = self._state(*group)
        if state is None or state.pod_group is None:
            return Status.unschedulable_and_unresolvable(
                f'waiting for pods\'s pod group "{group[1]}" to appear in scheduling queue'
            )
        parent = state.pod_group.spec.parent_composite_pod_group_name
        forest = self._forest()
        if forest is not None and parent is not None:
            return self._tree_ready(forest, EntityKey(True, group[0], parent), _all_pods)
        gang = state.pod_group.spec.scheduling_policy.gang
        if gang is None or state.all_pods_count() >= gang.min_count:
            return None
        return Status.unschedulable_and_unresolvable(
            "waiting for minCount pods from a gang to appear in scheduling queue"
        )

    def _tree_ready(
        self, forest: GroupForest, parent: EntityKey, count: _Count, *, waiting: bool = False
    ) -> Status | None:
        """upstream's checkCPGHierarchyReadiness from composite `parent`: None once its root's tree
        meets quorum by `count`; else why not (PreEnqueue's texts; Permit's when `waiting`)."""
        root = forest.root(parent)
        if root is None:
            text = "failed to build hierarchy snapshot: composite pod group object not found in state for "
            text += str(parent)
            return Status.as_error(text) if waiting else Status.unschedulable_and_unresolvable(text)
        if _ready(forest, root, count):
            return None
        text = f'waiting for composite pod group "{root.name}" tree to meet quorum'
        return Status.wait(text) if waiting else Status.unschedulable_and_unresolvable(text)

    # ------------------------------------------------------------------ Permit
    def permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> Status | tuple[Status | None, float] | None:
        """Wait until minCount members are assumed or bound; the member that completes the quorum
        allows every waiting one. A waiting member wakes its unscheduled siblings."""
        group = pod_group_of(pod)
        if group is None or self._groups is None:
            return None
        pg_state = self._state(*group)
        if pg_state is None or pg_state.pod_group is None:
            namespace, name = group
            missing = f'podgroup.scheduling.k8s.io "{name}" not found'
            return Status.as_error(f"failed to get podGroup {namespace}/{name}: {missing}")
        parent = pg_state.pod_group.spec.parent_composite_pod_group_name
        forest = self._forest()
        if forest is not None and parent is not None:
            return self._permit_tree(forest, EntityKey(True, group[0], parent))
        gang = pg_state.pod_group.spec.scheduling_policy.gang
        if gang is None:
            return None
        handle = self.handle
        if pg_state.scheduled_count() < gang.min_count:
            if handle is not None:
                handle.activate(pg_state.unscheduled_pods())
            return Status.wait(
                "waiting for minCount pods from a gang to be scheduled"
            ), PERMIT_TIMEOUT_SECONDS
        if handle is not None:
            assumed = set(pg_state.assumed_keys())
            for waiting in handle.iterate_waiting_pods():
                if pod_key(waiting.pod) in assumed:
                    waiting.allow(self.name)
        return None

    def _permit_tree(
        self, forest: GroupForest, parent: EntityKey
    ) -> Status | tuple[Status | None, float] | None:
        """upstream's permitPodForHierarchy: wait (waking the tree's unscheduled pods) until the
        root's tree meets quorum by scheduled pods, then allow every assumed pod of the tree."""
        status = self._tree_ready(forest, parent, _scheduled_pods, waiting=True)
        root = forest.root(parent)
        states = [] if root is None else forest.states_under(root)
        handle = self.handle
        if status is not None:
            if status.is_wait() and handle is not None:
                for st in states:
                    handle.activate(st.unscheduled_pods())
            return (status, PERMIT_TIMEOUT_SECONDS) if status.is_wait() else status
        if handle is not None:
            assumed = {k for st in states for k in st.assumed_keys()}
            for waiting in handle.iterate_waiting_pods():
                if pod_key(waiting.pod) in assumed:
                    waiting.allow(self.name)
        return None

    # ------------------------------------------------------------------ PlacementFeasible
    def placement_feasible(
        self, pod_group: PodGroup | CompositePodGroup, scheduled: int, remaining: int
    ) -> Status | None:
        """Whether the gang can still reach minCount with `scheduled` pods placed and `remaining`
        still to try: Unschedulable when it cannot, Wait while it may, None once it has. For a
        composite, children stand for pods and minGroupCount for minCount (upstream's texts keep
        the word minCount)."""
        need = min_count(pod_group) if isinstance(pod_group, PodGroup) else _min_group_count(pod_group)
        if remaining + scheduled < need:
            return Status.unschedulable(
                f"minCount ({need}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
            )
        if scheduled < need:
            return Status.wait(
                f"minCount ({need}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
            )
        return None

    # ------------------------------------------------------------------ EnqueueExtensions
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a new member (pending or bound) may complete the gang; the PodGroup appearing,
        or its minCount decreasing, may let it be placed."""
        if self._forest() is not None:
            pod_add, group, update = (
                self._same_tree_pod,
                self._same_tree_group,
                self._tree_min_count_decreased,
            )
            return [
                ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD), pod_add),
                ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD), pod_add),
                ClusterEventWithHint(ClusterEvent(Resource.SCHEDULING_POD_GROUP, ActionType.ADD), group),
                ClusterEventWithHint(ClusterEvent(Resource.SCHEDULING_POD_GROUP, ActionType.UPDATE), update),
                ClusterEventWithHint(
                    ClusterEvent(Resource.SCHEDULING_COMPOSITE_POD_GROUP, ActionType.ADD), group
                ),
            ]
        return [
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD), _same_group_pod),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD), _same_group_pod),
            ClusterEventWithHint(ClusterEvent(Resource.SCHEDULING_POD_GROUP, ActionType.ADD), _own_pod_group),
            ClusterEventWithHint(
                ClusterEvent(Resource.SCHEDULING_POD_GROUP, ActionType.UPDATE), _min_count_decreased
            ),
        ]

    # upstream's areSameHierarchy hints: the pod's group and the changed object share a root.
    def _same_root(self, pod: Pod, other: EntityKey) -> bool:
        group = pod_group_of(pod)
        forest = self._forest()
        if group is None or forest is None:
            return False
        mine = forest.root(EntityKey(False, *group))
        return mine is not None and mine == forest.root(other)

    def _same_tree_pod(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        added = pod_group_of(new) if isinstance(new, Pod) else None
        if added is None:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if self._same_root(pod, EntityKey(False, *added)) else QueueingHint.SKIP

    def _same_tree_group(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PodGroup | CompositePodGroup):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if self._same_root(pod, group_key(new)) else QueueingHint.SKIP

    def _tree_min_count_decreased(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if self._same_tree_group(pod, old, new) == QueueingHint.SKIP or not isinstance(old, PodGroup):
            return QueueingHint.SKIP
        assert isinstance(new, PodGroup)
        before, after = old.spec.scheduling_policy.gang, new.spec.scheduling_policy.gang
        if before is None or after is None or after.min_count >= before.min_count:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


_Count = Callable[[PodGroupState], int]


def _all_pods(state: PodGroupState) -> int:
    return state.all_pods_count()


def _scheduled_pods(state: PodGroupState) -> int:
    return state.scheduled_count()


def _min_group_count(composite: CompositePodGroup) -> int:
    gang = composite.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_group_count


def _ready(forest: GroupForest, key: EntityKey, count: _Count) -> bool:
    """upstream's isCPGTreeReady / isPGReady: a PodGroup once `count` reaches its minCount, a
    composite once minGroupCount of its children are ready."""
    obj = forest.get(key)
    if obj is None:
        return False
    if isinstance(obj, PodGroup):
        states = forest.states_under(key)
        return bool(states) and count(states[0]) >= min_count(obj)
    ready = sum(_ready(forest, child, count) for child in forest.children(key))
    return ready >= _min_group_count(obj)


def _same_group_pod(pod: Pod, old: Any, new: Any) -> QueueingHint:
    group = pod_group_of(pod)
    if group is None or not isinstance(new, Pod):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if pod_group_of(new) == group else QueueingHint.SKIP


def _is_own(pod: Pod, pod_group: Any) -> bool:
    group = pod_group_of(pod)
    return (
        group is not None
        and isinstance(pod_group, PodGroup)
        and ((pod_group.metadata.namespace or "default"), pod_group.metadata.name) == group
    )


def _own_pod_group(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if _is_own(pod, new) else QueueingHint.SKIP


def _min_count_decreased(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if not _is_own(pod, new) or not isinstance(old, PodGroup):
        return QueueingHint.SKIP
    before, after = old.spec.scheduling_policy.gang, new.spec.scheduling_policy.gang
    if before is None or after is None or after.min_count >= before.min_count:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE
