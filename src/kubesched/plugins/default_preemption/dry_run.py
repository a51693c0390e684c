"""The preemption dry run: on clones of the potential nodes, the fewest, least important victims.

As upstream's DryRunPreemption and SelectVictimsOnNode: each node is cloned, every victim of lower
priority removed and the filters re-run (nominated pods included); victims are then reprieved, most
important first (PDB-violating ones before the others), while the preemptor still fits. A victim is
one pod, or a whole group spanning nodes (GenericWorkload on, `disruptionMode: all`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    Handle,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import IndexArray, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.default_preemption.candidates import Budget, Candidate, ExtensionError
from kubesched.plugins.default_preemption.victim_units import CrossNodeVictims, GroupVictim, split_by_budgets

__all__ = ["NO_VICTIMS", "DryRun", "dry_run", "select_victims_on_node"]

NO_VICTIMS = "No preemption victims found for incoming pod"


@dataclass(slots=True)
class DryRun:
    candidates: list[Candidate] = field(default_factory=list)
    #: Why the other dry-run nodes are not candidates.
    statuses: dict[str, Status] = field(default_factory=dict)
    #: Potential nodes not dry-run: nobody of lower priority to evict (NO_VICTIMS). Most nodes of a
    #: full cluster, so they are counted rather than listed.
    without_victims: int = 0
    errors: list[Status] = field(default_factory=list)


def dry_run(
    handle: Handle,
    state: CycleState,
    preemptor: PodInfo,
    table: NodeTable,
    potential: IndexArray,
    budgets: Sequence[Budget],
    offset: int,
    num_candidates: int,
) -> DryRun:
    """Select victims on clones of the potential nodes (rows of `table`), from `offset` round them.

    Stops once `num_candidates` candidates are found and one of them violates no PDB.
    Candidates without PDB violations come first. `statuses` is complete only when no
    candidate was found (the only time it is read); nodes without victims are only counted.
    """
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    out = DryRun()
    # Only nodes with a pod of lower priority can be candidates: the table's column tells which
    # at once, so on a full cluster (where most nodes have nobody to evict) the dry run visits
    # only those, in the order a visit of every node from `offset` would take.
    has_victims = table.lowest_priority[potential] < preemptor.priority
    positions = np.flatnonzero(has_victims)
    cut = int(np.searchsorted(positions, offset))
    order = np.concatenate((positions[cut:], positions[:cut]))
    infos = table.infos
    victims_of = CrossNodeVictims(handle)
    for row in potential[order].tolist():
        info = infos[row].clone()
        victims, violations, status = select_victims_on_node(
            handle, state.clone(), preemptor, info, budgets, victims_of
        )
        if status is None and victims:
            (violating if violations else non_violating).append(Candidate(info.name, victims, violations))
            if non_violating and len(non_violating) + len(violating) >= num_candidates:
                break
            continue
        if status is None:
            status = Status.as_error(f'expected at least one victim pod on node "{info.name}"')
        if status.code == Code.ERROR:
            out.errors.append(status)
        out.statuses[info.name] = status
    out.candidates = non_violating + violating
    out.without_victims = len(potential) - len(positions)
    return out


def select_victims_on_node(
    handle: Handle,
    state: CycleState,
    preemptor: PodInfo,
    node_info: NodeInfo,
    budgets: Sequence[Budget],
    victims_of: CrossNodeVictims | None = None,
) -> tuple[list[PodInfo], int, Status | None]:
    """The fewest, least important victims to evict so the pod fits on `node_info` (a clone).

    A victim is a pod, or (GenericWorkload on) every scheduled pod under a group whose
    `disruptionMode` is `all` (`victim_units`), at the priority of its tree. Only this node's pods
    leave `node_info`; a group's pods on other nodes go through the PreFilter extensions alone, with
    their own node (upstream's SelectVictimsOnNode), so only this node's filters are re-run.
    `victims_of` gathers each group once for a whole dry run.

    Returns (victims' pods, most important victim first; the number of pods whose eviction violates
    a PDB; None) or ([], 0, why not).
    """
    pod = preemptor.pod
    name = node_info.name
    table = handle.snapshot
    units = CrossNodeVictims(handle) if victims_of is None else victims_of

    def home(v: GroupVictim, pi: PodInfo) -> NodeInfo:
        node = v.homes.get(pi.key, name) if v.homes else name
        return node_info if node == name else table.infos[table.index[node]]

    def remove(v: GroupVictim) -> None:
        for pi in v.pods:
            info = home(v, pi)
            if info is node_info:
                node_info.remove_pod(pi.key)
            st = handle.run_pre_filter_extension_remove_pod(state, pod, pi, info)
            if st is not None and not st.is_success():
                raise ExtensionError(st)

    def add(v: GroupVictim) -> None:
        for pi in v.pods:
            info = home(v, pi)
            if info is node_info:
                node_info.add_pod(pi)
            st = handle.run_pre_filter_extension_add_pod(state, pod, pi, info)
            if st is not None and not st.is_success():
                raise ExtensionError(st)

    def fits() -> Status | None:
        st = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        return None if st is None or st.is_success() else st

    try:
        potential = units.on((node_info,), preemptor.priority)
        for v in potential:
            remove(v)
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        # Even with every lower-priority victim gone the pod does not fit: this node cannot help.
        # (Affinity to one of those pods is not considered, as upstream.)
        status = fits()
        if status is not None:
            return [], 0, status
        potential.sort(key=_importance)
        violating, non_violating = split_by_budgets(potential, budgets)
        victims: list[GroupVictim] = []

        def reprieve(v: GroupVictim) -> bool:
            add(v)
            if fits() is None:
                return True
            remove(v)
            victims.append(v)
            return False

        num_violations = sum(count for v, count in violating if not reprieve(v))
        for v in non_violating:
            reprieve(v)
    except ExtensionError as err:
        return [], 0, Status.as_error(err.status.message())
    if violating and non_violating:
        victims.sort(key=_importance)
    return [pi for v in victims for pi in v.pods], num_violations, None


def _importance(v: GroupVictim) -> tuple[int, int, int, float]:
    """Most important first (upstream's MoreImportantVictim): priority, a composite before a group
    before a pod on its own, more pods, earlier start."""
    return (-v.priority, -v.rank, -len(v.pods), v.start)
