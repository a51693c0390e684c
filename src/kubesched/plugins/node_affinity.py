"""NodeAffinity: a pod's `nodeSelector` and node affinity, plus scheduler-enforced `addedAffinity`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import msgspec
import numpy as np

from kubesched.api.meta import NodeSelector
from kubesched.api.objects import Node, Pod, PreferredSchedulingTerm
from kubesched.api.objects import NodeAffinity as NodeAffinitySpec
from kubesched.api.selectors import NodeSelectorMatcher, RequiredNodeAffinity, compile_node_selector
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState, pre_filter_state
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    RepeatsFailures,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, BoolArray, NodeSet
from kubesched.framework.normalize import default_normalize_score
from kubesched.framework.signature import SignFragment, affinity_fragment, node_selector_fragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins._node_selector_batch import (
    BatchNodeSelector,
    BatchNodeSelectorTerm,
    node_selector_map_mask,
)

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NodeAffinity",
    "NodeAffinityArgs",
]

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

PRE_FILTER_STATE_KEY = "PreFilterNodeAffinity"
PRE_SCORE_STATE_KEY = "PreScoreNodeAffinity"

_ADDED = "addedAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_POD_PREFERRED_PATH = f"spec.affinity.nodeAffinity.{_PREFERRED}"
_NAME_FIELD = "metadata.name"


class NodeAffinityArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, frozen=True):
    """pluginConfig args: `addedAffinity` applies to every pod of the profile, on top of its own."""

    added_affinity: NodeAffinitySpec | None = None

    def validate(self) -> list[InputError]:
        """Every term must be a valid node selector term (keys, operators, values); weights 1..100."""
        added = self.added_affinity
        if added is None:
            return []
        errors: list[InputError] = []
        required = added.required_during_scheduling_ignored_during_execution
        if required is not None:
            errors += compile_node_selector(required, path=f"{_ADDED}.{_REQUIRED}").errors
        for i, term in enumerate(added.preferred_during_scheduling_ignored_during_execution):
            path = f"{_ADDED}.{_PREFERRED}[{i}]"
            if not 1 <= term.weight <= 100:
                errors.append(InputError("must be in the range 1-100", path=f"{path}.weight"))
            errors += _preferred_term_errors(term, path)
        return errors


def _preferred_term_errors(term: PreferredSchedulingTerm, path: str) -> list[InputError]:
    """Validation errors of one preferred term's `preference`, located under `path`."""
    selector = NodeSelector(node_selector_terms=[term.preference])
    prefix = "nodeSelectorTerms[0]"
    return [
        InputError(e.message, path=f"{path}.preference{e.path.removeprefix(prefix)}")
        for e in compile_node_selector(selector).errors
    ]


class _PreferredTerms:
    """Weighted preferred terms, compiled for both forms; weight-0 and empty terms are dropped."""

    __slots__ = ("_batch", "_terms")

    def __init__(self, terms: list[PreferredSchedulingTerm], path: str) -> None:
        kept: list[PreferredSchedulingTerm] = []
        for i, t in enumerate(terms):
            if t.weight == 0 or not (t.preference.match_expressions or t.preference.match_fields):
                continue  # contributes nothing, so (as upstream) it is not even parsed
            errors = _preferred_term_errors(t, f"{path}[{i}]")
            if errors:
                raise errors[0]
            kept.append(t)
        self._terms: list[tuple[int, NodeSelectorMatcher]] = [
            (t.weight, compile_node_selector(NodeSelector(node_selector_terms=[t.preference]))) for t in kept
        ]
        self._batch = [(t.weight, BatchNodeSelectorTerm(t.preference)) for t in kept]

    def score(self, node_info: NodeInfo) -> int:
        name, labels = node_info.name, node_info.labels
        return sum(weight for weight, matcher in self._terms if matcher.matches(name, labels))

    def score_nodes(self, nodes: NodeSet) -> Scores:
        scores = np.zeros(len(nodes), dtype=np.int64)
        for weight, term in self._batch:
            scores += weight * term.mask(nodes)
        return scores


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The pod's nodeSelector AND required node affinity, compiled for both filter forms."""

    required: RequiredNodeAffinity
    node_selector: dict[str, str]
    batch_affinity: BatchNodeSelector | None

    @classmethod
    def of(cls, pod: Pod) -> _PreFilterState:
        required = _required_selector(pod)
        return cls(
            RequiredNodeAffinity(pod),
            dict(pod.spec.node_selector),
            BatchNodeSelector(required) if required is not None else None,
        )

    def clone(self) -> _PreFilterState:
        return self

    def mask(self, nodes: NodeSet) -> BoolArray:
        result = node_selector_map_mask(self.node_selector, nodes)
        if self.batch_affinity is not None:
            result &= self.batch_affinity.mask(nodes)
        return result


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: _PreferredTerms | None

    def clone(self) -> _PreScoreState:
        return self


def _required_selector(pod: Pod) -> NodeSelector | None:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    return affinity.node_affinity.required_during_scheduling_ignored_during_execution


def _pod_preferred(pod: Pod) -> _PreferredTerms | None:
    """The pod's preferred terms; raises InputError if one is invalid (upstream: an Error status)."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    terms = affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    return _PreferredTerms(terms, _POD_PREFERRED_PATH) if terms else None


def _node_names_of(selector: NodeSelector) -> set[str] | None:
    """Node names the terms restrict the pod to through `metadata.name In [...]`; None = any node.

    Requirements of a term are ANDed (names intersected), terms ORed (unioned); a single term
    without such a requirement lets every node through.
    """
    names: set[str] = set()
    for term in selector.node_selector_terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == _NAME_FIELD and req.operator == "In":
                values = set(req.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return names


class NodeAffinity(
    PreFilterPlugin,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
    RepeatsFailures,
):
    """Filter and score nodes by the pod's `nodeSelector` and node affinity.

    PreFilter skips pods with no nodeSelector, no required affinity and no `addedAffinity`, and
    narrows the candidates to the names in `matchFields: metadata.name In [...]` when every
    required term names nodes that way. Filter rejects (UnschedulableAndUnresolvable) nodes that
    miss `addedAffinity`, then nodes that miss the nodeSelector or all required terms. Score sums
    the weights of the matching preferred terms (the pod's and `addedAffinity`'s), normalized so
    the best node gets 100.
    """

    name: ClassVar[str] = "NodeAffinity"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()
    args_type: ClassVar[type[NodeAffinityArgs]] = NodeAffinityArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [affinity_fragment(pod), node_selector_fragment(pod)]

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        self.args = args if args is not None else NodeAffinityArgs()
        errors = self.args.validate()  # done by config decoding too; a direct caller gets the same error
        if errors:
            raise errors[0]
        added = self.args.added_affinity
        required = added.required_during_scheduling_ignored_during_execution if added is not None else None
        self._added_required = compile_node_selector(required) if required is not None else None
        self._added_required_batch = BatchNodeSelector(required) if required is not None else None
        preferred = added.preferred_during_scheduling_ignored_during_execution if added is not None else []
        self._added_preferred = _PreferredTerms(preferred, f"{_ADDED}.{_PREFERRED}") if preferred else None

    # -- PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = _required_selector(pod)
        if required is None and self._added_required is None and not pod.spec.node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState.of(pod))
        if required is None or not required.node_selector_terms:
            return None, None
        names = _node_names_of(required)
        if names is None:
            return None, None
        if not names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names)), None

    def _pre_filter_state(self, state: CycleState, pod: Pod) -> _PreFilterState:
        return pre_filter_state(
            state, PRE_FILTER_STATE_KEY, _PreFilterState, lambda: _PreFilterState.of(pod), keep=False
        )

    # -- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        name, labels = node_info.name, node_info.labels
        if self._added_required is not None and not self._added_required.matches(name, labels):
            return Status.unschedulable_and_unresolvable(ERR_REASON_ENFORCED)
        if not self._pre_filter_state(state, pod).required.matches(name, labels):
            return Status.unschedulable_and_unresolvable(ERR_REASON_POD)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        codes = np.full(len(nodes), -1, dtype=np.int32)
        statuses: list[Status] = []
        if self._added_required_batch is not None:
            enforced = self._added_required_batch.mask(nodes)
            codes[~enforced] = 0
            statuses.append(Status.unschedulable_and_unresolvable(ERR_REASON_ENFORCED))
        own = self._pre_filter_state(state, pod).mask(nodes)
        codes[(codes < 0) & ~own] = len(statuses)
        statuses.append(Status.unschedulable_and_unresolvable(ERR_REASON_POD))
        return BatchFilterResult(codes, statuses)

    # -- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        if len(nodes) == 0:
            return None
        try:
            preferred = _pod_preferred(pod)
        except InputError as err:
            return Status.as_error(err)
        if preferred is None and self._added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return None

    def _preferred(self, state: CycleState, pod: Pod) -> _PreferredTerms | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        return s.preferred if isinstance(s, _PreScoreState) else _pod_preferred(pod)  # PreScore disabled

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        try:
            preferred = self._preferred(state, pod)
        except InputError as err:
            return 0, Status.as_error(err)
        total = 0
        if self._added_preferred is not None:
            total += self._added_preferred.score(node_info)
        if preferred is not None:
            total += preferred.score(node_info)
        return total

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        scores = np.zeros(len(nodes), dtype=np.int64)
        if len(nodes) == 0:
            return scores
        preferred = self._preferred(state, pod)  # an invalid term raises; PreScore reported it already
        if self._added_preferred is not None:
            scores += self._added_preferred.score_nodes(nodes)
        if preferred is not None:
            scores += preferred.score_nodes(nodes)
        return scores

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a node added, or relabelled, that now matches what the pod requires."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._after_node_change,
            )
        ]

    def _after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the node matches `addedAffinity` and the pod's nodeSelector and required
        affinity, and (when updated) did not match the pod's before; an unreadable term queues."""
        if not isinstance(new, Node) or not isinstance(old, Node | None):
            return QueueingHint.QUEUE
        name, labels = new.metadata.name, new.metadata.labels
        if self._added_required is not None and not self._added_required.matches(name, labels):
            return QueueingHint.SKIP
        required = RequiredNodeAffinity(pod)
        if required.errors:
            return QueueingHint.QUEUE
        if not required.matches(name, labels):
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        was = required.matches(old.metadata.name, old.metadata.labels)
        return QueueingHint.SKIP if was else QueueingHint.QUEUE
