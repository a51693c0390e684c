"""PodTopologySpread's PreFilter state and Filter: DoNotSchedule constraints, as upstream's filtering.go.

PreFilter counts matching pods per domain over the eligible nodes and keeps the global minimum;
Filter rejects a node missing a topology key (UnschedulableAndUnresolvable) or whose domain would
exceed `maxSkew` over that minimum (Unschedulable). AddPod / RemovePod keep the counts current.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.selectors import (
    RequiredNodeAffinity,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import (
    BatchFilterResult,
    BoolArray,
    LabelColumn,
    NodeSet,
    NodeTable,
    sum_per_value,
)
from kubesched.framework.status import Status
from kubesched.plugins.pod_topology_spread.common import (
    Constraint,
    IntArray,
    NodeInclusion,
    PodCounters,
    has_all_keys,
    labels_have_all_keys,
    node_included,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "Domains",
    "FilterState",
    "filter_node",
    "filter_rows",
    "filter_state",
    "update_with_pod",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"

#: The global minimum when a constraint has no domain at all (upstream starts its search there).
MAX_INT32: Final = 2**31 - 1


class Domains:
    """Matching pods per topology value of one DoNotSchedule constraint, and the global minimum.

    Values are the interned ids of the PreFilter table's label column, so a Filter over that table
    is a gather; values met later through `add` on a node outside the table go to `extra`.
    A value is a domain once an eligible node carries it, even with 0 matching pods.
    """

    __slots__ = ("column", "counts", "extra", "min_domains", "min_match", "registered")

    def __init__(
        self,
        column: LabelColumn,
        counts: IntArray,
        registered: BoolArray,
        min_domains: int,
        extra: dict[str, int] | None = None,
    ) -> None:
        self.column = column
        self.counts = counts
        self.registered = registered
        self.min_domains = min_domains
        self.extra: dict[str, int] = extra if extra is not None else {}
        self.min_match = 0
        self._refresh_min()

    def _refresh_min(self) -> None:
        """The global minimum; 0 while there are fewer domains than minDomains."""
        present = self.counts[self.registered]
        num_domains = len(present) + len(self.extra)
        if num_domains < self.min_domains:
            self.min_match = 0
            return
        lowest = MAX_INT32
        if len(present):
            lowest = min(lowest, int(present.min()))
        if self.extra:
            lowest = min(lowest, *self.extra.values())
        self.min_match = lowest

    def count_of(self, value: str) -> int:
        i = self.column.index.get(value)
        if i is not None:
            return int(self.counts[i])
        return self.extra.get(value, 0)

    def lookup(self, column: LabelColumn) -> IntArray:
        """Counts aligned with another table's column of the same key (a 1-node table, say)."""
        if column is self.column:
            return self.counts
        return np.fromiter(
            (self.count_of(v) for v in column.values), dtype=np.int64, count=len(column.values)
        )

    def add(self, value: str, delta: int) -> None:
        i = self.column.index.get(value)
        if i is not None:
            self.counts[i] += delta
            self.registered[i] = True
        else:
            self.extra[value] = self.extra.get(value, 0) + delta
        self._refresh_min()

    def clone(self) -> Domains:
        return Domains(
            self.column, self.counts.copy(), self.registered.copy(), self.min_domains, dict(self.extra)
        )


@dataclass(slots=True)
class FilterState:
    """DoNotSchedule constraints of the pod with their per-domain counts (PreFilter's output)."""

    constraints: list[Constraint]
    domains: list[Domains]
    #: Per constraint: does its selector match the incoming pod (the pod would add 1 to its domain)?
    self_match: list[bool]
    table: NodeTable
    required: RequiredNodeAffinity

    def clone(self) -> FilterState:
        return FilterState(
            self.constraints, [d.clone() for d in self.domains], self.self_match, self.table, self.required
        )


def filter_state(
    pod: Pod, constraints: list[Constraint], nodes: NodeSet, counters: PodCounters
) -> FilterState:
    """The PreFilter state: per constraint, matching pods per domain over the eligible nodes."""
    table, rows = nodes.table, nodes.rows
    has_keys = has_all_keys(table, rows, constraints)
    inclusion = NodeInclusion(pod, nodes)
    eligible = [has_keys & inclusion.mask(c) for c in constraints]
    row_counts = counters.row_counts(pod.metadata.namespace, constraints, eligible, table, rows)
    domains: list[Domains] = []
    for c, elig, counts in zip(constraints, eligible, row_counts, strict=True):
        column = table.label_column(c.topology_key)
        ids = nodes.gather(column.ids)[elig]  # eligible rows carry the key: ids >= 0
        size = len(column.values)
        registered = np.bincount(ids, minlength=size)[:size] > 0
        per_domain = sum_per_value(ids, counts[elig], size)
        domains.append(Domains(column, per_domain, registered, c.min_domains))
    labels = pod.metadata.labels
    return FilterState(
        constraints,
        domains,
        [c.matcher.matches(labels) for c in constraints],
        table,
        RequiredNodeAffinity(pod),
    )


def update_with_pod(s: FilterState, pod: Pod, changed: PodInfo, node_info: NodeInfo, delta: int) -> None:
    """Add `delta` to the domain of `node_info` for each constraint whose selector matches `changed`.

    As upstream: only pods of the incoming pod's namespace, only nodes carrying every key and
    included by the constraint's node policies; the selector is matched as is (an empty one
    matches) and terminating pods are not singled out.
    """
    if changed.pod.metadata.namespace != pod.metadata.namespace:
        return
    node = node_info.node
    labels = node.metadata.labels
    if not labels_have_all_keys(labels, s.constraints):
        return
    changed_labels = changed.pod.metadata.labels
    for c, domains in zip(s.constraints, s.domains, strict=True):
        if c.matcher.matches(changed_labels) and node_included(c, pod, s.required, node):
            domains.add(labels[c.topology_key], delta)


def filter_node(s: FilterState, node_info: NodeInfo) -> Status | None:
    """Filter on one node: the first constraint it fails decides."""
    labels = node_info.labels
    for c, domains, self_match in zip(s.constraints, s.domains, s.self_match, strict=True):
        value = labels.get(c.topology_key)
        if value is None:
            return Status.unschedulable_and_unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        if domains.count_of(value) + self_match - domains.min_match > c.max_skew:
            return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def filter_rows(s: FilterState, nodes: NodeSet) -> BatchFilterResult:
    """Constraints in order; each node keeps the first failure, as the per-node form returns it."""
    codes = np.full(len(nodes), -1, dtype=np.int32)
    for c, domains, self_match in zip(s.constraints, s.domains, s.self_match, strict=True):
        column = nodes.table.label_column(c.topology_key)
        ids = nodes.gather(column.ids)
        if not column.complete:
            codes[(codes < 0) & (ids < 0)] = 0
        # Whether each domain's skew is over, once per domain; -1 (key missing) reads the appended False.
        over = np.append(domains.lookup(column) + int(self_match) - domains.min_match > c.max_skew, False)
        if over.any():
            codes[(codes < 0) & over[ids]] = 1
    return BatchFilterResult(
        codes,
        [
            Status.unschedulable_and_unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH),
            Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH),
        ],
    )
