"""Preemption candidates: which nodes evicting pods can help, PodDisruptionBudgets, and the choice.

As upstream's framework/preemption: only nodes the filters rejected as `Unschedulable` are potential;
a victim's eviction violates a PDB once the PDB's allowed disruptions are spent; among candidates,
`pick_one_node_for_preemption` applies upstream's criteria in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat

import numpy as np

from kubesched.api.cluster_objects import PodDisruptionBudget
from kubesched.api.objects import Pod
from kubesched.api.selectors import LabelSelectorMatcher, compile_label_selector
from kubesched.errors import InputError
from kubesched.framework.node_info import PodInfo
from kubesched.framework.node_table import BoolArray, IndexArray, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    NodeStatuses,
    StatusColumns,
)

__all__ = [
    "Budget",
    "Candidate",
    "ExtensionError",
    "disruption_budgets",
    "nobody_below",
    "pick_one_node_for_preemption",
    "potential_count",
    "potential_rows",
    "start_time",
]

#: Added to every victim priority in the sum criterion so that negative priorities count as small
#: positive amounts: three pods of priority -10 must weigh more than one.
PRIORITY_OFFSET = 2**31


class ExtensionError(Exception):
    """A PreFilter AddPod/RemovePod extension failed while victims were tried (a dry run or a pod
    group's reprieve)."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


@dataclass(slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) lets the pod fit."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int = 0


def start_time(pod: Pod) -> float:
    """The pod's `status.startTime` as a POSIX timestamp; +inf ("now") when unset or unreadable.

    Upstream counts a pod that has not started yet (assumed, just bound) as started now, i.e. the
    youngest: the least important among equal priorities, and the preferred one to evict.
    """
    raw = pod.status.start_time
    if not raw:
        return math.inf
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf


@dataclass(slots=True)
class Budget:
    namespace: str
    selector: LabelSelectorMatcher
    allowed: int


def disruption_budgets(pdbs: Iterable[PodDisruptionBudget]) -> list[Budget]:
    """PDBs that can protect a pod: a nil, empty or invalid selector selects nothing here."""
    out: list[Budget] = []
    for pdb in pdbs:
        try:
            matcher = compile_label_selector(pdb.spec.selector)
        except InputError:
            continue
        if matcher.matches_nothing or matcher.matches_everything:
            continue
        out.append(Budget(pdb.metadata.namespace, matcher, pdb.status.disruptions_allowed))
    return out


def potential_rows(table: NodeTable, node_to_status: Mapping[str, Status]) -> IndexArray:
    """Rows (in table order) of the nodes the filters rejected as `Unschedulable`: the only nodes
    evicting pods can help. Statuses are shared among nodes, so each distinct one is read once."""
    columns = _columns_of(table, node_to_status)
    if columns is not None:
        helpful_codes = _helpful_codes(columns)
        # A mask over the table, not a sort: the columns list rows in the filters' rotated order.
        helpful_rows = np.zeros(len(table), dtype=np.bool_)
        helpful_rows[columns.rows] = helpful_codes[columns.codes]
        return np.flatnonzero(helpful_rows)
    statuses = node_to_status.values()
    distinct = dict(zip(map(id, statuses), statuses, strict=True))
    helpful = {key for key, st in distinct.items() if st.code == Code.UNSCHEDULABLE}
    if not helpful:
        return np.empty(0, dtype=np.intp)
    n = len(node_to_status)
    wanted = np.fromiter(map(helpful.__contains__, map(id, statuses)), dtype=np.bool_, count=n)
    rows = np.fromiter(map(table.index.get, node_to_status, repeat(-1)), dtype=np.intp, count=n)
    rows = rows[wanted & (rows >= 0)]
    rows.sort()
    return rows


def potential_count(table: NodeTable, node_to_status: Mapping[str, Status]) -> int:
    """`len(potential_rows(...))`, without listing them when the verdicts are columns."""
    columns = _columns_of(table, node_to_status)
    if columns is None:
        return len(potential_rows(table, node_to_status))
    return int(np.count_nonzero(_helpful_codes(columns)[columns.codes]))


def nobody_below(table: NodeTable, priority: int) -> bool:
    """No pod on `table` has a lower priority than `priority`: there is no one to evict anywhere."""
    return table.lowest_pod_priority >= priority


def _columns_of(table: NodeTable, node_to_status: Mapping[str, Status]) -> StatusColumns | None:
    columns = node_to_status.columns if isinstance(node_to_status, NodeStatuses) else None
    return columns if columns is not None and columns.table is table else None


def _helpful_codes(columns: StatusColumns) -> BoolArray:
    """Per status of `columns`: is it `Unschedulable` (evicting pods may help)?"""
    return np.fromiter(
        (st.code == Code.UNSCHEDULABLE for st in columns.statuses),
        dtype=np.bool_,
        count=len(columns.statuses),
    )


def _earliest_start_of_most_important(c: Candidate) -> float:
    """The earliest start among the victims of the highest pod priority (upstream's
    GetEarliestPodStartTime: the victims follow their groups' order, not their pods' priorities)."""
    top = max(v.priority for v in c.victims)
    return min(start_time(v.pod) for v in c.victims if v.priority == top)


#: pickOneNodeForPreemption's criteria, each a score where higher is better, applied in order
#: until one candidate is left.
_CRITERIA: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.num_pdb_violations,
    lambda c: -c.victims[0].priority,
    lambda c: -sum(v.priority + PRIORITY_OFFSET for v in c.victims),
    lambda c: -len(c.victims),
    _earliest_start_of_most_important,
)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate to preempt on: fewest PDB violations, then lowest highest-victim priority,
    then smallest priority sum, then fewest victims, then latest start of the most important
    victims; remaining ties go to the first candidate (dry-run order)."""
    remaining = [c for c in candidates if c.victims]
    if not remaining:
        return None
    for criterion in _CRITERIA:
        if len(remaining) == 1:
            break
        scores = [criterion(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return remaining[0]
