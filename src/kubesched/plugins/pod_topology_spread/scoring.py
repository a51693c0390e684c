"""PodTopologySpread's PreScore state and Score: ScheduleAnyway constraints, as upstream's scoring.go.

Matching pods per domain are weighted by the log of the number of domains; nodes lacking a key
are ignored (score 0) unless the spreading comes from the System defaults; NormalizeScore gives
the least crowded node 100.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.interfaces import (
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import (
    BoolArray,
    IndexArray,
    LabelColumn,
    NodeSet,
    NodeTable,
    PodRowCounts,
    sum_per_value,
)
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.pod_topology_spread.args import LABEL_HOSTNAME
from kubesched.plugins.pod_topology_spread.common import (
    Constraint,
    IntArray,
    NodeInclusion,
    PodCounters,
    PodCounts,
    has_all_keys,
    labels_have_all_keys,
)

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "ScoreState",
    "normalize",
    "round_half_away",
    "round_one",
    "score_node",
    "score_rows",
    "score_state",
]

PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"

FloatArray = npt.NDArray[np.float64]


def domain_slots(column: LabelColumn) -> IndexArray:
    """Per row, the domain slot of a key for scoring: its value id, or the id of "" when missing.

    Upstream reads a missing label as "" when system-default spreading lets nodes without the key
    through, so such nodes share the domain of nodes labelled with an empty value. If no node has
    that empty value the slot is `len(values)`, one past the interned ids.
    """
    missing = column.index.get("", len(column.values))
    ids = column.ids.astype(np.intp)
    out: IndexArray = np.where(ids < 0, missing, ids)
    return out


@dataclass(frozen=True, slots=True)
class ScoreState:
    """ScheduleAnyway constraints with their topology weights and per-domain counts."""

    constraints: list[Constraint]
    #: Nodes lacking a key are ignored (score 0) unless spreading comes from the System defaults.
    require_all: bool
    table: NodeTable
    columns: list[LabelColumn]
    weights: list[float]
    #: Per constraint: matching pods per domain slot (see `domain_slots`); None for the hostname key.
    domain_counts: list[IntArray | None]
    #: Per hostname constraint: the counter of matching pods on the scored node itself.
    host_counts: list[PodCounts | None]
    #: The same counts for every row of `table` at once (None where `host_counts` is None).
    host_rows: list[PodRowCounts | None]

    def clone(self) -> ScoreState:
        return self

    def ignored(self, nodes: NodeSet) -> BoolArray:
        if not self.require_all:
            return np.zeros(len(nodes), dtype=np.bool_)
        return ~has_all_keys(nodes.table, nodes.rows, self.constraints)


def by_value(counts: IntArray, own: LabelColumn, other: LabelColumn) -> IntArray:
    """`counts` (indexed by `own`'s value ids) re-indexed by the value ids of `other`; unknown -> 0."""
    index = own.index
    return np.fromiter(
        (counts[index[v]] if v in index else 0 for v in other.values), dtype=np.int64, count=len(other.values)
    )


def round_half_away(x: FloatArray) -> IntArray:
    """Go's math.Round for non-negative values, exactly (x - floor(x) is exact in binary)."""
    low = np.floor(x)
    out: IntArray = (low + (x - low >= 0.5)).astype(np.int64)
    return out


def round_one(x: float) -> int:
    low = math.floor(x)
    return low + (1 if x - low >= 0.5 else 0)


def score_state(
    pod: Pod, constraints: list[Constraint], nodes: NodeSet, require_all: bool, counters: PodCounters
) -> ScoreState:
    """The PreScore state: topology weights from `nodes` (the feasible ones), counts over all nodes."""
    table = nodes.table
    everything = table.all()
    all_rows = everything.rows
    has_keys = has_all_keys(table, all_rows, constraints) if require_all else np.ones(len(table), np.bool_)
    kept = nodes.rows[has_keys[nodes.rows]]  # filtered nodes that will be scored
    inclusion = NodeInclusion(pod, everything)
    columns = [table.label_column(c.topology_key) for c in constraints]
    weights: list[float] = []
    slots: list[IndexArray | None] = []
    wanted: list[BoolArray | None] = []
    for c, column in zip(constraints, columns, strict=True):
        if c.topology_key == LABEL_HOSTNAME:
            weights.append(math.log(len(kept) + 2))
            slots.append(None)
            wanted.append(None)
            continue
        row_slots = domain_slots(column)
        registered = np.zeros(len(column.values) + 1, dtype=np.bool_)
        registered[row_slots[kept]] = True
        weights.append(math.log(int(registered.sum()) + 2))
        slots.append(row_slots)
        wanted.append(has_keys & inclusion.mask(c) & registered[row_slots])
    row_counts = counters.row_counts(pod.metadata.namespace, constraints, wanted, table, all_rows)
    domain_counts: list[IntArray | None] = []
    host_counts: list[PodCounts | None] = []
    host_rows: list[PodRowCounts | None] = []
    for c, column, slot_of, want, counts in zip(constraints, columns, slots, wanted, row_counts, strict=True):
        if slot_of is None or want is None:
            domain_counts.append(None)
            host_counts.append(counters.host(pod.metadata.namespace, c) if c.counts_pods else None)
            host_rows.append(
                counters.rows_counter(pod.metadata.namespace, c, table) if c.counts_pods else None
            )
            continue
        size = len(column.values) + 1
        domain_counts.append(sum_per_value(slot_of[want], counts[want], size))
        host_counts.append(None)
        host_rows.append(None)
    return ScoreState(
        constraints, require_all, table, columns, weights, domain_counts, host_counts, host_rows
    )


def score_node(s: ScoreState, node_info: NodeInfo) -> int:
    """Score on one node: per constraint, its domain's matching pods times the weight, plus maxSkew-1."""
    labels = node_info.labels
    if s.require_all and not labels_have_all_keys(labels, s.constraints):
        return 0
    total = 0.0
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        counter = s.host_counts[i]
        domain_counts = s.domain_counts[i]
        if domain_counts is None:
            count = counter.on(node_info) if counter is not None else 0
        else:
            slot = s.columns[i].index.get(value)
            count = int(domain_counts[slot]) if slot is not None else 0
        total += float(count) * s.weights[i] + float(c.max_skew - 1)
    return round_one(total)


def score_rows(s: ScoreState, nodes: NodeSet) -> Scores:
    """`score_node` for a batch."""
    rows = nodes.rows
    total = np.zeros(len(nodes), dtype=np.float64)
    for i, c in enumerate(s.constraints):
        column = nodes.table.label_column(c.topology_key)
        ids = column.ids[rows]
        present = ids >= 0
        domain_counts = s.domain_counts[i]
        if domain_counts is None:
            counter = s.host_counts[i]
            by_row = s.host_rows[i]
            if by_row is not None and by_row.table is nodes.table:
                wanted = np.zeros(len(nodes.table), dtype=np.bool_)
                wanted[rows] = True
                counts = nodes.gather(by_row.current(wanted))
            elif counter is not None:
                counts = counter.rows(nodes.table.infos, rows)
            else:
                counts = np.zeros(len(rows), np.int64)
        else:
            per_value = (
                domain_counts
                if column is s.columns[i]
                else by_value(domain_counts, s.columns[i], column)  # another table
            )
            counts = np.append(per_value, 0)[np.where(present, ids, len(per_value))]
        contribution = counts.astype(np.float64) * s.weights[i] + float(c.max_skew - 1)
        total = total + np.where(present, contribution, 0.0)
    scores = round_half_away(total)
    scores[s.ignored(nodes)] = 0
    return scores


def normalize(s: ScoreState, nodes: NodeSet, scores: Scores) -> None:
    """Fewest matching pods -> 100: `100 * (max + min - s) // max`; ignored nodes get 0."""
    ignored = s.ignored(nodes)
    counted = scores[~ignored]
    if counted.size == 0:
        scores[...] = 0
        return
    highest = max(int(counted.max()), 0)
    lowest = int(counted.min())
    if highest == 0:
        scores[...] = MAX_NODE_SCORE
    else:
        scores[...] = MAX_NODE_SCORE * (highest + lowest - scores) // highest
    scores[ignored] = 0
