"""The placement phase for a CompositePodGroup tree (upstream's recursive pod-group algorithm).

With the CompositePodGroup gate on, the root of a tree is placed as one: all or nothing over its
children, each child by its own policy. For a composite (TopologyAwareWorkloadScheduling is
required, so always by placements):

1. the PlacementGenerate plugin proposes placements for the composite inside the nodes its parent's
   placement allows (its own `schedulingConstraints.topology`: one rack per placement, say);
2. in each placement, in turn, the children are placed one after the other, each left assumed
   for the next; GangScheduling's PlacementFeasible counts the children that fitted against the
   composite's `gang.minGroupCount` (1 for a basic composite) and stops the trial once it cannot be
   reached; a child PodGroup is placed as a root PodGroup is, by its own placements (inside the
   composite's), and a child composite recursively;
3. the placements where it fitted are scored (the members placed under it, pooled) and the best
   one's pods are assumed again for the composite's siblings to see.

When it fitted nowhere, the first placement's outcome stands under `0/N placements are available,
first placement status: ...`. Whatever was assumed is undone before `run` returns; the pod-group
cycle assumes the winners again when it submits. The children are tried oldest first, by name
among equals, as upstream's GetChildGroups sorts them; the placements come out of a Go map, so
their order is random, and the run's seeded RNG draws it here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kubesched.framework.cycle_state import CycleState, PodGroupCycleState
from kubesched.framework.group_forest import EntityKey, GroupNode
from kubesched.framework.node_table import NodeSet
from kubesched.framework.placement import PodGroupAssignments, ProposedAssignment
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.pod_group_placement import (
    GroupPlacer,
    PodGroupUnschedulable,
    PodResult,
    Undo,
    as_error,
    proposed,
    unschedulable,
)

__all__ = ["CompositePlacer", "GroupResult", "successful_leaves"]


@dataclass(slots=True)
class GroupResult:
    """One group's outcome in the tree's cycle (upstream's podGroupAlgorithmResult)."""

    node: GroupNode
    #: None: placed. Statuses may be shared by a parent and the children its failure is given to,
    #: as upstream shares them (a reason appended later is appended to the shared one).
    status: Status | None
    any_scheduled: bool = False
    #: A PodGroup's members' results, in the order tried (fewer than its members when it stopped early).
    results: list[PodResult] = field(default_factory=list)
    #: The placement's CycleState (what PlacementScore plugins are given for it).
    state: CycleState = field(default_factory=CycleState)


Results = dict[EntityKey, GroupResult]


def successful_leaves(node: GroupNode, results: Results) -> Iterator[GroupResult]:
    """upstream's successfulLeafResults: the PodGroups under `node` with pods placed whose every
    ancestor within `node` was placed too."""
    res = results.get(node.key)
    if res is None or res.status is not None:
        return
    for child in node.children:
        yield from successful_leaves(child, results)
    if res.results:
        yield res


class CompositePlacer:
    """Places a CompositePodGroup tree, all or nothing, over the PodGroup placer."""

    def __init__(self, *, placer: GroupPlacer, cache: Cache) -> None:
        self._placer = placer
        self._cache = cache

    def run(
        self,
        fwk: Framework,
        root: GroupNode,
        members: dict[EntityKey, list[QueuedPodInfo]],
        scheduled: Callable[[EntityKey], int],
    ) -> Results:
        """Every evaluated group's result (upstream's runRootSchedulingAlgorithm for a composite
        root); nothing stays assumed."""
        results: Results = {}
        walk = _Walk(self._placer, self._cache, fwk, members, scheduled)
        top, undo = walk.composite(root, None, results)
        self._placer.revert(fwk, undo)
        if top.status is None and not top.any_scheduled:
            # upstream requires at least one pod placed in this cycle to call it a success
            top.status = Status(Code.UNSCHEDULABLE, error=PodGroupUnschedulable())
        return results


def complete(root: GroupNode, results: Results) -> None:
    """upstream's completeCompositePodGroupAlgorithmResultMap: a group never evaluated, or placed
    under a parent that failed, takes its parent's status (the same object)."""

    def walk(node: GroupNode, parent: Status | None) -> None:
        res = results.get(node.key)
        if res is None or (parent is not None and res.status is None):
            res = GroupResult(node, parent)
            results[node.key] = res
        for child in node.children:
            walk(child, res.status)

    walk(root, None)


class _Walk:
    """One run's recursion: the framework, the members by PodGroup and their scheduled counts."""

    def __init__(
        self,
        placer: GroupPlacer,
        cache: Cache,
        fwk: Framework,
        members: dict[EntityKey, list[QueuedPodInfo]],
        scheduled: Callable[[EntityKey], int],
    ) -> None:
        self.placer = placer
        self.cache = cache
        self.fwk = fwk
        self.members = members
        self.scheduled = scheduled
        #: upstream's PodGroupCycleState: one per root cycle, shared by every member of the tree.
        self.group_cycle = PodGroupCycleState()

    def child(self, node: GroupNode, nodes: NodeSet, results: Results) -> tuple[GroupResult, list[Undo]]:
        """upstream's podGroupSchedulingRecursiveAlgorithm."""
        if node.pod_group is None:
            return self.composite(node, nodes, results)
        members = self.members.get(node.key, [])
        scheduled = self.scheduled(node.key)
        trial = self.placer.placements(self.fwk, node.pod_group, members, scheduled, self.group_cycle, nodes)
        res = GroupResult(node, trial.status, trial.any_scheduled, trial.results, trial.state)
        results[node.key] = res
        undo: list[Undo] = []
        if trial.status is None:
            failed = self.placer.assume(self.fwk, trial.results, undo)
            if failed is not None:
                self.placer.revert(self.fwk, undo)
                res.status = Status.as_error(f"failed to assume the subtree: {failed.message()}")
        return res, undo

    def composite(
        self, node: GroupNode, nodes: NodeSet | None, results: Results
    ) -> tuple[GroupResult, list[Undo]]:
        """upstream's compositePodGroupSchedulingPlacementAlgorithm: the children in each
        placement of the composite, the best placement's pods left assumed."""
        assert node.composite is not None
        group_state = CycleState()
        parent = nodes if nodes is not None else self.cache.snapshot().all()
        placements, status = self.fwk.placements.generate(group_state, node.composite, parent)
        if status is not None:
            res = GroupResult(node, status)
            results[node.key] = res
            return res, []
        placements = self.placer.shuffled(placements)
        first: Results | None = None
        feasible: list[tuple[int, Results]] = []
        for i, placement in enumerate(placements):
            subtree: Results = {}
            res, undo = self.default(node, placement.nodes, subtree)
            self.placer.revert(self.fwk, undo)
            if res.status is not None and res.status.code == Code.ERROR:
                results[node.key] = res
                return res, []
            first = first if first is not None else subtree
            if res.status is None:
                feasible.append((i, subtree))
        if not feasible:
            assert first is not None
            top = first[node.key]
            assert top.status is not None
            text = f"0/{len(placements)} placements are available, first placement status: "
            text += as_error(top.status)
            top.status = Status(Code.UNSCHEDULABLE, text, error=PodGroupUnschedulable())
            results.update(first)
            return top, []
        chosen = 0
        if len(feasible) > 1:
            assignments = [
                PodGroupAssignments(placements[i], _pooled(node, subtree)) for i, subtree in feasible
            ]
            states = [subtree[node.key].state for _, subtree in feasible]
            best = self.placer.best(self.fwk, group_state, node.composite, assignments, states)
            if isinstance(best, Status):
                res = GroupResult(node, best)
                results[node.key] = res
                return res, []
            chosen = best
        subtree = feasible[chosen][1]
        undo = []
        for leaf in successful_leaves(node, subtree):
            failed = self.placer.assume(self.fwk, leaf.results, undo)
            if failed is not None:
                self.placer.revert(self.fwk, undo)
                res = GroupResult(node, Status.as_error(f"failed to assume the subtree: {failed.message()}"))
                results[node.key] = res
                return res, []
        results.update(subtree)
        return subtree[node.key], undo

    def default(self, node: GroupNode, nodes: NodeSet, results: Results) -> tuple[GroupResult, list[Undo]]:
        """upstream's compositePodGroupSchedulingDefaultAlgorithm in one placement: the children in
        turn, stopped as soon as minGroupCount cannot be reached; undone unless it fitted."""
        assert node.composite is not None
        state = CycleState()
        remaining, placed = len(node.children), 0
        status = self.placer.feasible(self.fwk, node.composite, placed, remaining)
        if status is not None and status.code in (Code.UNSCHEDULABLE, Code.ERROR):
            res = GroupResult(node, status, state=state)
            results[node.key] = res
            return res, []
        any_scheduled = False
        undo: list[Undo] = []
        for child in node.trial_order():
            child_res, child_undo = self.child(child, nodes, results)
            if child_res.status is not None and child_res.status.code == Code.ERROR:
                self.placer.revert(self.fwk, undo)
                text = (
                    f"composite pod group evaluation failed due to child error: {as_error(child_res.status)}"
                )
                res = GroupResult(node, Status.as_error(text), state=state)
                results[node.key] = res
                return res, []
            any_scheduled = any_scheduled or child_res.any_scheduled
            undo.extend(child_undo)
            remaining -= 1
            placed += child_res.status is None
            status = self.placer.feasible(self.fwk, node.composite, placed, remaining)
            if status is not None and status.code in (Code.UNSCHEDULABLE, Code.ERROR):
                break
        if status is not None and status.is_wait():
            status = unschedulable(status)
        res = GroupResult(node, status, any_scheduled, state=state)
        results[node.key] = res
        if status is not None:
            self.placer.revert(self.fwk, undo)
            res.any_scheduled = False
        return res, undo


def _pooled(node: GroupNode, subtree: Results) -> tuple[ProposedAssignment, ...]:
    """upstream's makeCompositePodGroupAssignments: the members placed under `node`, pooled."""
    return tuple(a for leaf in successful_leaves(node, subtree) for a in proposed(leaf.results))
