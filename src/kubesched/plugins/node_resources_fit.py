"""NodeResourcesFit: does the pod's request fit what is left on the node, and how full would it be.

Filter (upstream `pkg/scheduler/framework/plugins/noderesources/fit.go`): a node fails with `Too many pods`
when it already runs its allowed number of pods, and with one `Insufficient <resource>` reason per resource
whose free amount (allocatable minus the *real* requests of the pods already there) is below the pod's
request. Extended resources listed in `ignoredResources`, or whose domain is in `ignoredResourceGroups`, are
left to someone else (typically an extender); so is an extended resource a DeviceClass backs, on a node whose
allocatable lacks it (DynamicResources allocates it from ResourceSlices). As in v1.37, a node whose total
allocatable is below the request can never fit, so its status is UnschedulableAndUnresolvable and preemption
skips it.

Score (upstream `pkg/scheduler/framework/plugins/noderesources/resource_allocation.go`): LeastAllocated,
MostAllocated or RequestedToCapacityRatio over the configured resources, where cpu and memory count the 100m /
200Mi defaults for containers that request nothing, so that best-effort pods still spread.

PlacementScore (TopologyAwareWorkloadScheduling): a placement where a pod group fitted scores how full
its nodes, taken as one, would be with the group's members proposed there, MostAllocated over the
configured resources whatever the node-scoring strategy (upstream's placement scorer), so the fuller
of two placements that hold the group alike wins.

The helpers that compute per-resource (allocatable, requested) pairs are shared with
NodeResourcesBalancedAllocation, as upstream's `resourceAllocationScorer` is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import DeviceClass
from kubesched.api.resources import (
    is_scalar_resource,
    pod_container_non_zero_requests,
    pod_requests,
)
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.errors import FieldErrors
from kubesched.framework.cycle_state import CycleState, pre_filter_state
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
    PlacementScorePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    RepeatsFailures,
    ScorePlugin,
)
from kubesched.framework.node_info import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, NodeInfo, node_allocatable
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.placement import PodGroupAssignments
from kubesched.framework.row_scores import RowScores
from kubesched.framework.signature import SignFragment, requests_fragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.dynamic_resources.extended import BackingClasses, backing_classes
from kubesched.plugins.node_resources_fit_args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "TOO_MANY_PODS",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "broken_linear",
    "insufficient_reason",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TOO_MANY_PODS = "Too many pods"
PRE_FILTER_STATE_KEY = "PreFilterNodeResourcesFit"
PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesFit"


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


# --------------------------------------------------------------------------- resource helpers


def is_extended_resource(name: str) -> bool:
    """`domain/name` outside the `kubernetes.io/` namespace (upstream `IsExtendedResourceName`)."""
    return "/" in name and "kubernetes.io/" not in name and is_scalar_resource(name)


def score_pod_requests(pod: Pod, resources: Sequence[str], *, non_zero: bool) -> list[int]:
    """The pod's request of each scored resource.

    `non_zero` is NodeResourcesFit's view: the containers' requests with 100m / 200Mi for a missing
    cpu / memory, ignoring pod-level `spec.resources` (as v1.37.2's Fit scorer does). Without it,
    BalancedAllocation's view: the pod's real requests, pod-level ones included.
    """
    requests = pod_container_non_zero_requests(pod) if non_zero else pod_requests(pod)
    return [requests.get(name, 0) for name in resources]


def node_allocatable_requested(
    ni: NodeInfo, name: str, pod_request: int, *, non_zero: bool
) -> tuple[int, int]:
    """(allocatable, requested including the pod) of one resource; (0, 0) means "do not score it".

    An extended/scalar resource the pod does not request is skipped, so nodes with special hardware
    are not penalised for pods that do not need it. `non_zero` uses NonZeroRequested for cpu/memory.
    """
    if name == CPU:
        used = ni.non_zero_cpu if non_zero else ni.requested.get(CPU, 0)
    elif name == MEMORY:
        used = ni.non_zero_memory if non_zero else ni.requested.get(MEMORY, 0)
    elif name == EPHEMERAL_STORAGE or (is_scalar_resource(name) and pod_request != 0):
        used = ni.requested.get(name, 0)
    else:
        return 0, 0
    return ni.allocatable.get(name, 0), used + pod_request


def table_allocatable_requested(
    nodes: NodeSet, name: str, pod_request: int, *, non_zero: bool
) -> tuple[IntArray, IntArray]:
    """`node_allocatable_requested` for every row of `nodes` (allocatable 0 where not scored).

    The allocatable array may be a view of the table (for a full NodeSet): read it, never write it.
    """
    table = nodes.table
    if name not in (CPU, MEMORY, EPHEMERAL_STORAGE) and not (is_scalar_resource(name) and pod_request != 0):
        zeros = np.zeros(len(nodes), dtype=np.int64)
        return zeros, zeros
    col = table.resource_index.get(name)
    if non_zero and name in (CPU, MEMORY):
        used = nodes.column(table.non_zero_requested, 0 if name == CPU else 1)
    elif col is not None:
        used = nodes.column(table.requested, col)
    else:
        used = np.zeros(len(nodes), dtype=np.int64)
    alloc = nodes.column(table.allocatable, col) if col is not None else np.zeros(len(nodes), dtype=np.int64)
    return alloc, used + pod_request


# --------------------------------------------------------------------------- scorers


def _trunc_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's `/` does."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _trunc_div_array(a: IntArray, b: IntArray) -> IntArray:
    q: IntArray = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (b > 0), q, -q)


def broken_linear(us: Sequence[int], ss: Sequence[int], u: int) -> int:
    """Upstream's `BuildBrokenLinearFunction` at utilization `u`: the score of the shape points
    (utilizations `us`, scores `ss` already scaled to 0..100), interpolated with Go's truncation."""
    for i, point in enumerate(us):
        if u <= point:
            if i == 0:
                return ss[0]
            return ss[i - 1] + _trunc_div((ss[i] - ss[i - 1]) * (u - us[i - 1]), point - us[i - 1])
    return ss[-1]


def _round_half_up(total: int, weights: int) -> int:
    """`round(total / weights)` with halves away from zero (Go `math.Round`), exactly in integers."""
    return (2 * total + weights) // (2 * weights)


class _Scorer:
    """One scoring strategy, computed both for one node (ints) and for a NodeSet (numpy)."""

    def __init__(self, strategy: ScoringStrategy) -> None:
        self.type = strategy.type
        self.names = [r.name for r in strategy.resources]
        self.weights = [r.weight for r in strategy.resources]
        ratio = strategy.requested_to_capacity_ratio
        shape = ratio.shape if ratio is not None else []
        self.shape_u = [p.utilization for p in shape]
        self.shape_s = [p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for p in shape]
        self._shape_u = np.asarray(self.shape_u, dtype=np.int64)
        self._shape_s = np.asarray(self.shape_s, dtype=np.int64)

    # -- one node
    def resource_score(self, requested: int, capacity: int) -> int:
        if self.type == LEAST_ALLOCATED:
            return 0 if requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity
        if self.type == MOST_ALLOCATED:
            return min(requested, capacity) * MAX_NODE_SCORE // capacity
        u = MAX_UTILIZATION if requested > capacity else requested * MAX_UTILIZATION // capacity
        return self._broken_linear(u)

    def _broken_linear(self, u: int) -> int:
        return broken_linear(self.shape_u, self.shape_s, u)

    def combine(self, pairs: Sequence[tuple[int, int, int]]) -> int:
        """Weighted average of (allocatable, requested, weight) triples with allocatable > 0."""
        total = weight_sum = 0
        ratio = self.type == REQUESTED_TO_CAPACITY_RATIO
        for alloc, req, w in pairs:
            s = self.resource_score(req, alloc)
            if ratio and s <= 0:
                continue  # RequestedToCapacityRatio averages only over resources that score
            total += s * w
            weight_sum += w
        if weight_sum == 0:
            return 0
        return _round_half_up(total, weight_sum) if ratio else total // weight_sum

    # -- a NodeSet
    def resource_scores(self, requested: IntArray, capacity: IntArray) -> IntArray:
        """Per-node resource score; rows with capacity 0 get garbage the caller masks out."""
        cap = np.where(capacity == 0, 1, capacity)
        if self.type == LEAST_ALLOCATED:
            return np.where(requested > capacity, 0, (cap - requested) * MAX_NODE_SCORE // cap)
        if self.type == MOST_ALLOCATED:
            return np.minimum(requested, cap) * MAX_NODE_SCORE // cap
        u = np.where(requested > capacity, MAX_UTILIZATION, requested * MAX_UTILIZATION // cap)
        return self._broken_linear_array(u)

    def _broken_linear_array(self, u: IntArray) -> IntArray:
        us, ss = self._shape_u, self._shape_s
        idx = np.searchsorted(us, u, side="left")  # first point with u <= utilization
        last = len(us)
        hi = np.minimum(idx, last - 1)
        lo = np.maximum(hi - 1, 0)
        span = np.where(hi == lo, 1, us[hi] - us[lo])
        interp = ss[lo] + _trunc_div_array((ss[hi] - ss[lo]) * (u - us[lo]), span)
        out: IntArray = np.where(idx >= last, ss[-1], np.where(idx == 0, ss[0], interp))
        return out

    def combine_arrays(self, pairs: Sequence[tuple[IntArray, IntArray, int]], n: int) -> IntArray:
        ratio = self.type == REQUESTED_TO_CAPACITY_RATIO
        if not ratio and all(bool(alloc.all()) for alloc, _, _ in pairs):
            return self._combine_all_counted(pairs, n)
        total = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for alloc, req, w in pairs:
            s = self.resource_scores(req, alloc)
            counted = alloc != 0
            if ratio:
                counted &= s > 0
            total += np.where(counted, s * w, 0)
            weight_sum += np.where(counted, w, 0)
        ws = np.where(weight_sum == 0, 1, weight_sum)
        avg = (2 * total + ws) // (2 * ws) if ratio else total // ws
        return np.where(weight_sum == 0, 0, avg).astype(np.int64)

    def _combine_all_counted(self, pairs: Sequence[tuple[IntArray, IntArray, int]], n: int) -> IntArray:
        """`combine_arrays` of LeastAllocated / MostAllocated when every node has every resource:
        every resource counts everywhere, so the average is `sum(score * weight) // sum(weights)`."""
        if not pairs:
            return np.zeros(n, dtype=np.int64)
        total: IntArray | None = None
        weights = 0
        for alloc, req, w in pairs:
            # LeastAllocated scores 0 when the request exceeds the capacity: max(free, 0) is 0 there.
            s = np.maximum(alloc - req, 0) if self.type == LEAST_ALLOCATED else np.minimum(req, alloc)
            s *= MAX_NODE_SCORE
            s //= alloc
            if w != 1:
                s *= w
            if total is None:
                total = s
            else:
                total += s
            weights += w
        assert total is not None
        if weights != 1:
            total //= weights
        return total


# --------------------------------------------------------------------------- cycle state

_BUILTIN = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The pod's request, and the (resource, amount) pairs Filter compares, in reason order."""

    requests: Mapping[str, int]
    checks: tuple[tuple[str, int], ...]
    #: checked resources a DeviceClass backs: DynamicResources serves them where nodes lack them
    dra_backed: frozenset[str] = frozenset()

    def clone(self) -> _PreFilterState:
        return self


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """The pod's request of each scored resource (aligned with scoringStrategy.resources)."""

    pod_requests: tuple[int, ...]

    def clone(self) -> _PreScoreState:
        return self


# --------------------------------------------------------------------------- plugin


class NodeResourcesFit(
    PreFilterPlugin,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    PlacementScorePlugin,
    EnqueueExtensions,
    RepeatsFailures,
):
    """Filter nodes without room for the pod's request; score nodes by how allocated they would be."""

    name: ClassVar[str] = "NodeResourcesFit"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("DeviceClass",)
    args_type: ClassVar[type[NodeResourcesFitArgs]] = NodeResourcesFitArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [requests_fragment(pod)]

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else NodeResourcesFitArgs()
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self.handle = handle
        self.ignored_resources = frozenset(self.args.ignored_resources)
        self._row_scores = RowScores()
        self.ignored_groups = frozenset(self.args.ignored_resource_groups)
        self.scorer = _Scorer(self.args.scoring_strategy)

    # ------------------------------------------------------------------ PreFilter / Filter
    def _compute_pre_filter(self, pod: Pod) -> _PreFilterState:
        requests = pod_requests(pod)
        checks = [(r, requests[r]) for r in (CPU, MEMORY, EPHEMERAL_STORAGE) if requests.get(r, 0) > 0]
        for r in sorted(requests):
            amount = requests[r]
            if amount <= 0 or r in (CPU, MEMORY, EPHEMERAL_STORAGE) or not is_scalar_resource(r):
                continue
            if is_extended_resource(r) and (
                r in self.ignored_resources or r.partition("/")[0] in self.ignored_groups
            ):
                continue  # someone else (an extender, a device plugin controller) accounts for it
            checks.append((r, amount))
        scalar = [r for r, _ in checks if r not in _BUILTIN]
        classes = self._dra_classes() if scalar else None
        backed = frozenset(r for r in scalar if classes is not None and classes.get(r) is not None)
        return _PreFilterState(requests, tuple(checks), backed)

    def _dra_classes(self) -> BackingClasses:
        classes = self.handle.lister("DeviceClass") if self.handle is not None else ()
        return backing_classes(classes)

    def _pre_filter_state(self, state: CycleState, pod: Pod) -> _PreFilterState:
        found = state.get(PRE_FILTER_STATE_KEY)
        if type(found) is _PreFilterState:  # PreFilter wrote it: Filter asks once per node
            return found
        return pre_filter_state(
            state, PRE_FILTER_STATE_KEY, _PreFilterState, lambda: self._compute_pre_filter(pod), keep=True
        )

    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        state.write(PRE_FILTER_STATE_KEY, self._compute_pre_filter(pod))
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state, pod)
        reasons: list[str] = []
        if len(node_info.pods) + 1 > node_info.allowed_pod_number:
            reasons.append(TOO_MANY_PODS)
        unresolvable = False
        alloc, used = node_info.allocatable, node_info.requested
        for resource, amount in s.checks:
            total = alloc.get(resource, 0)
            if total == 0 and resource in s.dra_backed:
                continue  # no device plugin serves it here: DynamicResources allocates it from DRA
            if amount > total - used.get(resource, 0):
                reasons.append(insufficient_reason(resource))
                unresolvable = unresolvable or amount > total
        if not reasons:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, *reasons)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        s = self._pre_filter_state(state, pod)
        table = nodes.table
        n = len(nodes)
        # Cheap pass first: usually every node fits, and then no reason needs building.
        too_many = nodes.gather(table.pod_count) >= nodes.gather(table.allowed_pods)
        shorts: list[BoolArray | None] = []
        fails = too_many
        for resource, amount in s.checks:
            col = table.resource_index.get(resource)
            backed = resource in s.dra_backed
            if col is None:  # no node has it: allocatable 0 everywhere
                if backed:
                    shorts.append(np.zeros(n, dtype=np.bool_))
                    continue
                shorts.append(None)
                fails = np.ones(n, dtype=np.bool_)
                continue
            total = nodes.column(table.allocatable, col)
            short = amount > total - nodes.column(table.requested, col)
            if backed:
                short &= total != 0  # nodes without it leave it to DynamicResources
            shorts.append(short)
            fails = fails | short
        if not fails.any():
            return BatchFilterResult.all_pass(n)
        labels = [TOO_MANY_PODS, *(insufficient_reason(r) for r, _ in s.checks)]
        # One column per possible reason, plus a last one for "can never fit".
        matrix = np.zeros((n, len(labels) + 1), dtype=np.bool_)
        matrix[:, 0] = too_many
        for k, ((resource, amount), shortage) in enumerate(zip(s.checks, shorts, strict=True), start=1):
            if shortage is None:
                matrix[:, k] = True
                matrix[:, -1] = True
                continue
            col = table.resource_index.get(resource)
            if col is None:  # DRA-backed, on no node's allocatable: never short here
                continue
            total = nodes.column(table.allocatable, col)
            matrix[:, k] = shortage
            matrix[:, -1] |= shortage & (amount > total)
        failing = np.flatnonzero(fails)
        codes = np.full(n, -1, dtype=np.int32)
        combos, inverse = _unique_rows(matrix[failing])
        codes[failing] = inverse
        statuses = [
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE if combo[-1] else Code.UNSCHEDULABLE,
                *(label for label, bad in zip(labels, combo[:-1], strict=True) if bad),
            )
            for combo in combos
        ]
        return BatchFilterResult(codes, statuses)

    # ------------------------------------------------------------------ PreScore / Score
    def _pre_score_state(self, state: CycleState, pod: Pod) -> _PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        computed = _PreScoreState(tuple(score_pod_requests(pod, self.scorer.names, non_zero=True)))
        state.write(PRE_SCORE_STATE_KEY, computed)
        return computed

    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        state.write(
            PRE_SCORE_STATE_KEY,
            _PreScoreState(tuple(score_pod_requests(pod, self.scorer.names, non_zero=True))),
        )
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = self._pre_score_state(state, pod)
        pairs: list[tuple[int, int, int]] = []
        for name, w, pod_request in zip(self.scorer.names, self.scorer.weights, s.pod_requests, strict=True):
            alloc, req = node_allocatable_requested(node_info, name, pod_request, non_zero=True)
            if alloc != 0:
                pairs.append((alloc, req, w))
        return self.scorer.combine(pairs)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
        """`score` for every node; rows whose pods did not change since a pod of the same requests
        are not computed again (a node's score depends on its row and the pod's requests only)."""
        s = self._pre_score_state(state, pod)
        return self._row_scores.scores(
            nodes,
            s.pod_requests,
            lambda rows: self._score_rows(s, rows),
            lambda ni: self.score(state, pod, ni),
        )

    def _score_rows(self, s: _PreScoreState, nodes: NodeSet) -> IntArray:
        pairs = [
            (*table_allocatable_requested(nodes, name, pod_request, non_zero=True), w)
            for name, w, pod_request in zip(
                self.scorer.names, self.scorer.weights, s.pod_requests, strict=True
            )
        ]
        return self.scorer.combine_arrays(pairs, len(nodes))

    # ------------------------------------------------------------------ PlacementScore
    def score_placement(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, assignments: PodGroupAssignments
    ) -> int:
        """MostAllocated over the placement's nodes as one, the proposed members included."""
        names, weights = self.scorer.names, self.scorer.weights
        group = [0] * len(names)
        for proposed in assignments.proposed:
            for i, request in enumerate(score_pod_requests(proposed.pod, names, non_zero=True)):
                group[i] += request
        nodes = assignments.placement.nodes
        total = weight_sum = 0
        for name, weight, request in zip(names, weights, group, strict=True):
            # A scalar resource the group does not request is skipped on every node, as upstream.
            allocatable, used = table_allocatable_requested(nodes, name, request, non_zero=True)
            counted = allocatable != 0
            capacity = int(allocatable[counted].sum())
            if capacity == 0:
                continue
            requested = request + int((used[counted] - request).sum())
            total += min(requested, capacity) * MAX_NODE_SCORE // capacity * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    # ------------------------------------------------------------------ queueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2 with its default gates (DRAExtendedResource and InPlacePodVerticalScaling
        on): a deleted bound pod frees resources; a new or grown node adds them; a DeviceClass may
        start backing an extended resource the pod requests; a bound pod scaled down frees some,
        and the pending pod scaled down needs less."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE), self._after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self._after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                _after_device_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                _after_assigned_pod_scale_down,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN), always_queue
            ),
        ]

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        """As v1.37.2: any bound (or nominated) pod deleted may make room, whatever it requested;
        a pod that was neither held no room."""
        if (
            new is None
            and isinstance(old, Pod)
            and not old.spec.node_name
            and not old.status.nominated_node_name
        ):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def _after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """As v1.37.2: a node the pod would not fit even empty cannot help; an updated node helps
        only if it now allows more pods or more of something the pod requests."""
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        if self.filter(CycleState(), pod, NodeInfo(new)) is not None:
            return QueueingHint.SKIP
        if not isinstance(old, Node):
            return QueueingHint.QUEUE
        before, after = node_allocatable(old), node_allocatable(new)
        if after.get(PODS, 0) > before.get(PODS, 0):
            return QueueingHint.QUEUE
        for resource, amount in self._compute_pre_filter(pod).requests.items():
            if amount > 0 and resource != PODS and after.get(resource, 0) > before.get(resource, 0):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _after_assigned_pod_scale_down(pod: Pod, old: object, new: object) -> QueueingHint:
    """As v1.37.2: queue when a bound pod now requests less of a resource the pod requests."""
    if not isinstance(old, Pod) or not isinstance(new, Pod):
        return QueueingHint.QUEUE
    if not new.spec.node_name:
        return QueueingHint.SKIP
    before, after = pod_requests(old), pod_requests(new)
    for name, amount in pod_requests(pod).items():
        if amount and name != PODS and before.get(name, 0) > after.get(name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


#: The resource name under which a pod may request devices of a class by the class's name.
_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def _after_device_class_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """As v1.37.2: queue for a class the pod requests by name (when added), or whose extended
    resource name changed to one the pod requests; an update that keeps the name is skipped."""
    if not isinstance(new, DeviceClass) or not isinstance(old, DeviceClass | None):
        return QueueingHint.QUEUE
    wanted = pod_requests(pod)
    name = new.spec.extended_resource_name or ""
    if old is not None:
        if (old.spec.extended_resource_name or "") == name:
            return QueueingHint.SKIP
    elif _DEVICE_CLASS_PREFIX + new.metadata.name in wanted:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if name and name in wanted else QueueingHint.SKIP


#: Up to this many reason columns, distinct reason sets are found with a table of 2**bits entries.
_COUNTED_KEY_BITS = 12


def _unique_rows(matrix: BoolArray) -> tuple[list[list[bool]], npt.NDArray[np.intp]]:
    """Distinct rows of a boolean matrix and, per input row, the index of its distinct row.

    Rows are packed into one int64 key when they fit (the common case: a handful of reasons), so
    grouping thousands of failing nodes costs one `np.unique` over integers.
    """
    width = matrix.shape[1]
    if width <= 62:
        weights = np.left_shift(np.int64(1), np.arange(width, dtype=np.int64))
        keys = matrix.astype(np.int64) @ weights
        if width <= _COUNTED_KEY_BITS:
            # Few possible keys: a table of them instead of a sort (what np.unique would do).
            present = np.bincount(keys, minlength=1 << width) > 0
            uniq = np.flatnonzero(present)
            position = np.cumsum(present) - 1
            inverse = position[keys]
        else:
            uniq, inverse = np.unique(keys, return_inverse=True)
        combos = [[bool((int(key) >> b) & 1) for b in range(width)] for key in uniq]
        return combos, inverse.reshape(-1)
    uniq_rows, inverse = np.unique(matrix, axis=0, return_inverse=True)
    return [[bool(v) for v in row] for row in uniq_rows], inverse.reshape(-1)
