"""InterPodAffinity's PreFilter state and Filter: required terms, judged per topology domain.

PreFilter counts, per domain, the running pods matching all the incoming pod's required affinity
terms, those matching each of its required anti-affinity terms, and the running pods whose required
anti-affinity terms select it; Filter then looks a node's domains up in those counts, per node or as
one gather per topology key over a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.status import Status
from kubesched.plugins.inter_pod_affinity.counting import (
    REQUIRED_ANTI,
    DomainCounts,
    TableIndex,
    count_labels,
)
from kubesched.plugins.inter_pod_affinity.terms import NO_LABELS, PodAffinityTerms, all_match

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "PRE_FILTER_STATE_KEY",
    "PreFilterState",
    "count_pre_filter",
    "filter_node",
    "filter_rows",
    "update_with_pod",
]

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilterInterPodAffinity"


@dataclass(slots=True)
class PreFilterState:
    """The incoming pod's required terms and, per topology domain, how many running pods
    match them (`affinity`: pods matching *all* required affinity terms; `anti_affinity`: pods
    matching each anti-affinity term) and how many running pods' required anti-affinity terms
    match the incoming pod (`existing_anti_affinity`). Updated by AddPod / RemovePod.
    """

    pod: Pod
    terms: PodAffinityTerms
    ns_labels: Mapping[str, str]
    affinity: DomainCounts
    anti_affinity: DomainCounts
    existing_anti_affinity: DomainCounts
    #: The pod matches all its own required affinity terms (it may start a self-affine group).
    self_affine: bool

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.terms,
            self.ns_labels,
            self.affinity.clone(),
            self.anti_affinity.clone(),
            self.existing_anti_affinity.clone(),
            self.self_affine,
        )

    @property
    def relevant(self) -> bool:
        """False when Filter could reject nothing (upstream's PreFilter Skip)."""
        return self.existing_anti_affinity.any() or self.terms.has_required


def count_pre_filter(
    pod: Pod, terms: PodAffinityTerms, ns_labels: Mapping[str, str], index: TableIndex
) -> PreFilterState:
    """The PreFilter state of `pod` (its terms compiled, namespace selectors folded) on `index.table`."""
    table = index.table
    affinity = DomainCounts(table)
    anti = DomainCounts(table)
    existing = DomainCounts(table)
    req, anti_terms = terms.required_affinity, terms.required_anti_affinity
    if req:
        # Pods matching *all* the required terms count in the domain of each term's key.
        matching_all = index.matching(("all", req), lambda other: all_match(req, other))
        for t in req:
            affinity.add_rows(t.topology_key, matching_all)
    for t in anti_terms:
        anti.add_rows(
            t.topology_key, index.matching(("one", t), lambda other, t=t: t.matches(other, NO_LABELS))
        )
    groups = index.groups
    for key, group in groups.groups(REQUIRED_ANTI).items():
        t = key[2]
        if t.matches(pod, ns_labels):
            existing.add_rows(t.topology_key, groups.per_row(key, group))
    return PreFilterState(pod, terms, ns_labels, affinity, anti, existing, all_match(req, pod))


def update_with_pod(
    s: PreFilterState,
    pi: PodInfo,
    node_info: NodeInfo,
    delta: int,
    terms_of: Callable[[Pod], PodAffinityTerms],
) -> None:
    """AddPod (`delta` 1) / RemovePod (-1): count `pi` on `node_info` in or out of the state."""
    labels = node_info.labels
    other = pi.pod
    if pi.has_required_anti_affinity:
        for t in terms_of(other).required_anti_affinity:
            if t.matches(s.pod, s.ns_labels):
                count_labels(s.existing_anti_affinity, t.topology_key, labels, delta)
    req = s.terms.required_affinity
    if req and all_match(req, other):
        for t in req:
            count_labels(s.affinity, t.topology_key, labels, delta)
    for t in s.terms.required_anti_affinity:
        if t.matches(other, NO_LABELS):
            count_labels(s.anti_affinity, t.topology_key, labels, delta)


def filter_node(s: PreFilterState, node_info: NodeInfo) -> Status | None:
    """Filter on one node: affinity, then the pod's anti-affinity, then the running pods'."""
    labels = node_info.labels
    req = s.terms.required_affinity
    if req:
        pods_exist = True
        for t in req:
            value = labels.get(t.topology_key)
            if value is None:
                return Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY)
            if s.affinity.get(t.topology_key, value) <= 0:
                pods_exist = False
        if not pods_exist and not (not s.affinity.any() and s.self_affine):
            return Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY)
    if s.anti_affinity.any():
        for t in s.terms.required_anti_affinity:
            value = labels.get(t.topology_key)
            if value is not None and s.anti_affinity.get(t.topology_key, value) > 0:
                return Status.unschedulable(ERR_REASON_ANTI_AFFINITY)
    for key in s.existing_anti_affinity.topology_keys():
        value = labels.get(key)
        if value is not None and s.existing_anti_affinity.get(key, value) > 0:
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY)
    return None


def filter_rows(s: PreFilterState, nodes: NodeSet) -> BatchFilterResult:
    """Filter on a batch: the same three checks, as one gather per topology key."""
    n = len(nodes)
    table = nodes.table
    codes = np.full(n, -1, dtype=np.int32)
    req = s.terms.required_affinity
    if req:
        has_keys = np.ones(n, dtype=np.bool_)
        pods_exist = np.ones(n, dtype=np.bool_)
        for t in req:
            has_keys &= nodes.gather(table.label_column(t.topology_key).ids) >= 0
            pods_exist &= s.affinity.amounts(nodes, t.topology_key) > 0
        first_of_group = not s.affinity.any() and s.self_affine
        codes[~(has_keys & (pods_exist | first_of_group))] = 0
    if s.anti_affinity.any() and s.terms.required_anti_affinity:
        clash = np.zeros(n, dtype=np.bool_)
        for t in s.terms.required_anti_affinity:
            clash |= s.anti_affinity.amounts(nodes, t.topology_key) > 0
        codes[(codes < 0) & clash] = 1
    if s.existing_anti_affinity.any():
        clash = np.zeros(n, dtype=np.bool_)
        for key in s.existing_anti_affinity.topology_keys():
            clash |= s.existing_anti_affinity.amounts(nodes, key) > 0
        codes[(codes < 0) & clash] = 2
    return BatchFilterResult(
        codes,
        [
            Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY),
            Status.unschedulable(ERR_REASON_ANTI_AFFINITY),
            Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY),
        ],
    )
