"""The placement phase of the pod-group cycle (upstream's pod-group scheduling algorithms).

The default algorithm (podGroupSchedulingDefaultAlgorithm) tries a group's members in upstream's
order, each with the earlier ones assumed and reserved, asks GangScheduling's PlacementFeasible after
each whether minCount can still be reached, and stops as soon as it cannot.

With TopologyAwareWorkloadScheduling on (podGroupSchedulingPlacementAlgorithm), the profile's
PlacementGenerate plugin first proposes placements (node subsets: one per rack, say); the default
algorithm runs in each alone, its work undone before the next; the PlacementScore plugins rank the
placements where the group fitted and the best one wins (ties at random, as upstream). When it
fitted nowhere, the first placement's outcome stands, under `0/N placements are available, first
placement status: ...`. The placements are tried in an order drawn from the run's seed: upstream's
is a Go map's, random.

Whatever a trial assumed is undone before `run` returns: the pod-group cycle (pod_group_cycle.py)
assumes the winners again when it submits the outcome.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import POD_GROUP_CYCLE_KEY, CycleState, PodGroupCycleState
from kubesched.framework.node_table import NodeSet
from kubesched.framework.placement import Placement, PodGroupAssignments, ProposedAssignment
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FitError, QueuedPodInfo
from kubesched.scheduler.attempt import ScheduleResult
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.failures import as_fit_status
from kubesched.scheduler.pod_group_post_filter import NominationHold
from kubesched.scheduler.schedule_one import CycleError, with_node_name

__all__ = [
    "GANG_SCHEDULING",
    "POD_GROUP_UNSCHEDULABLE",
    "GroupPlacer",
    "PodGroupUnschedulable",
    "PodResult",
    "PodTrial",
    "Trial",
    "Undo",
    "as_error",
    "proposed",
    "unschedulable",
]

GANG_SCHEDULING = "GangScheduling"
#: Upstream's errPodGroupUnschedulable: the first reason of a group-wide rejection.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"


T = TypeVar("T")

#: An assumed member to undo: its cycle state, the pod as assumed, its node and key.
Undo = tuple[CycleState, Pod, str, str]


class PodTrial(Protocol):
    """What the pod-group cycle needs of the single-pod cycle (SchedulingCycle)."""

    def skipped(self, fwk: Framework, qpi: QueuedPodInfo) -> bool:
        """Whether a popped pod is gone, assumed or being deleted (then its cycle is over)."""
        ...

    def schedule_pod(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, placement: NodeSet | None = None
    ) -> ScheduleResult:
        """Filter and score one pod within `placement` (None: every node); raises FitError (no
        node) or CycleError (an error)."""
        ...

    def assume_and_reserve(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult, started: float
    ) -> None:
        """Assume, Reserve and Permit the pod on its node, then start its binding cycle."""
        ...


@dataclass(slots=True)
class PodResult:
    """One member's outcome in the trial: its node (`result`) or why not (`status`, `fit`)."""

    qpi: QueuedPodInfo
    state: CycleState
    status: Status | None  # None: placed
    result: ScheduleResult | None = None
    fit: FitError | None = None


@dataclass(slots=True)
class Trial:
    """The default algorithm's outcome in one placement."""

    results: list[PodResult]
    status: Status | None
    #: Whether a member was placed (upstream's anyScheduled).
    any_scheduled: bool
    #: The placement's CycleState (what PlacementScore plugins are given for it).
    state: CycleState


class PodGroupUnschedulable(Exception):
    """errPodGroupUnschedulable: its text leads the reasons of a group-wide rejection."""

    def __str__(self) -> str:
        return POD_GROUP_UNSCHEDULABLE


class GroupPlacer:
    """Tries a group's members on the cluster, all or nothing, over the single-pod cycle."""

    def __init__(
        self,
        *,
        trial: PodTrial,
        cache: Cache,
        topology: bool,
        rng: random.Random,
        nominations: NominationHold | None = None,
    ) -> None:
        self._trial = trial
        self._cache = cache
        #: Sets an assumed member's nomination aside until its assume is undone (as upstream's assume).
        self._nominations = nominations if nominations is not None else NominationHold(None)
        #: TopologyAwareWorkloadScheduling: try the group in each generated placement.
        self._topology = topology
        #: Draws the order placements are tried in and breaks ties between the best ones (upstream's
        #: are random too).
        self._rng = rng

    def run(
        self,
        fwk: Framework,
        pod_group: PodGroup,
        members: list[QueuedPodInfo],
        scheduled: int,
        group_cycle: PodGroupCycleState | None = None,
    ) -> tuple[list[PodResult], Status | None]:
        """The members' results in order (fewer when the trial stopped early) and the group's
        status (None: placeable). `scheduled` counts the group's pods already assumed or bound;
        `group_cycle` is the cycle's shared state (a new one when not given)."""
        if group_cycle is None:
            group_cycle = PodGroupCycleState()
        if self._topology:
            trial = self.placements(fwk, pod_group, members, scheduled, group_cycle)
        else:
            trial = self._default(fwk, pod_group, members, scheduled, None, group_cycle)
        if trial.status is None and not trial.any_scheduled:
            # upstream requires at least one pod placed in this cycle to call it a success
            return trial.results, Status(Code.UNSCHEDULABLE, error=PodGroupUnschedulable())
        return trial.results, trial.status

    def placements(
        self,
        fwk: Framework,
        pod_group: PodGroup,
        members: list[QueuedPodInfo],
        scheduled: int,
        group_cycle: PodGroupCycleState,
        parent: NodeSet | None = None,
    ) -> Trial:
        """podGroupSchedulingPlacementAlgorithm: the default algorithm in each placement generated
        within `parent` (None: every node); nothing it assumed is left assumed."""
        group_state = CycleState()
        table = self._cache.snapshot()
        placements, status = fwk.placements.generate(group_state, pod_group, parent or table.all())
        if status is not None:
            return Trial([], status, False, CycleState())
        placements = self.shuffled(placements)
        first: Trial | None = None
        feasible: list[tuple[Placement, Trial]] = []
        for placement in placements:
            nodes = None if len(placement.nodes) == len(table) else placement.nodes
            trial = self._default(fwk, pod_group, members, scheduled, nodes, group_cycle)
            if trial.status is not None and trial.status.code == Code.ERROR:
                return trial
            first = first or trial
            if trial.status is None:
                feasible.append((placement, trial))
        if not feasible:
            assert first is not None and first.status is not None
            text = f"0/{len(placements)} placements are available, first placement status: "
            text += as_error(first.status)
            first.status = Status(Code.UNSCHEDULABLE, text, error=PodGroupUnschedulable())
            return first
        if len(feasible) == 1:
            return feasible[0][1]
        assignments = [
            PodGroupAssignments(placement, proposed(trial.results)) for placement, trial in feasible
        ]
        states = [trial.state for _, trial in feasible]
        chosen = self.best(fwk, group_state, pod_group, assignments, states)
        if isinstance(chosen, Status):
            return Trial([], chosen, False, CycleState())
        return feasible[chosen][1]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """Upstream's placements come out of a Go map: their order, and with it which placement's
        failure a message quotes, is random. The run's seeded RNG draws it here."""
        out = list(items)
        if len(out) > 1:
            self._rng.shuffle(out)
        return out

    def best(
        self,
        fwk: Framework,
        group_state: CycleState,
        group: PodGroup | CompositePodGroup,
        assignments: list[PodGroupAssignments],
        states: list[CycleState],
    ) -> int | Status:
        """upstream's findBestPlacement: the index of the best-scored placement (ties at random),
        or the PlacementScore plugins' error."""
        totals, status = fwk.placements.score(group_state, group, assignments, states)
        if status is not None:
            return status
        top_score = max(totals)
        top = [i for i, total in enumerate(totals) if total == top_score]
        return top[0] if len(top) == 1 else top[self._rng.randrange(len(top))]

    def assume(self, fwk: Framework, results: list[PodResult], undo: list[Undo]) -> Status | None:
        """Assume and reserve again the members a trial placed (upstream's assumeSubtreeWithRevert
        for one PodGroup), adding to `undo`; the reservation's failure, if one fails."""
        for res in results:
            if res.status is None and res.result is not None:
                failed = self._assume(fwk, res.qpi, res.state, res.result, undo)
                if failed is not None:
                    return failed
        return None

    def revert(self, fwk: Framework, undo: list[Undo]) -> None:
        """Undo assumes in reverse order, emptying `undo`."""
        for state, assumed, node, key in reversed(undo):
            fwk.run_unreserve(state, assumed, node)
            self._cache.forget_pod(key)
            self._nominations.release(key)
        undo.clear()

    def _assume(
        self, fwk: Framework, m: QueuedPodInfo, state: CycleState, chosen: ScheduleResult, undo: list[Undo]
    ) -> Status | None:
        """Assume `m` on its node and run Reserve; a failed Reserve is undone at once."""
        assumed = with_node_name(m.pod, chosen.node)
        self._cache.assume_pod(m.pod_info.with_pod(assumed), chosen.node)
        reserved = fwk.run_reserve(state, assumed, chosen.node)
        if reserved is not None:
            fwk.run_unreserve(state, assumed, chosen.node)
            self._cache.forget_pod(m.key)
            return reserved
        undo.append((state, assumed, chosen.node, m.key))
        self._nominations.hold(m.pod_info)
        return None

    def _default(
        self,
        fwk: Framework,
        pod_group: PodGroup,
        members: list[QueuedPodInfo],
        scheduled: int,
        placement: NodeSet | None,
        group_cycle: PodGroupCycleState,
    ) -> Trial:
        """podGroupSchedulingDefaultAlgorithm within `placement` (None: every node)."""
        results: list[PodResult] = []
        undo: list[Undo] = []
        remaining = len(members)
        placement_state = CycleState()
        try:
            status = self.feasible(fwk, pod_group, scheduled, remaining)
            if status is not None and status.code == Code.ERROR:
                error = _error(f"failed to evaluate placement feasibility: {status.message()}")
                return Trial(results, error, False, placement_state)
            if status is not None and status.code == Code.UNSCHEDULABLE:
                return Trial(results, unschedulable(status), False, placement_state)
            any_scheduled = False
            for m in members:
                state = CycleState()
                state.write(POD_GROUP_CYCLE_KEY, group_cycle)
                try:
                    chosen = self._trial.schedule_pod(fwk, state, m, placement)
                except FitError as fit:
                    res = PodResult(m, state, Status(Code.UNSCHEDULABLE, error=fit), fit=fit)
                except CycleError as err:
                    res = PodResult(m, state, err.status)
                else:
                    res = PodResult(m, state, None, chosen)
                    reserved = self._assume(fwk, m, state, chosen, undo)
                    if reserved is not None:
                        res.status = as_fit_status(reserved)
                results.append(res)
                if res.status is not None and not res.status.is_rejected():
                    error = _error(f"failed to schedule other pod from a pod group: {res.status.message()}")
                    return Trial(results, error, False, placement_state)
                remaining -= 1
                scheduled += res.status is None
                status = self.feasible(fwk, pod_group, scheduled, remaining)
                if status is not None and status.code == Code.ERROR:
                    error = _error(f"failed to evaluate placement feasibility: {status.message()}")
                    return Trial(results, error, False, placement_state)
                if status is not None and status.code == Code.UNSCHEDULABLE:
                    return Trial(results, status, False, placement_state)
                any_scheduled = any_scheduled or res.status is None
            if status is not None and status.is_wait():
                return Trial(results, unschedulable(status), False, placement_state)
            return Trial(results, None, any_scheduled, placement_state)
        finally:
            self.revert(fwk, undo)

    def feasible(
        self, fwk: Framework, pod_group: PodGroup | CompositePodGroup, scheduled: int, remaining: int
    ) -> Status | None:
        """GangScheduling's PlacementFeasible (upstream's only such plugin), when the profile has it."""
        plugin: Any = fwk.plugins.get(GANG_SCHEDULING)
        if plugin is None or not hasattr(plugin, "placement_feasible"):
            return None
        try:
            status: Status | None = plugin.placement_feasible(pod_group, scheduled, remaining)
        except Exception as exc:  # a plugin's bug is an Error status, as everywhere
            return Status.as_error(f"running PlacementFeasible plugin: {exc}")
        if status is None or status.is_success():
            return None
        status.with_plugin(GANG_SCHEDULING)
        if status.is_wait() or status.code == Code.UNSCHEDULABLE or status.code == Code.ERROR:
            return status
        return Status.as_error(f"unexpected status from PlacementFeasible plugin: {status.code}")


def proposed(results: list[PodResult]) -> tuple[ProposedAssignment, ...]:
    """upstream's makeProposedAssignments: the members a trial placed, with their nodes."""
    return tuple(
        ProposedAssignment(r.qpi.pod, r.result.node, r.state)
        for r in results
        if r.status is None and r.result is not None
    )


def unschedulable(status: Status) -> Status:
    """A Wait (or early Unschedulable) of PlacementFeasible turned into the group's rejection."""
    out = Status(Code.UNSCHEDULABLE, *status.reasons, error=PodGroupUnschedulable())
    out.plugin = status.plugin
    return out


def as_error(status: Status) -> str:
    """upstream's Status.AsError() text: the error when there is one, else the reasons."""
    return str(status.error) if status.error is not None else status.message()


def _error(message: str) -> Status:
    return Status.as_error(message)
