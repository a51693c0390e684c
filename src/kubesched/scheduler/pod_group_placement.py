"""The placement phase of the pod-group cycle (upstream's podGroupSchedulingDefaultAlgorithm).

Given a group's members in upstream's order, it tries each one with the earlier ones assumed and
reserved, asks GangScheduling's PlacementFeasible after each whether minCount can still be reached,
and stops as soon as it cannot. Whatever it assumed is undone before it returns: the pod-group
cycle (pod_group_cycle.py) assumes the winners again when it submits the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FitError, QueuedPodInfo
from kubesched.scheduler.attempt import ScheduleResult
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.failures import as_fit_status
from kubesched.scheduler.schedule_one import CycleError, with_node_name

__all__ = [
    "GANG_SCHEDULING",
    "POD_GROUP_UNSCHEDULABLE",
    "GroupPlacer",
    "PodGroupUnschedulable",
    "PodResult",
    "PodTrial",
]

GANG_SCHEDULING = "GangScheduling"
#: Upstream's errPodGroupUnschedulable: the first reason of a group-wide rejection.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"


class PodTrial(Protocol):
    """What the pod-group cycle needs of the single-pod cycle (SchedulingCycle)."""

    def skipped(self, fwk: Framework, qpi: QueuedPodInfo) -> bool:
        """Whether a popped pod is gone, assumed or being deleted (then its cycle is over)."""
        ...

    def schedule_pod(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo) -> ScheduleResult:
        """Filter and score one pod; raises FitError (no node) or CycleError (an error)."""
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


class PodGroupUnschedulable(Exception):
    """errPodGroupUnschedulable: its text leads the reasons of a group-wide rejection."""

    def __str__(self) -> str:
        return POD_GROUP_UNSCHEDULABLE


class GroupPlacer:
    """Tries a group's members on the cluster, all or nothing, over the single-pod cycle."""

    def __init__(self, *, trial: PodTrial, cache: Cache) -> None:
        self._trial = trial
        self._cache = cache

    def run(
        self, fwk: Framework, pod_group: PodGroup, members: list[QueuedPodInfo], scheduled: int
    ) -> tuple[list[PodResult], Status | None]:
        """The members' results in order (fewer when the trial stopped early) and the group's
        status (None: placeable). `scheduled` counts the group's pods already assumed or bound."""
        results: list[PodResult] = []
        undo: list[tuple[CycleState, Pod, str, str]] = []
        remaining = len(members)
        try:
            status = self._feasible(fwk, pod_group, scheduled, remaining)
            if status is not None and status.code == Code.ERROR:
                return results, _error(f"failed to evaluate placement feasibility: {status.message()}")
            if status is not None and status.code == Code.UNSCHEDULABLE:
                return results, _unschedulable(status)
            any_scheduled = False
            for m in members:
                state = CycleState()
                try:
                    chosen = self._trial.schedule_pod(fwk, state, m)
                except FitError as fit:
                    res = PodResult(m, state, Status(Code.UNSCHEDULABLE, error=fit), fit=fit)
                except CycleError as err:
                    res = PodResult(m, state, err.status)
                else:
                    res = PodResult(m, state, None, chosen)
                    assumed = with_node_name(m.pod, chosen.node)
                    self._cache.assume_pod(m.pod_info.with_pod(assumed), chosen.node)
                    reserved = fwk.run_reserve(state, assumed, chosen.node)
                    if reserved is not None:
                        fwk.run_unreserve(state, assumed, chosen.node)
                        self._cache.forget_pod(m.key)
                        res.status = as_fit_status(reserved)
                    else:
                        undo.append((state, assumed, chosen.node, m.key))
                results.append(res)
                if res.status is not None and not res.status.is_rejected():
                    return results, _error(
                        f"failed to schedule other pod from a pod group: {res.status.message()}"
                    )
                remaining -= 1
                scheduled += res.status is None
                status = self._feasible(fwk, pod_group, scheduled, remaining)
                if status is not None and status.code == Code.ERROR:
                    return results, _error(f"failed to evaluate placement feasibility: {status.message()}")
                if status is not None and status.code == Code.UNSCHEDULABLE:
                    return results, status
                any_scheduled = any_scheduled or res.status is None
            if status is not None and status.is_wait():
                return results, _unschedulable(status)
            if not any_scheduled:
                return results, Status(Code.UNSCHEDULABLE, error=PodGroupUnschedulable())
            return results, None
        finally:
            for state, assumed, node, key in reversed(undo):
                fwk.run_unreserve(state, assumed, node)
                self._cache.forget_pod(key)

    def _feasible(self, fwk: Framework, pod_group: PodGroup, scheduled: int, remaining: int) -> Status | None:
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


def _unschedulable(status: Status) -> Status:
    """A Wait (or early Unschedulable) of PlacementFeasible turned into the group's rejection."""
    out = Status(Code.UNSCHEDULABLE, *status.reasons, error=PodGroupUnschedulable())
    out.plugin = status.plugin
    return out


def _error(message: str) -> Status:
    return Status.as_error(message)
