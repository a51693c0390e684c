"""The InterPodAffinity plugin: its extension points, its term cache, its events and queueing hint.

The counting lives in `counting`, Filter in `filtering`, Score in `scoring`; this module wires them
to the framework and remembers, per plugin instance, each pod's compiled terms and what it counted
on the current NodeTable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kubesched.api.cluster_objects import Namespace
from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState, missing_state_error, pre_filter_state
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
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    RepeatsFailures,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, labels_fragment
from kubesched.framework.status import Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from kubesched.plugins.inter_pod_affinity.counting import DomainCounts, TableIndex
from kubesched.plugins.inter_pod_affinity.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
    count_pre_filter,
    filter_node,
    filter_rows,
    update_with_pod,
)
from kubesched.plugins.inter_pod_affinity.scoring import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    count_pre_score,
    has_preferred_terms,
    normalize,
    score_node,
    score_rows,
)
from kubesched.plugins.inter_pod_affinity.terms import (
    NO_LABELS,
    NO_TERMS,
    TERM_CACHE_SIZE,
    AffinityTerm,
    NamespaceLabels,
    PodAffinityTerms,
    all_match,
    compile_pod_terms,
    merge_namespace_selectors,
    parse_error,
)

__all__ = ["InterPodAffinity"]


class InterPodAffinity(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
    RepeatsFailures,
):
    """Pod affinity and anti-affinity, required (Filter) and preferred (Score).

    Filter, in this order, per node:

    1. each required affinity term of the pod needs the node to carry its topology key and the
       node's domain to hold a running pod matching *all* the terms
       (`node(s) didn't match pod affinity rules`, UnschedulableAndUnresolvable) — unless no such
       pod exists anywhere and the pod matches its own terms: it is the first of a self-affine group;
    2. no required anti-affinity term of the pod may have a matching pod in the node's domain
       (`node(s) didn't match pod anti-affinity rules`, Unschedulable);
    3. no running pod's required anti-affinity term may select the pod from a domain the node is
       in (`node(s) didn't satisfy existing pods anti-affinity rules`, Unschedulable).

    Score: per domain, + weight of each preferred affinity term of the pod matching a running
    pod there, - weight for preferred anti-affinity; + `hardPodAffinityWeight` per required
    affinity term of a running pod matching the incoming pod; ± the running pods' preferred terms
    matching the incoming pod (unless `ignorePreferredTermsOfExistingPods`). Min-max normalized.
    """

    name: ClassVar[str] = "InterPodAffinity"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("Namespace",)
    args_type: ClassVar[type[InterPodAffinityArgs]] = InterPodAffinityArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """Unsignable with pod (anti-)affinity: the answer depends on other pods' placement."""
        affinity = pod.spec.affinity
        if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
        ):
            return Status.unschedulable("pods with pod affinity or anti-affinity are not signable")
        return [labels_fragment(pod)]  # other pods' (anti-)affinity terms select it by its labels

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        errors = self.args.validate()  # done by config decoding too; a direct caller gets the same error
        if errors:
            raise errors[0]
        self.handle = handle
        self._cache: dict[str, tuple[Pod, PodAffinityTerms]] = {}
        self._index: TableIndex | None = None

    def _table_index(self, table: NodeTable) -> TableIndex:
        """The remembered counts of `table` (those of a previous table are dropped)."""
        index = self._index
        if index is None or index.table is not table:
            index = self._index = TableIndex(table, self.terms_of)
        index.groups.sync()
        return index

    def terms_of(self, pod: Pod) -> PodAffinityTerms:
        """The pod's compiled terms, compiled once per pod object (a new object is recompiled)."""
        affinity = pod.spec.affinity
        if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
            return NO_TERMS
        key = pod_key(pod)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        terms = compile_pod_terms(pod)
        if hit is None and len(self._cache) >= TERM_CACHE_SIZE:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = (pod, terms)
        return terms

    def _incoming_terms(self, pod: Pod) -> PodAffinityTerms:
        """The incoming pod's terms with namespace selectors folded into namespace sets."""
        t = self.terms_of(pod)
        if t.errors or t is NO_TERMS:  # nothing to fold (most pods have no affinity at all)
            return t
        listed: list[Namespace] | None = None
        req, listed = merge_namespace_selectors(t.required_affinity, listed, self.handle)
        anti, listed = merge_namespace_selectors(t.required_anti_affinity, listed, self.handle)
        weights = [w for w, _ in t.preferred_affinity]
        pref, listed = merge_namespace_selectors(
            tuple(x for _, x in t.preferred_affinity), listed, self.handle
        )
        anti_weights = [w for w, _ in t.preferred_anti_affinity]
        pref_anti, listed = merge_namespace_selectors(
            tuple(x for _, x in t.preferred_anti_affinity), listed, self.handle
        )
        return PodAffinityTerms(
            req,
            anti,
            tuple(zip(weights, pref, strict=True)),
            tuple(zip(anti_weights, pref_anti, strict=True)),
        )

    # PreFilter
    def _compute_pre_filter(self, pod: Pod, table: NodeTable) -> PreFilterState | Status:
        terms = self._incoming_terms(pod)
        if terms.errors:
            return Status.unschedulable_and_unresolvable(parse_error(terms))
        ns_labels = NamespaceLabels(self.handle, pod.metadata.namespace)
        return count_pre_filter(pod, terms, ns_labels, self._table_index(table))

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """`RepeatableFailurePlugin`: only when PreFilter skipped and would still skip at once on
        `table`; otherwise the verdicts depend on pods on other nodes."""
        return self.name in state.skip_filter_plugins and self._skips_at_once(pod, table)

    def _skips_at_once(self, pod: Pod, table: NodeTable) -> bool:
        """Nobody has required anti-affinity and the pod has no required terms (nor bad ones): no
        node can be rejected, which is what the full PreFilter computation would conclude."""
        if table.required_anti_affinity_total:
            return False
        terms = self.terms_of(pod)
        return not terms.errors and not terms.has_required

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        if self._skips_at_once(pod, nodes.table):
            return None, Status.skip()
        computed = self._compute_pre_filter(pod, nodes.table)
        if isinstance(computed, Status):
            return None, computed
        if not computed.relevant:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, computed)
        return None, None

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | Status:
        """What PreFilter wrote; without it upstream's error (it is never worked out here)."""
        return pre_filter_state(
            state,
            PRE_FILTER_STATE_KEY,
            PreFilterState,
            missing_state_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'),
            keep=False,
        )

    # PreFilter extensions: nominated pods and preemption victims
    def _update_with_pod(
        self, state: CycleState, pi: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        update_with_pod(s, pi, node_info, delta, self.terms_of)
        return None

    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod_info_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod_info_to_remove, node_info, -1)

    # Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        return filter_node(s, node_info)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return BatchFilterResult.all_fail(len(nodes), s)
        return filter_rows(s, nodes)

    # PreScore / Score
    def _compute_pre_score(self, pod: Pod, table: NodeTable) -> PreScoreState | Status:
        """The per-domain score sums; Skip (a Status) when nothing can contribute."""
        if self.args.ignore_preferred_terms_of_existing_pods and not has_preferred_terms(pod):
            return Status.skip()
        terms = self._incoming_terms(pod)
        if terms is NO_TERMS and not table.affinity_total:
            # No term of its own and no running pod with any: nothing can touch a node, which is
            # what the count below would find, after building its state (most pods, most cycles).
            return Status.skip()
        if terms.errors:
            return Status.as_error(f"failed to {parse_error(terms)}")
        ns_labels = NamespaceLabels(self.handle, pod.metadata.namespace)
        return count_pre_score(pod, terms, ns_labels, self._table_index(table), self.args)

    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        if len(nodes) == 0:
            return Status.skip()
        computed = self._compute_pre_score(pod, nodes.table)
        if isinstance(computed, PreScoreState):
            state.write(PRE_SCORE_STATE_KEY, computed)
            return None
        return computed

    def _pre_score_state(
        self, state: CycleState, pod: Pod, table: NodeTable | None
    ) -> PreScoreState | Status:
        """The PreScore state; computed here (and kept) when PreScore is not enabled.

        A Skip from the computation means every node scores 0, so an empty state stands for it.
        """
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            return s
        if self.handle is not None:
            table = self.handle.snapshot
        if table is None:
            return Status.as_error("InterPodAffinity needs its PreScore state or the node snapshot")
        computed = self._compute_pre_score(pod, table)
        if isinstance(computed, Status) and not computed.is_skip():
            return computed
        kept = computed if isinstance(computed, PreScoreState) else PreScoreState(DomainCounts(table), False)
        state.write(PRE_SCORE_STATE_KEY, kept)
        return kept

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        s = self._pre_score_state(state, pod, None)
        if isinstance(s, Status):
            return 0, s
        return score_node(s, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._pre_score_state(state, pod, nodes.table)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        return score_rows(s, nodes)

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        """Min-max onto [0, 100] (`scoring.normalize`), when PreScore found something to score."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or not s.touched or scores.size == 0:
            return None
        normalize(scores)
        return None

    # queueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: bound pods appearing, leaving or relabelled change what the terms match;
        the pending pod relabelled may now match its own affinity; a node added or relabelled
        may open (or, for anti-affinity, move) a domain."""
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
                ),
                self._pod_event_hint,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_LABEL), always_queue
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._node_event_hint,
            ),
        ]

    def _pod_event_hint(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """As v1.37.2: may this bound pod's event let `pod` (rejected by this plugin) pass now?

        Pods neither bound nor nominated are skipped. An added pod helps if it matches all of the
        pod's affinity terms; a relabelled one if it now does and did not, or no longer matches an
        anti-affinity term it matched; a deleted one if it matched an anti-affinity term or had an
        anti-affinity term matching `pod`. Terms match as upstream's hints match them: by the
        namespaces they list, or a namespace selector that selects an unlabelled namespace.
        """
        if not isinstance(old_obj, Pod | None) or not isinstance(new_obj, Pod | None):
            return QueueingHint.QUEUE
        if any(
            p is not None and not (p.spec.node_name or p.status.nominated_node_name)
            for p in (old_obj, new_obj)
        ):
            return QueueingHint.SKIP
        terms = self.terms_of(pod)
        if terms.errors:
            return QueueingHint.QUEUE
        req, anti = terms.required_affinity, terms.required_anti_affinity
        if new_obj is not None:
            if old_obj is None:
                return QueueingHint.QUEUE if all_match(req, new_obj) else QueueingHint.SKIP
            helps = (not all_match(req, old_obj) and all_match(req, new_obj)) or (
                _matches_any(anti, old_obj) and not _matches_any(anti, new_obj)
            )
            return QueueingHint.QUEUE if helps else QueueingHint.SKIP
        if old_obj is None:
            return QueueingHint.QUEUE
        if _matches_any(anti, old_obj):
            return QueueingHint.QUEUE
        theirs = self.terms_of(old_obj)
        if theirs.errors:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if _matches_any(theirs.required_anti_affinity, pod) else QueueingHint.SKIP

    def _node_event_hint(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """As v1.37.2: queue when an added node carries an affinity term's topology key, or an
        updated one gains it or changes its value; for anti-affinity, when a node is added, or an
        updated one loses a term's key or changes its value."""
        if not isinstance(new_obj, Node) or not isinstance(old_obj, Node | None):
            return QueueingHint.QUEUE
        terms = self.terms_of(pod)
        if terms.errors:
            return QueueingHint.QUEUE
        after = new_obj.metadata.labels
        before = old_obj.metadata.labels if old_obj is not None else None
        for t in terms.required_affinity:
            key = t.topology_key
            if before is None:
                if key in after:
                    return QueueingHint.QUEUE
            elif key in after and (key not in before or before[key] != after[key]):
                return QueueingHint.QUEUE
        for t in terms.required_anti_affinity:
            key = t.topology_key
            if before is None or (key in before and (key not in after or before[key] != after[key])):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _matches_any(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    return any(t.matches(pod, NO_LABELS) for t in terms)
