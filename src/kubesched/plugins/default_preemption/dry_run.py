"""The preemption dry run: on clones of the potential nodes, the fewest, least important victims.

As upstream's DryRunPreemption and SelectVictimsOnNode: each node is cloned, every pod of lower
priority removed and the filters re-run (nominated pods included); pods are then reprieved, most
important first (PDB-violating ones before the others), while the preemptor still fits.
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
from kubesched.plugins.default_preemption.candidates import (
    Budget,
    Candidate,
    ExtensionError,
    filter_pods_with_pdb_violation,
    start_time,
)
from kubesched.plugins.default_preemption.victim_units import pod_victim_facts

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
    for row in potential[order].tolist():
        info = infos[row].clone()
        victims, violations, status = select_victims_on_node(handle, state.clone(), preemptor, info, budgets)
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
) -> tuple[list[PodInfo], int, Status | None]:
    """The fewest, least important pods to evict from `node_info` (a clone) so the pod fits.

    A victim's priority and rank are `victim_units.pod_victim_facts`: with GenericWorkload off, the
    pod's own priority, every pod alike.

    Returns (victims most important first, number of victims whose eviction violates a PDB,
    None) or ([], 0, why not).
    """
    pod = preemptor.pod
    victim_facts = pod_victim_facts(handle)

    def remove(pi: PodInfo) -> None:
        node_info.remove_pod(pi.key)
        st = handle.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)
        if st is not None and not st.is_success():
            raise ExtensionError(st)

    def add(pi: PodInfo) -> None:
        node_info.add_pod(pi)
        st = handle.run_pre_filter_extension_add_pod(state, pod, pi, node_info)
        if st is not None and not st.is_success():
            raise ExtensionError(st)

    def fits() -> Status | None:
        st = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        return None if st is None or st.is_success() else st

    facts = {pi.key: victim_facts(pi) for pi in node_info.pods.values()}

    def importance(pi: PodInfo) -> tuple[int, int, float]:
        """Most important first: priority, a pod of a group before one on its own, earlier start."""
        priority, rank = facts[pi.key]
        return (-priority, -rank, start_time(pi.pod))

    try:
        potential = [pi for pi in node_info.pods.values() if facts[pi.key][0] < preemptor.priority]
        for pi in potential:
            remove(pi)
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        # Even with every lower-priority pod gone the pod does not fit: this node cannot help.
        # (Affinity to one of those pods is not considered, as upstream.)
        status = fits()
        if status is not None:
            return [], 0, status
        potential.sort(key=importance)
        violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
        victims: list[PodInfo] = []

        def reprieve(pi: PodInfo) -> bool:
            add(pi)
            if fits() is None:
                return True
            remove(pi)
            victims.append(pi)
            return False

        num_violations = sum(1 for pi in violating if not reprieve(pi))
        for pi in non_violating:
            reprieve(pi)
    except ExtensionError as err:
        return [], 0, Status.as_error(err.status.message())
    if violating and non_violating:
        victims.sort(key=importance)
    return victims, num_violations, None
