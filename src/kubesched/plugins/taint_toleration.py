"""TaintToleration: honour node taints in Filter, and prefer nodes with fewer untolerated
PreferNoSchedule taints in Score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from kubesched.api.objects import Node, Pod, Taint, Toleration
from kubesched.api.taints import EFFECT_PREFER_NO_SCHEDULE, find_untolerated_taint, toleration_tolerates
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    always_queue,
)
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreScorePlugin,
    RepeatsFailures,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.normalize import default_normalize_score
from kubesched.framework.signature import SignFragment, tolerations_fragment
from kubesched.framework.status import Status
from kubesched.framework.uniform_scores import uniform

__all__ = ["ERR_REASON_UNTOLERATED", "TaintToleration"]

#: v1.35+ wording: the taint itself is no longer named in the reason.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """The pod's tolerations that can tolerate a PreferNoSchedule taint."""

    tolerations: tuple[Toleration, ...]

    def clone(self) -> _PreScoreState:
        return self


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    # An empty effect tolerates every effect, PreferNoSchedule included.
    return tuple(t for t in pod.spec.tolerations if t.effect in ("", EFFECT_PREFER_NO_SCHEDULE))


def _count_intolerable(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    """How many PreferNoSchedule taints no toleration tolerates."""
    return sum(
        1
        for taint in taints
        if taint.effect == EFFECT_PREFER_NO_SCHEDULE
        and not any(toleration_tolerates(t, taint) for t in tolerations)
    )


class TaintToleration(
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
    RepeatsFailures,
):
    """Filter: a node with a NoSchedule or NoExecute taint the pod does not tolerate is
    UnschedulableAndUnresolvable (PreferNoSchedule taints never filter).

    Score: the number of PreferNoSchedule taints the pod does not tolerate, normalized in reverse so
    a node with none scores 100. Tolerations are matched once per distinct taint list in the batch
    forms, since most clusters have only a handful of them.
    """

    name: ClassVar[str] = "TaintToleration"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()
    #: NormalizeScore is default_normalize_score (`ScoreExtensions`).
    normalize_is_pointwise: ClassVar[bool] = True

    # -- Filter
    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [tolerations_fragment(pod)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if find_untolerated_taint(node_info.node.spec.taints, pod.spec.tolerations) is None:
            return None
        return Status.unschedulable_and_unresolvable(ERR_REASON_UNTOLERATED)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        tolerations = pod.spec.tolerations
        table = nodes.table
        per_set = [find_untolerated_taint(taints, tolerations) is None for taints in table.taint_sets]
        if all(per_set):
            return BatchFilterResult.all_pass(len(nodes))
        tolerated = np.asarray(per_set, dtype=np.bool_)[nodes.gather(table.taint_set_ids)]
        return BatchFilterResult.from_mask(
            tolerated, Status.unschedulable_and_unresolvable(ERR_REASON_UNTOLERATED)
        )

    # -- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        if len(nodes) == 0:
            return None
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(_prefer_no_schedule_tolerations(pod)))
        return None

    def _tolerations(self, state: CycleState, pod: Pod) -> tuple[Toleration, ...]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s.tolerations
        return _prefer_no_schedule_tolerations(pod)  # PreScore disabled: compute here

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return _count_intolerable(node_info.node.spec.taints, self._tolerations(state, pod))

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        tolerations = self._tolerations(state, pod)
        table = nodes.table
        counts = [_count_intolerable(taints, tolerations) if taints else 0 for taints in table.taint_sets]
        if len(set(counts)) == 1:  # one count for every node (e.g. no PreferNoSchedule taints)
            return uniform(len(nodes), counts[0])
        per_set = np.asarray(counts, dtype=np.int64)
        return per_set[nodes.gather(table.taint_set_ids)]

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        default_normalize_score(scores, reverse=True)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a node added or retainted so that the pod tolerates it; the pending pod
        gaining a toleration (the API only lets tolerations be added, so that always may help)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION), always_queue
            ),
        ]


def _after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """Queue when the node (new, or updated) now has no NoSchedule/NoExecute taint the pod does
    not tolerate, and had one before (an added node counts as having had one)."""
    if not isinstance(new, Node) or not isinstance(old, Node | None):
        return QueueingHint.QUEUE
    was_untolerated = old is None or find_untolerated_taint(old.spec.taints, pod.spec.tolerations) is not None
    is_untolerated = find_untolerated_taint(new.spec.taints, pod.spec.tolerations) is not None
    return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.SKIP
