"""Pod-group preemption (GenericWorkload on): victims for a whole pod group, chosen cluster-wide.

As upstream's PodGroupEvaluator (framework/preemption/podgrouppreemption.go): every pod of lower
priority than the group is taken off the snapshot at once and the group's algorithm runs again; if
the group then fits, victims are reprieved one by one, most important first (those whose eviction
would break a PodDisruptionBudget before the others), as long as every member the algorithm placed
still passes the filters on its node. A victim is one pod, or every scheduled pod of a PodGroup
whose `disruptionMode` is `all`. A victim's priority is its PodGroup's when it has one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubesched.api.scheduling_groups import PodGroup
from kubesched.framework.interfaces import Handle
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.placement import ProposedAssignment
from kubesched.framework.pod_group_preemption import (
    GroupPreemptor,
    MutableSnapshot,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from kubesched.framework.pod_groups import PodGroupLookup, pod_group_of, pod_group_priority
from kubesched.framework.status import Code, Status
from kubesched.plugins.default_preemption.candidates import Budget, ExtensionError, start_time
from kubesched.plugins.default_preemption.executor import terminating_by_preemption

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


@dataclass(slots=True)
class GroupVictim:
    """What is evicted as one: a pod, or a whole PodGroup (`disruptionMode: all`)."""

    pods: list[PodInfo]
    priority: int
    #: upstream's victimRank: 2 for a PodGroup or a pod of one, 1 for a pod on its own.
    rank: int
    #: The earliest `status.startTime` of its pods (inf: none started).
    start: float
    whole_group: bool = False


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


def group_victims(handle: Handle) -> list[GroupVictim]:
    """Every pod on the snapshot as a possible victim, node by node: a pod of a PodGroup whose
    `disruptionMode` is `all` brings the group's other scheduled pods along, once."""
    lookup = handle if isinstance(handle, PodGroupLookup) else None
    table = handle.snapshot
    on_nodes = {k: pi for info in table.infos for k, pi in info.pods.items()}
    seen: set[str] = set()
    out: list[GroupVictim] = []
    for info in table.infos:
        for pi in info.pods.values():
            group = pod_group_of(pi.pod)
            state = lookup.pod_group_state(*group) if lookup is not None and group is not None else None
            pod_group = state.pod_group if state is not None else None
            priority = pod_group_priority(pod_group) if pod_group is not None else pi.priority
            rank = 2 if pi.pod.spec.scheduling_group is not None else 1
            if state is None or pod_group is None or not _disrupted_whole(pod_group):
                out.append(GroupVictim([pi], priority, rank, start_time(pi.pod)))
                continue
            key = f"{group[0]}/{group[1]}" if group is not None else pi.key
            if key in seen:
                continue
            seen.add(key)
            pods = [on_nodes[k] for p in state.pods if (k := pod_key(p)) in state.scheduled and k in on_nodes]
            pods = pods or [pi]
            start = min(start_time(p.pod) for p in pods)
            out.append(GroupVictim(pods, priority, 2, start, whole_group=True))
    return out


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
    potential = [v for v in group_victims(handle) if v.priority < priority]
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
        violating, non_violating = _split_by_budgets(potential, budgets)
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
    lookup = handle if isinstance(handle, PodGroupLookup) else None
    priority = pod_group_priority(preemptor.pod_group)
    table = handle.snapshot
    for node in set(preemptor.nominated.values()):
        row = table.index.get(node)
        if row is None:
            continue
        for pi in table.infos[row].pods.values():
            if _priority(lookup, pi) < priority and terminating_by_preemption(pi.pod):
                return True
    return False


def pod_victim_facts(handle: Handle) -> Callable[[PodInfo], tuple[int, int]]:
    """(priority, rank) of a pod as a victim of one pod's preemption: with GenericWorkload on, a pod
    of a pod group has its PodGroup's priority and outranks a pod on its own of equal priority
    (upstream's NewPodVictim); otherwise its own priority, rank 1."""
    lookup = handle if isinstance(handle, PodGroupLookup) else None

    def facts(pi: PodInfo) -> tuple[int, int]:
        group = pod_group_of(pi.pod) if lookup is not None else None
        state = lookup.pod_group_state(*group) if lookup is not None and group is not None else None
        if state is None:
            return pi.priority, 1
        return (pod_group_priority(state.pod_group) if state.pod_group is not None else pi.priority), 2

    return facts


def _priority(lookup: PodGroupLookup | None, pi: PodInfo) -> int:
    group = pod_group_of(pi.pod)
    state = lookup.pod_group_state(*group) if lookup is not None and group is not None else None
    if state is not None and state.pod_group is not None:
        return pod_group_priority(state.pod_group)
    return pi.priority


def _disrupted_whole(pod_group: PodGroup) -> bool:
    mode = pod_group.spec.disruption_mode
    return mode is not None and mode.all is not None


def _split_by_budgets(
    victims: list[GroupVictim], budgets: Sequence[Budget]
) -> tuple[list[tuple[GroupVictim, int]], list[GroupVictim]]:
    """upstream's FilterVictimsWithPDBViolation over victims: one pod breaking a budget makes its
    whole victim violating (a group cannot be reprieved in part); budgets are spent in order."""
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
