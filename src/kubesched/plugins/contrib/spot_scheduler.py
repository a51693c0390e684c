"""SpotScheduler: put interruptible work on spot / preemptible capacity and keep the rest off it.

Spot nodes are recognised by the labels the providers put on them: EKS managed node
groups `eks.amazonaws.com/capacityType=SPOT`, Karpenter `karpenter.sh/capacity-type=spot`, GKE
`cloud.google.com/gke-spot=true` (older `cloud.google.com/gke-preemptible=true`), AKS
`kubernetes.azure.com/scalesetpriority=spot`; the list is configurable.

Each pod gets a policy: `prefer`, `avoid` or `require` spot. It comes from an annotation
(`spot.kubesched.io/policy`), else from tolerating a spot taint (a pod that tolerates the spot taint
was made for spot: `prefer`), else from `defaultPolicy` (`avoid`). Score puts `prefer` / `require`
pods on spot nodes and `avoid` pods on on-demand ones. Filter enforces `require` always, `avoid`
only with `avoidRequired` (otherwise a full on-demand pool would leave such pods pending when spot
capacity is idle), and an optional cap on the share of a workload's replicas (pods with the same
controller) that may run on spot, so one reclaim wave cannot take a whole Deployment down.

Filter and Score come in a per-node and a batch form that agree exactly (hypothesis-tested).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np

from kubesched.api.objects import Pod, Taint
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.api.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    EFFECT_PREFER_NO_SCHEDULE,
    toleration_tolerates,
)
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState, pre_filter_state
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
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import BatchFilterResult, BoolArray, IndexArray, NodeSet, NodeTable
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.contrib._owners import OwnerPodCounts, owner_key, owner_text

__all__ = [
    "AVOID",
    "AVOID_REASON",
    "DEFAULT_POLICY_ANNOTATION",
    "DEFAULT_SPOT_LABELS",
    "PREFER",
    "REQUIRE",
    "REQUIRE_REASON",
    "SpotLabel",
    "SpotScheduler",
    "SpotSchedulerArgs",
    "SpotTaint",
    "cap_reason",
]

PREFER = "prefer"
AVOID = "avoid"
REQUIRE = "require"
_POLICIES = (PREFER, AVOID, REQUIRE)
_DEFAULT_POLICIES = (PREFER, AVOID)

DEFAULT_POLICY_ANNOTATION = "spot.kubesched.io/policy"

#: (label key, values meaning spot) of the managed offerings of EKS, Karpenter, GKE and AKS.
DEFAULT_SPOT_LABELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("eks.amazonaws.com/capacityType", ("SPOT",)),
    ("karpenter.sh/capacity-type", ("spot",)),
    ("cloud.google.com/gke-spot", ("true",)),
    ("cloud.google.com/gke-preemptible", ("true",)),
    ("kubernetes.azure.com/scalesetpriority", ("spot",)),
)

AVOID_REASON = "node(s) were spot capacity and the pod avoids spot"
REQUIRE_REASON = "node(s) were not spot capacity and the pod requires spot"

_EFFECTS = (EFFECT_NO_SCHEDULE, EFFECT_PREFER_NO_SCHEDULE, EFFECT_NO_EXECUTE)
_FILTER_KEY = "PreFilterSpotScheduler"
_SCORE_KEY = "PreScoreSpotScheduler"


def cap_reason(on_spot: int, total: int, owner: str, percent: int) -> str:
    """`spot replica cap reached: 2 of 4 replicas of ReplicaSet web-abc on spot (max 50%)`."""
    return f"spot replica cap reached: {on_spot} of {total} replicas of {owner} on spot (max {percent}%)"


# --------------------------------------------------------------------------- args


class SpotLabel(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A node label marking spot capacity; an empty `values` list means any value of the key."""

    key: str = ""
    values: list[str] = []


class SpotTaint(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A taint spot nodes carry; a pod tolerating it opts in to spot (policy `prefer`)."""

    key: str = ""
    value: str = ""
    effect: str = EFFECT_NO_SCHEDULE


def _default_labels() -> list[SpotLabel]:
    return [SpotLabel(key=k, values=list(v)) for k, v in DEFAULT_SPOT_LABELS]


def _default_taints() -> list[SpotTaint]:
    """The spot labels as NoSchedule taints: AKS adds `kubernetes.azure.com/scalesetpriority=spot`
    itself, GKE documents `cloud.google.com/gke-spot=true`, and EKS / Karpenter users taint spot
    pools with the capacity-type label by convention."""
    return [SpotTaint(key=k, value=v[0]) for k, v in DEFAULT_SPOT_LABELS]


def _supported(values: Sequence[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class SpotSchedulerArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind SpotSchedulerArgs)."""

    spot_labels: list[SpotLabel] = msgspec.field(default_factory=_default_labels)
    spot_taints: list[SpotTaint] = msgspec.field(default_factory=_default_taints)
    policy_annotation: str = DEFAULT_POLICY_ANNOTATION
    #: The policy of a pod with no annotation that tolerates no spot taint.
    default_policy: str = AVOID
    #: Make `avoid` a Filter (hard) instead of only a Score preference.
    avoid_required: bool = False
    #: At most this share (floor) of a workload's replicas on spot; 100 = no cap.
    max_spot_replicas_percent: int = 100

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `spotLabels[0].key`."""
        errors: list[InputError] = []
        if not self.spot_labels:
            errors.append(InputError("at least one spot label is required", path="spotLabels"))
        for i, label in enumerate(self.spot_labels):
            why = qualified_name_error(label.key)
            if why is not None:
                errors.append(
                    InputError(f"invalid label key {label.key!r}: {why}", path=f"spotLabels[{i}].key")
                )
            for j, value in enumerate(label.values):
                why = label_value_error(value)
                if why is not None:
                    errors.append(
                        InputError(
                            f"invalid label value {value!r}: {why}", path=f"spotLabels[{i}].values[{j}]"
                        )
                    )
        for i, taint in enumerate(self.spot_taints):
            why = qualified_name_error(taint.key)
            if why is not None:
                errors.append(
                    InputError(f"invalid taint key {taint.key!r}: {why}", path=f"spotTaints[{i}].key")
                )
            why = label_value_error(taint.value)
            if why is not None:
                errors.append(
                    InputError(f"invalid taint value {taint.value!r}: {why}", path=f"spotTaints[{i}].value")
                )
            if taint.effect not in _EFFECTS:
                errors.append(
                    InputError(
                        f'unsupported value "{taint.effect}": supported values: {_supported(_EFFECTS)}',
                        path=f"spotTaints[{i}].effect",
                    )
                )
        why = qualified_name_error(self.policy_annotation)
        if why is not None:
            errors.append(
                InputError(
                    f"invalid annotation key {self.policy_annotation!r}: {why}", path="policyAnnotation"
                )
            )
        if self.default_policy not in _DEFAULT_POLICIES:
            errors.append(
                InputError(
                    f'unsupported value "{self.default_policy}": '
                    f"supported values: {_supported(_DEFAULT_POLICIES)}",
                    path="defaultPolicy",
                )
            )
        if not 0 <= self.max_spot_replicas_percent <= 100:
            errors.append(InputError("must be in the range [0, 100]", path="maxSpotReplicasPercent"))
        return errors


# --------------------------------------------------------------------------- cycle state


@dataclass(slots=True)
class _Cap:
    """The pod's workload and how many of its replicas run on spot (PreFilter extensions adjust it)."""

    key: str
    owner: str
    total: int
    on_spot: int
    limit: int

    @property
    def reached(self) -> bool:
        return self.on_spot + 1 > self.limit


@dataclass(slots=True)
class _FilterState:
    policy: str
    cap: _Cap | None

    def clone(self) -> _FilterState:
        cap = self.cap
        copy = _Cap(cap.key, cap.owner, cap.total, cap.on_spot, cap.limit) if cap is not None else None
        return _FilterState(self.policy, copy)


@dataclass(frozen=True, slots=True)
class _ScoreState:
    policy: str

    def clone(self) -> _ScoreState:
        return self


# --------------------------------------------------------------------------- plugin


class SpotScheduler(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    EnqueueExtensions,
):
    """Filter: `require` pods off on-demand nodes, `avoid` pods off spot nodes when `avoidRequired`,
    and any pod off spot nodes once its workload reached `maxSpotReplicasPercent` there.
    Score: 100 on spot nodes for `prefer` / `require` pods and on on-demand nodes for `avoid` pods,
    0 on the others."""

    name: ClassVar[str] = "SpotScheduler"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("Pod",)
    args_type: ClassVar[type[SpotSchedulerArgs]] = SpotSchedulerArgs

    def __init__(self, args: SpotSchedulerArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else SpotSchedulerArgs()
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self.handle = handle
        self._labels: dict[str, frozenset[str]] = {}
        for label in self.args.spot_labels:
            values = frozenset(label.values)
            known = self._labels.get(label.key)
            if known is not None:
                # A key listed twice: the values add up, and an empty list (any value) wins.
                values = frozenset() if not known or not values else known | values
            self._labels[label.key] = values
        self._taints = tuple(Taint(key=t.key, value=t.value, effect=t.effect) for t in self.args.spot_taints)
        self._counts = OwnerPodCounts()

    # ------------------------------------------------------------------ node and pod facts
    def is_spot(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with these labels is spot / preemptible capacity."""
        for key, values in self._labels.items():
            value = labels.get(key)
            if value is not None and (not values or value in values):
                return True
        return False

    def _spot_rows(self, table: NodeTable, rows: IndexArray) -> BoolArray:
        spot = np.zeros(len(rows), dtype=np.bool_)
        for key, values in self._labels.items():
            column = table.label_column(key)
            hit = column.present() if not values else column.value_in(sorted(values))
            spot |= hit[rows]
        return spot

    def tolerates_spot(self, pod: Pod) -> bool:
        """Whether the pod tolerates a spot taint by name: a toleration without a key (tolerate
        everything, as DaemonSets carry) says nothing about spot and does not count."""
        return any(
            toleration_tolerates(t, taint) for t in pod.spec.tolerations if t.key for taint in self._taints
        )

    def policy_of(self, pod: Pod) -> str | Status:
        """The pod's policy, or an UnschedulableAndUnresolvable Status for an invalid annotation."""
        key = self.args.policy_annotation
        raw = pod.metadata.annotations.get(key)
        if raw is not None:
            policy = raw.strip().lower()
            if policy in _POLICIES:
                return policy
            return Status.unschedulable_and_unresolvable(
                f"invalid annotation {key}={raw!r}: must be one of {', '.join(_POLICIES)}"
            )
        if self.tolerates_spot(pod):
            return PREFER
        return self.args.default_policy

    def _listed_replicas(self, pod: Pod, key: str) -> int:
        """Live pods of workload `key` the cluster knows, bound or pending, the pod itself included.

        One pass over every pod per capped cycle, so the loop stays inline and cheap: most pods
        are rejected on their owner references before anything else is looked at.
        """
        if self.handle is None:
            return 1
        own = pod_key(pod)
        count, seen_self = 0, False
        for other in self.handle.lister("Pod"):
            meta = other.metadata
            refs = meta.owner_references
            if not refs or meta.deletion_timestamp is not None:
                continue
            if owner_key(other) != key or other.finished:
                continue
            count += 1
            seen_self = seen_self or pod_key(other) == own
        return count if seen_self else count + 1

    def _cap(self, pod: Pod, table: NodeTable) -> _Cap | None:
        """The workload's replicas on spot, counted over every node of `table`; None if uncapped."""
        percent = self.args.max_spot_replicas_percent
        key = owner_key(pod)
        if percent >= 100 or key is None:
            return None
        rows = np.arange(len(table), dtype=np.intp)
        counts = self._counts.rows(table, rows, key)
        on_spot = int(counts[self._spot_rows(table, rows)].sum())
        # The lister sees pending replicas too; without one (a stateless extender) the pods on
        # nodes plus this one are all we know of.
        total = max(self._listed_replicas(pod, key), int(counts.sum()) + 1)
        return _Cap(key, owner_text(pod), total, on_spot, percent * total // 100)

    # ------------------------------------------------------------------ PreFilter
    def _compute(self, pod: Pod, table: NodeTable) -> _FilterState | Status:
        policy = self.policy_of(pod)
        if isinstance(policy, Status):
            return policy
        return _FilterState(policy, self._cap(pod, table))

    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        s = self._compute(pod, nodes.table)
        if isinstance(s, Status):
            return s
        state.write(_FILTER_KEY, s)
        if s.policy == REQUIRE or (s.policy == AVOID and self.args.avoid_required) or s.cap is not None:
            return None
        return Status.skip()

    def _filter_state(
        self, state: CycleState, pod: Pod, fallback: Callable[[], NodeTable]
    ) -> _FilterState | Status:
        """PreFilter's state; with PreFilter disabled, counted here (over the whole snapshot when
        there is one) and kept."""
        return pre_filter_state(
            state,
            _FILTER_KEY,
            _FilterState,
            lambda: self._compute(pod, self.handle.snapshot if self.handle is not None else fallback()),
            keep=True,
        )

    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        self._adjust(state, pod_info_to_add, node_info, +1)
        return None

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        self._adjust(state, pod_info_to_remove, node_info, -1)
        return None

    def _adjust(self, state: CycleState, other: PodInfo, node_info: NodeInfo, delta: int) -> None:
        """A replica of the pod's workload added to / removed from a spot node (nominated pods,
        preemption victims) changes how many of them run on spot."""
        s = state.get(_FILTER_KEY)
        if not isinstance(s, _FilterState) or s.cap is None:
            return
        meta = other.pod.metadata
        if (
            meta.deletion_timestamp is None
            and owner_key(other.pod) == s.cap.key
            and self.is_spot(node_info.labels)
        ):
            s.cap.on_spot += delta

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._filter_state(state, pod, lambda: NodeTable([node_info]))
        if isinstance(s, Status):
            return s
        spot = self.is_spot(node_info.labels)
        if not spot:
            return Status.unschedulable_and_unresolvable(REQUIRE_REASON) if s.policy == REQUIRE else None
        if s.policy == AVOID and self.args.avoid_required:
            return Status.unschedulable_and_unresolvable(AVOID_REASON)
        if s.cap is not None and s.cap.reached:
            return Status.unschedulable(self._cap_reason(s.cap))
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        s = self._filter_state(state, pod, lambda: nodes.table)
        n = len(nodes)
        if isinstance(s, Status):
            return BatchFilterResult.all_fail(n, s)
        spot = self._spot_rows(nodes.table, nodes.rows)
        codes = np.full(n, -1, dtype=np.int32)
        statuses: list[Status] = []
        if s.policy == REQUIRE and not spot.all():
            codes[~spot] = len(statuses)
            statuses.append(Status.unschedulable_and_unresolvable(REQUIRE_REASON))
        if not spot.any():
            return BatchFilterResult(codes, statuses)
        if s.policy == AVOID and self.args.avoid_required:
            codes[spot] = len(statuses)
            statuses.append(Status.unschedulable_and_unresolvable(AVOID_REASON))
        elif s.cap is not None and s.cap.reached:
            codes[spot] = len(statuses)
            statuses.append(Status.unschedulable(self._cap_reason(s.cap)))
        return BatchFilterResult(codes, statuses)

    def _cap_reason(self, cap: _Cap) -> str:
        return cap_reason(cap.on_spot, cap.total, cap.owner, self.args.max_spot_replicas_percent)

    # ------------------------------------------------------------------ Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        policy = self.policy_of(pod)
        if isinstance(policy, Status):
            return policy
        state.write(_SCORE_KEY, _ScoreState(policy))
        return None

    def _score_policy(self, state: CycleState, pod: Pod) -> str | Status:
        s = state.get(_SCORE_KEY)
        if isinstance(s, _ScoreState):
            return s.policy
        return self.policy_of(pod)  # PreScore disabled: compute here

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        policy = self._score_policy(state, pod)
        if isinstance(policy, Status):
            return 0, policy
        wants_spot = policy != AVOID
        return MAX_NODE_SCORE if self.is_spot(node_info.labels) == wants_spot else 0

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        policy = self._score_policy(state, pod)
        if isinstance(policy, Status):
            raise ValueError(policy.message())
        spot = self._spot_rows(nodes.table, nodes.rows)
        wanted = spot if policy != AVOID else ~spot
        out: Scores = np.where(wanted, MAX_NODE_SCORE, 0).astype(np.int64)
        return out

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or relabelled may change capacity type; a replica of the pod's workload
        added or deleted moves the spot cap; the pod's own tolerations decide its policy."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_TOLERATION
                ),
                self._after_pod_change,
            ),
        ]

    def _after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        changed = new if isinstance(new, Pod) else old
        if not isinstance(changed, Pod):
            return QueueingHint.QUEUE
        if pod_key(changed) == pod_key(pod):
            return QueueingHint.QUEUE  # the pod itself changed (its tolerations)
        if self.args.max_spot_replicas_percent >= 100:
            return QueueingHint.SKIP
        key = owner_key(pod)
        return QueueingHint.QUEUE if key is not None and owner_key(changed) == key else QueueingHint.SKIP
