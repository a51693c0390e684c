"""Pod-group preemption (GenericWorkload on): victims for a whole pod group, chosen cluster-wide.

As upstream's PodGroupEvaluator (framework/preemption/podgrouppreemption.go): every pod of lower
priority than the group is taken off the snapshot at once and the group's algorithm runs again; if
the group then fits, victims are reprieved one by one, most important first (those whose eviction
would break a PodDisruptionBudget before the others), as long as every member the algorithm placed
still passes the filters on its node. What a victim is and its priority: victim_units.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from kubesched.framework.interfaces import Handle
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.placement import ProposedAssignment
from kubesched.framework.pod_group_preemption import (
    GroupPreemptor,
    MutableSnapshot,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from kubesched.framework.pod_groups import pod_group_priority
from kubesched.framework.status import Code, Status
from kubesched.plugins.default_preemption.candidates import Budget, ExtensionError
from kubesched.plugins.default_preemption.executor import terminating_by_preemption
from kubesched.plugins.default_preemption.victim_units import (
    GroupVictim,
    VictimUnits,
    group_victims,
    pod_victim_facts,
    split_by_budgets,
)

__all__ = [
    "NO_VICTIMS_FOR_GROUP",
    "ONGOING",
    "GroupVictim",
    "group_victims",
    "more_important",
    "ongoing",
    "pod_victim_facts",
    "preemption_policy",
    "result_of",
    "select_group_victims",
]

NO_VICTIMS_FOR_GROUP = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
_NEVER = "Never"
_LOWER = "PreemptLowerPriority"


def more_important(a: GroupVictim, b: GroupVictim) -> int:
    """upstream's MoreImportantVictim as a comparison (negative: `a` first): priority, then a group
    before a pod, then more pods, then the earlier start (a pod never started ties with any)."""
    if a.priority != b.priority:
        return -1 if a.priority > b.priority else 1
    if a.rank != b.rank:
        return -1 if a.rank > b.rank else 1
    if len(a.pods) != len(b.pods):
        return -1 if len(a.pods) > len(b.pods) else 1
    if a.start < b.start < float("inf"):
        return -1
    if b.start < a.start < float("inf"):
        return 1
    return 0


_ORDER = functools.cmp_to_key(more_important)


def preemption_policy(preemptor: GroupPreemptor) -> str:
    """The group's policy: the PodGroup's `preemptionPolicy` with PodGroupPreemptionPolicy on,
    otherwise Never as soon as one member says Never."""
    if preemptor.group_policy:
        return preemptor.pod_group.spec.preemption_policy or _LOWER
    if any(p.spec.preemption_policy == _NEVER for p in preemptor.members):
        return _NEVER
    return _LOWER


def select_group_victims(
    handle: Handle,
    preemptor: GroupPreemptor,
    snapshot: MutableSnapshot,
    schedule: PodGroupSchedulingFunc,
    budgets: Sequence[Budget],
) -> tuple[list[GroupVictim], int, dict[str, str]] | Status:
    """The victims to evict (most important first), the PDB violations among them, and where each
    member goes; or why there are none. The snapshot is restored before returning."""
    priority = pod_group_priority(preemptor.pod_group)
    potential = group_victims(handle, priority)
    if not potential:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_FOR_GROUP)
    removed: dict[str, PodInfo] = {}
    try:
        for v in potential:
            for pi in v.pods:
                snapshot.remove_pod(pi)
                removed[pi.key] = pi
        assignments, status = schedule()
        if status is not None and not status.is_success():
            return status
        potential.sort(key=_ORDER)
        violating, non_violating = split_by_budgets(potential, budgets)
        keep = [a for a in assignments if a.node_name]
        chosen: list[GroupVictim] = []
        violations = 0
        for v, count in [*violating, *((v, 0) for v in non_violating)]:
            try:
                reprieved = _reprieve(handle, snapshot, v, keep, removed)
            except ExtensionError as err:
                return Status.as_error(err.status.message())
            if not reprieved:
                chosen.append(v)
                violations += count
        chosen.sort(key=_ORDER)
        return chosen, violations, {pod_key(a.pod): a.node_name for a in keep}
    finally:
        for pi in removed.values():
            snapshot.add_pod(pi)


def ongoing(handle: Handle, preemptor: GroupPreemptor) -> bool:
    """A member's nominated node still has a lower-priority pod terminating by preemption."""
    units = VictimUnits(handle)
    priority = pod_group_priority(preemptor.pod_group)
    table = handle.snapshot
    for node in set(preemptor.nominated.values()):
        row = table.index.get(node)
        if row is None:
            continue
        for pi in table.infos[row].pods.values():
            if units.of(pi).priority < priority and terminating_by_preemption(pi.pod):
                return True
    return False


def _reprieve(
    handle: Handle,
    snapshot: MutableSnapshot,
    victim: GroupVictim,
    assignments: list[ProposedAssignment],
    removed: dict[str, PodInfo],
) -> bool:
    """Put `victim` back and keep it there when every placed member still fits, each assumed on its
    node in turn; otherwise take it off again. The members assumed here are undone."""
    for pi in victim.pods:
        snapshot.add_pod(pi)
        del removed[pi.key]
        _extend(handle, snapshot, pi, assignments, add=True)
    assumed: list[ProposedAssignment] = []
    try:
        for a in assignments:
            info = snapshot.node_info(a.node_name)
            status = (
                handle.run_filter_plugins_with_nominated_pods(a.state, a.pod, info)
                if info is not None
                else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            )
            if status is not None and not status.is_success():
                for pi in victim.pods:
                    snapshot.remove_pod(pi)
                    removed[pi.key] = pi
                    _extend(handle, snapshot, pi, assignments, add=False)
                return False
            snapshot.assume(a)
            assumed.append(a)
        return True
    finally:
        for a in reversed(assumed):
            snapshot.forget(a)


def _extend(
    handle: Handle,
    snapshot: MutableSnapshot,
    pi: PodInfo,
    assignments: list[ProposedAssignment],
    *,
    add: bool,
) -> None:
    """PreFilter's AddPod/RemovePod extensions for `pi` in every placed member's cycle state."""
    info = snapshot.node_info(pi.pod.spec.node_name or "")
    if info is None:
        return
    for a in assignments:
        if add:
            status = handle.run_pre_filter_extension_add_pod(a.state, a.pod, pi, info)
        else:
            status = handle.run_pre_filter_extension_remove_pod(a.state, a.pod, pi, info)
        if status is not None and not status.is_success():
            raise ExtensionError(status)


def result_of(victims: list[GroupVictim], nominations: dict[str, str]) -> PodGroupPostFilterResult:
    """The plugin's result: the nominations and the victims' keys, most important first."""
    return PodGroupPostFilterResult(dict(nominations), [pi.pod.key for v in victims for pi in v.pods])
