"""The PodTopologySpread plugin, as upstream's plugin.go: a pod's constraints (its own or the
profile's defaults, with the default selector from Services and controllers), the extension points
wired to `filtering` and `scoring`, and the events and queueing hints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kubesched.api.label_keys import selector_with_label_keys
from kubesched.api.meta import LabelSelector, LabelSelectorRequirement, controller_of
from kubesched.api.objects import Node, Pod
from kubesched.api.selectors import (
    compile_label_selector,
)
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState, missing_state_error, pre_filter_state
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
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
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import (
    BatchFilterResult,
    NodeSet,
    NodeTable,
)
from kubesched.framework.signature import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from kubesched.plugins.pod_topology_spread.common import (
    Constraint,
    PodCounters,
    compile_constraint,
    group_version,
    labels_have_all_keys,
    named,
)
from kubesched.plugins.pod_topology_spread.filtering import (
    PRE_FILTER_STATE_KEY,
    FilterState,
    filter_node,
    filter_rows,
    filter_state,
    update_with_pod,
)
from kubesched.plugins.pod_topology_spread.scoring import (
    PRE_SCORE_STATE_KEY,
    ScoreState,
    normalize,
    score_node,
    score_rows,
    score_state,
)

__all__ = ["PodTopologySpread"]


class StateError(RuntimeError):
    """Filter or Score ran without the state its Pre* point writes (that point was disabled)."""


class PodTopologySpread(
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
    """Filter nodes by the pod's DoNotSchedule spread constraints and score them by its
    ScheduleAnyway ones (or by the profile's default constraints when the pod has none).

    Filter: a node without a constraint's topology key is UnschedulableAndUnresolvable; a node
    whose domain would exceed `maxSkew` over the global minimum (0 while there are fewer than
    `minDomains` domains) is Unschedulable. Score: matching pods per domain, weighted by the log
    of the number of domains, normalized so the least crowded node gets 100.
    """

    name: ClassVar[str] = "PodTopologySpread"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = (
        "Service",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
    )
    args_type: ClassVar[type[PodTopologySpreadArgs]] = PodTopologySpreadArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """Unsignable with spread constraints: its own, or the profile's defaults (System's too)."""
        if pod.spec.topology_spread_constraints:
            return Status.unschedulable("pods with topology constraints are not signable")
        if self._defaults:
            return Status.unschedulable("pods with default topology constraints are not signable")
        return []

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else PodTopologySpreadArgs()
        errors = self.args.validate()  # config decoding validates too; a direct caller gets the same error
        if errors:
            raise errors[0]
        self.handle = handle
        self._system_defaulted = self.args.defaulting_type == SYSTEM_DEFAULTING
        self._defaults: tuple[DefaultConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self._system_defaulted else tuple(self.args.default_constraints)
        )
        self._counters = PodCounters()

    # constraints of a pod
    def _constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's constraints with `whenUnsatisfiable == action`, or the defaults. Raises InputError."""
        spec = pod.spec.topology_spread_constraints
        if spec:
            labels = pod.metadata.labels
            return [
                compile_constraint(
                    c,
                    # v1.37.2 merges the pod's current values again, on top of the API server's
                    # merge at creation (checked on the binary: a label changed since then ANDs both).
                    selector_with_label_keys(c.label_selector, labels, c.match_label_keys),
                    f"spec.topologySpreadConstraints[{i}].labelSelector",
                )
                for i, c in enumerate(spec)
                if c.when_unsatisfiable == action
            ]
        chosen = [c for c in self._defaults if c.when_unsatisfiable == action]
        if not chosen:
            return []
        selector = self._default_selector(pod)
        if selector is None:
            return []
        return [compile_constraint(c, selector, "defaultSelector") for c in chosen]

    def _list(self, kind: str) -> Sequence[Any]:
        return self.handle.lister(kind) if self.handle is not None else ()

    def _default_selector(self, pod: Pod) -> LabelSelector | None:
        """The selector of the Services and the controller selecting the pod; None when empty.

        Services of the pod's namespace whose selector matches the pod's labels contribute their
        selectors; a controlling ReplicationController (v1) its selector, a controlling ReplicaSet
        or StatefulSet (apps/v1) its label selector's requirements, all ANDed.
        """
        labels = pod.metadata.labels
        namespace = pod.metadata.namespace
        match_labels: dict[str, str] = {}
        # A Service selects a pod only through a non-empty selector that the pod's labels carry:
        # a pod without labels needs no listing.
        for svc in self._list("Service") if labels else ():
            selector = svc.spec.selector
            if (
                svc.metadata.namespace == namespace
                and selector
                and all(labels.get(k) == v for k, v in selector.items())
            ):
                match_labels.update(selector)
        expressions: list[LabelSelectorRequirement] = []
        owner = controller_of(pod.metadata)
        gv = group_version(owner.api_version) if owner is not None else None
        if owner is not None and gv == ("", "v1") and owner.kind == "ReplicationController":
            rc = named(self._list("ReplicationController"), namespace, owner.name)
            if rc is not None:
                match_labels.update(rc.spec.selector)
        elif owner is not None and gv == ("apps", "v1") and owner.kind in ("ReplicaSet", "StatefulSet"):
            workload = named(self._list(owner.kind), namespace, owner.name)
            selector = workload.spec.selector if workload is not None else None
            if selector is not None and valid_selector(selector):
                expressions += [
                    LabelSelectorRequirement(key=k, operator="In", values=[v])
                    for k, v in selector.match_labels.items()
                ]
                expressions += selector.match_expressions
        if not match_labels and not expressions:
            return None
        return LabelSelector(match_labels=match_labels, match_expressions=expressions)

    # PreFilter
    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """`RepeatableFailurePlugin`: only when PreFilter skipped (no DoNotSchedule constraint, which
        the pod and the objects decide); otherwise the verdicts count pods on other nodes."""
        return self.name in state.skip_filter_plugins

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except InputError as err:
            return None, Status.as_error(f"get constraints from pod: {err}")
        if not constraints:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, filter_state(pod, constraints, nodes, self._counters))
        return None, None

    def _pre_filter_state(self, state: CycleState) -> FilterState | Status:
        """What PreFilter wrote; without it upstream's error (it is never worked out here)."""
        return pre_filter_state(
            state,
            PRE_FILTER_STATE_KEY,
            FilterState,
            missing_state_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'),
            keep=False,
        )

    # -- PreFilter extensions: keep the counts current for nominated pods and preemption victims
    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_info_to_add, node_info, +1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_info_to_remove, node_info, -1)

    def _update_with_pod(
        self, state: CycleState, pod: Pod, changed: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        update_with_pod(s, pod, changed, node_info, delta)
        return None

    # Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        return filter_node(s, node_info)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """Constraints in order; each node keeps the first failure, as the per-node form returns it."""
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return BatchFilterResult.all_fail(len(nodes), s)
        return filter_rows(s, nodes)

    # PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Count matching pods per domain over all nodes; `nodes` (the feasible ones) fix the domains."""
        table = nodes.table
        if len(table) == 0:
            return Status.skip()
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except InputError as err:
            return Status.as_error(
                f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}"
            )
        if not constraints:
            return Status.skip()
        state.write(
            PRE_SCORE_STATE_KEY,
            score_state(
                pod,
                constraints,
                nodes,
                bool(pod.spec.topology_spread_constraints) or not self._system_defaulted,
                self._counters,
            ),
        )
        return None

    def _pre_score_state(self, state: CycleState) -> ScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, ScoreState):
            raise StateError(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        try:
            s = self._pre_score_state(state)
        except StateError as err:
            return 0, Status.as_error(err)
        return score_node(s, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._pre_score_state(state)
        return score_rows(s, nodes)

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        """Fewest matching pods -> 100: `100 * (max + min - s) // max`; ignored nodes get 0."""
        try:
            s = self._pre_score_state(state)
        except StateError as err:
            return Status.as_error(err)
        if scores.size == 0:
            return None
        normalize(s, nodes, scores)
        return None

    # requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: bound pods coming, going or relabelled change the counts; the pending pod
        relabelled, or tolerating more, changes what it counts or where; nodes coming, going,
        relabelled or retainted change the domains."""
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
                ),
                self._after_assigned_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL
                ),
                self._after_target_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self._after_node_change,
            ),
        ]

    def _hard_constraints(self, pod: Pod) -> list[Constraint] | None:
        """What the hints weigh: only the DoNotSchedule constraints (or defaults), as upstream's
        hints read only what Filter rejects on. None when they cannot be built (then: Queue)."""
        try:
            return self._constraints(pod, DO_NOT_SCHEDULE)
        except InputError:
            return None

    def _after_assigned_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a bound (or nominated) pod of the pod's namespace that a constraint's selector
        matches when added or deleted, or starts or stops matching when relabelled."""
        if not isinstance(old, Pod | None) or not isinstance(new, Pod | None) or (old is new is None):
            return QueueingHint.QUEUE
        if any(p is not None and not _involved(p, pod) for p in (old, new)):
            return QueueingHint.SKIP
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            return _after_label_change(old, new, constraints)
        changed = new if new is not None else old
        assert changed is not None
        selected = any(c.matcher.matches(changed.metadata.labels) for c in constraints)
        return QueueingHint.QUEUE if selected else QueueingHint.SKIP

    def _after_target_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pending pod gained a toleration and a constraint honours taints, or when
        its new labels flip a constraint's selector on itself."""
        if not isinstance(old, Pod) or not isinstance(new, Pod):
            return QueueingHint.QUEUE
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old.spec.tolerations != new.spec.tolerations and any(c.honor_taints for c in constraints):
            return QueueingHint.QUEUE
        return _after_label_change(old, new, constraints)

    def _after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A node carries the pod's domains when it has every topology key of its constraints.
        Queue when an added or deleted node does; when an update makes it gain or lose one; or
        when a node that does changes a topology key's value or its taints."""
        if not isinstance(old, Node | None) or not isinstance(new, Node | None) or (old is new is None):
            return QueueingHint.QUEUE
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        was = old is not None and labels_have_all_keys(old.metadata.labels, constraints)
        now = new is not None and labels_have_all_keys(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if was != now:
                return QueueingHint.QUEUE
            if now and (
                any(
                    old.metadata.labels.get(c.topology_key) != new.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or old.spec.taints != new.spec.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if was or now else QueueingHint.SKIP


def _after_label_change(old: Pod, new: Pod, constraints: Sequence[Constraint]) -> QueueingHint:
    """Queue when the labels changed so that some constraint's selector now answers differently."""
    before, after = old.metadata.labels, new.metadata.labels
    if before == after:
        return QueueingHint.SKIP
    flips = any(c.matcher.matches(before) != c.matcher.matches(after) for c in constraints)
    return QueueingHint.QUEUE if flips else QueueingHint.SKIP


def _involved(other: Pod, pod: Pod) -> bool:
    """Whether `other` can change what `pod`'s constraints count: a bound or nominated pod of the
    pod's namespace."""
    if not other.spec.node_name and not other.status.nominated_node_name:
        return False
    return other.metadata.namespace == pod.metadata.namespace


def valid_selector(selector: LabelSelector) -> bool:
    try:
        compile_label_selector(selector)
    except InputError:
        return False
    return True
