"""What a running pod is evicted as, and at what priority, when preemption weighs it (GenericWorkload on).

As upstream's GetPodPriority and getHighestAllAncestor (framework/preemption/util.go, types.go): a
pod of a PodGroup is weighed at its tree's priority, not its own PodGroup's. With CompositePodGroup
on, that is the last group reached walking up `parentCompositePodGroupName` (at most four groups,
stopping before a parent that does not exist), the root of a whole tree; with the gate off, its
PodGroup's. It is evicted on its own, or together with every scheduled pod under the highest group
of that walk whose `disruptionMode` is `all` (a composite's rank above a PodGroup's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.group_forest import EntityKey, ForestLookup, GroupForest
from kubesched.framework.interfaces import Handle
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.pod_groups import (
    AssumedNodeLookup,
    PodGroupLookup,
    PodGroupState,
    pod_group_of,
    pod_group_priority,
)
from kubesched.plugins.default_preemption.candidates import Budget, start_time

__all__ = [
    "CrossNodeVictims",
    "GroupVictim",
    "PodUnit",
    "PodUnitFacts",
    "VictimUnits",
    "group_victims",
    "pod_victim_facts",
    "split_by_budgets",
]

#: A running pod's (priority, rank) as a victim of one pod's preemption.
PodUnitFacts = Callable[[PodInfo], tuple[int, int]]


@dataclass(slots=True)
class GroupVictim:
    """What is evicted as one: a pod, or every scheduled pod under a group whose `disruptionMode`
    is `all`."""

    pods: list[PodInfo]
    priority: int
    #: upstream's victimRank: 3 for a CompositePodGroup, 2 for a PodGroup or a pod of one, 1 for a
    #: pod on its own.
    rank: int
    #: The earliest `status.startTime` of its pods (inf: none started).
    start: float
    whole_group: bool = False
    #: A group's pods' nodes (pod key -> node): they may run on other nodes than the one tried.
    homes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodUnit:
    """One running pod as preemption sees it."""

    priority: int
    #: As a victim on its own: 2 for a pod of a pod group (GenericWorkload on), 1 otherwise.
    rank: int
    #: The highest group of its walk up whose `disruptionMode` is `all` (None: evicted alone).
    whole: EntityKey | None = None


class VictimUnits:
    """The pod-group facts of the handle's snapshot that preemption needs about running pods."""

    def __init__(self, handle: Handle) -> None:
        self._lookup = handle if isinstance(handle, PodGroupLookup) else None
        self._forest: GroupForest | None = handle.group_forest() if isinstance(handle, ForestLookup) else None

    def of(self, pi: PodInfo) -> PodUnit:
        group = pod_group_of(pi.pod)
        lookup = self._lookup
        state = lookup.pod_group_state(*group) if lookup is not None and group is not None else None
        if group is None or state is None:  # on its own, or GenericWorkload off
            return PodUnit(pi.priority, 1)
        key = EntityKey(False, *group)
        if self._forest is None:
            chain: list[tuple[EntityKey, PodGroup | CompositePodGroup]] = (
                [] if state.pod_group is None else [(key, state.pod_group)]
            )
        else:
            chain = self._forest.ancestry(key)
        if not chain:
            return PodUnit(pi.priority, 2)
        whole = next((k for k, obj in reversed(chain) if _disrupted_whole(obj)), None)
        return PodUnit(pod_group_priority(chain[-1][1]), 2, whole)

    def states_under(self, key: EntityKey) -> list[PodGroupState]:
        """The PodGroups at or under `key`, as upstream's GetPodGroupStates walks them."""
        if self._forest is not None:
            return self._forest.states_under(key)
        state = None if self._lookup is None else self._lookup.pod_group_state(key.namespace, key.name)
        return [] if state is None else [state]


class CrossNodeVictims:
    """upstream's getCrossNodesVictims: the victims the pods of some nodes make. A pod under a group
    evicted whole brings every scheduled pod under that group along, wherever it runs; each such
    group is gathered once for the snapshot, however many nodes ask for it."""

    def __init__(self, handle: Handle) -> None:
        self.units = VictimUnits(handle)
        self._table = handle.snapshot
        #: The cache's pod index (TopologyPlacementGenerator's lookup): a member's node without a scan.
        self._nodes = handle if isinstance(handle, AssumedNodeLookup) else None
        #: pod key -> (node, pod) over the whole snapshot, built when a group first needs it.
        self._placed: dict[str, tuple[str, PodInfo]] | None = None
        self._wholes: dict[EntityKey, GroupVictim] = {}

    def on(self, infos: Iterable[NodeInfo], below: int) -> list[GroupVictim]:
        """The victims of `infos`' pods of priority below `below` (upstream lists them all, then
        keeps those): each group evicted whole once, in the nodes' pod order."""
        units = self.units
        seen: set[EntityKey] = set()
        out: list[GroupVictim] = []
        for info in infos:
            for pi in info.pods.values():
                unit = units.of(pi)
                if unit.priority >= below:
                    continue
                if unit.whole is None:
                    out.append(GroupVictim([pi], unit.priority, unit.rank, start_time(pi.pod)))
                elif unit.whole not in seen:
                    seen.add(unit.whole)
                    out.append(self._whole(unit.whole, unit.priority, pi, info.name))
        return out

    def _whole(self, key: EntityKey, priority: int, pi: PodInfo, node: str) -> GroupVictim:
        found = self._wholes.get(key)
        if found is not None:
            return found
        homes = {
            k: home
            for state in self.units.states_under(key)
            for p in state.pods
            if (k := pod_key(p)) in state.scheduled and (home := self._home(k)) is not None
        }
        if not homes:
            homes = {pi.key: (node, pi)}
        pods = [p for _, p in homes.values()]
        start = min(start_time(p.pod) for p in pods)
        rank = 3 if key.composite else 2
        victim = GroupVictim(pods, priority, rank, start, True, {k: n for k, (n, _) in homes.items()})
        self._wholes[key] = victim
        return victim

    def _home(self, key: str) -> tuple[str, PodInfo] | None:
        """(node, pod) of scheduled pod `key` in the snapshot: from the cache's pod index when the
        snapshot agrees with it, else by one scan of the snapshot, kept for later members."""
        table = self._table
        node = self._nodes.assumed_node(key) if self._nodes is not None else None
        row = table.index.get(node) if node else None
        found = table.infos[row].pods.get(key) if row is not None else None
        if node is not None and found is not None:
            return node, found
        if self._placed is None:
            self._placed = {k: (info.name, p) for info in table.infos for k, p in info.pods.items()}
        return self._placed.get(key)


def group_victims(handle: Handle, below: int) -> list[GroupVictim]:
    """Every pod on the snapshot of priority below `below` as a possible victim, node by node (a
    group evicted whole once)."""
    return CrossNodeVictims(handle).on(handle.snapshot.infos, below)


def split_by_budgets(
    victims: Sequence[GroupVictim], budgets: Sequence[Budget]
) -> tuple[list[tuple[GroupVictim, int]], list[GroupVictim]]:
    """upstream's FilterVictimsWithPDBViolation: (violating victims with their count of violating
    pods, the others), in order. Budgets are spent pod by pod; a pod violates at the first budget
    it overdraws (later ones are not spent for it); one violating pod makes its whole victim
    violating, as a group cannot be reprieved in part."""
    allowed = [b.allowed for b in budgets]
    violating: list[tuple[GroupVictim, int]] = []
    others: list[GroupVictim] = []
    for v in victims:
        count = 0
        for pi in v.pods:
            labels = pi.pod.metadata.labels
            if not labels:
                continue
            for i, budget in enumerate(budgets):
                if budget.namespace != pi.namespace or not budget.selector.matches(labels):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    count += 1
                    break
        if count:
            violating.append((v, count))
        else:
            others.append(v)
    return violating, others


def pod_victim_facts(handle: Handle) -> PodUnitFacts:
    """(priority, rank) of a pod as a victim of one pod's preemption (upstream's NewPodVictim): with
    GenericWorkload on, a pod of a pod group has its tree's priority and outranks a pod on its own of
    equal priority; otherwise its own priority, rank 1."""
    units = VictimUnits(handle)

    def facts(pi: PodInfo) -> tuple[int, int]:
        unit = units.of(pi)
        return unit.priority, unit.rank

    return facts


def _disrupted_whole(obj: PodGroup | CompositePodGroup) -> bool:
    mode = obj.spec.disruption_mode
    return mode is not None and mode.all is not None
