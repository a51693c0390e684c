"""InterPodAffinity's PreScore state and Score: preferred terms, summed per topology domain.

PreScore adds up, per domain, the weights of the incoming pod's preferred terms matching running
pods there, and of the running pods' terms selecting the incoming pod; every node in a domain
scores that domain's sum, min-max normalized onto [0, 100].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.interfaces import Scores
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from kubesched.plugins.inter_pod_affinity.counting import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    DomainCounts,
    TableIndex,
)
from kubesched.plugins.inter_pod_affinity.terms import NO_LABELS, PodAffinityTerms

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "PreScoreState",
    "count_pre_score",
    "has_preferred_terms",
    "normalize",
    "score_node",
    "score_rows",
]

PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """Topology key -> domain -> summed weight; every node in a domain scores that domain's sum.

    `touched`: some term matched a pod on a node carrying its key (even if the sums cancel out);
    without that the plugin has nothing to say (Skip).
    """

    topology_score: DomainCounts
    touched: bool

    def clone(self) -> PreScoreState:
        return self


def has_preferred_terms(pod: Pod) -> bool:
    """The pod has preferred pod affinity or anti-affinity terms (as written, before compiling)."""
    affinity = pod.spec.affinity
    return affinity is not None and bool(
        (affinity.pod_affinity and affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution)
        or (
            affinity.pod_anti_affinity
            and affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
        )
    )


def count_pre_score(
    pod: Pod,
    terms: PodAffinityTerms,
    ns_labels: Mapping[str, str],
    index: TableIndex,
    args: InterPodAffinityArgs,
) -> PreScoreState | Status:
    """The per-domain score sums of `pod` on `index.table`; Skip when no term touched a node."""
    ignore_existing_preferred = args.ignore_preferred_terms_of_existing_pods
    hard_weight = args.hard_pod_affinity_weight
    topology_score = DomainCounts(index.table)
    touched = False
    # The incoming pod's preferred terms: weight per running pod they select.
    for w, t in terms.preferred_affinity:
        matching = index.matching(("one", t), lambda other, t=t: t.matches(other, NO_LABELS))
        touched |= topology_score.add_rows(t.topology_key, matching, w)
    for w, t in terms.preferred_anti_affinity:
        matching = index.matching(("one", t), lambda other, t=t: t.matches(other, NO_LABELS))
        touched |= topology_score.add_rows(t.topology_key, matching, -w)
    # The running pods' terms selecting the incoming pod, one distinct term at a time.
    groups = index.groups
    kinds: list[tuple[int, int]] = []
    if hard_weight > 0:
        kinds.append((REQUIRED_AFFINITY, 1))
    if not ignore_existing_preferred:
        kinds += [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI, -1)]
    for kind, sign in kinds:
        for key, group in groups.groups(kind).items():
            _, w, t = key
            if t.matches(pod, ns_labels):
                amount = hard_weight if kind == REQUIRED_AFFINITY else sign * w
                touched |= topology_score.add_rows(t.topology_key, groups.per_row(key, group), amount)
    if not touched:
        return Status.skip()
    return PreScoreState(topology_score, touched)


def score_node(s: PreScoreState, node_info: NodeInfo) -> int:
    """The sum of the node's domains' scores."""
    labels = node_info.labels
    total = 0
    for key in s.topology_score.topology_keys():
        value = labels.get(key)
        if value is not None:
            total += s.topology_score.get(key, value)
    return total


def score_rows(s: PreScoreState, nodes: NodeSet) -> Scores:
    """`score_node` for a batch, one gather per topology key."""
    scores = np.zeros(len(nodes), dtype=np.int64)
    for key in s.topology_score.topology_keys():
        scores += s.topology_score.amounts(nodes, key)
    return scores


def normalize(scores: Scores) -> None:
    """Min-max onto [0, 100]: `int(100 * ((s - min) / (max - min)))` in float64; all 0 if max == min."""
    low = int(scores.min())
    spread = int(scores.max()) - low
    if spread <= 0:
        scores[...] = 0
        return
    fractions = (scores - low).astype(np.float64) / float(spread)
    scores[...] = (float(MAX_NODE_SCORE) * fractions).astype(np.int64)
