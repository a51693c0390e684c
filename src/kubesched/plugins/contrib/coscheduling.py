"""Coscheduling: gang scheduling — the members of a pod group bind together, or none of them does.

The plugin of kubernetes-sigs/scheduler-plugins, with its API: pods join a group with the label
`scheduling.x-k8s.io/pod-group: <name>`; the group's size comes from a `PodGroup` object
(`scheduling.x-k8s.io/v1alpha1`, same namespace, `spec.minMember`) or, when there is none, from the
pod annotation `scheduling.x-k8s.io/min-available`. The extension points work together:

* QueueSort keeps a group's members next to each other in the queue (priority, then the time the
  group was first seen, then the group's name), so one gang is assembled before the next starts.
* PreFilter turns a group away early — before any member holds capacity — when fewer than
  minMember pods of the group exist, or when what the missing members request cannot fit the free
  capacity (the cluster-wide total, and how many such pods the nodes can hold one by one).
* Permit holds each member (a WaitingPod, its capacity assumed) until minMember members are
  assumed, waiting or bound, then allows all the waiting members at once.
* Unreserve and PostFilter make the failure of one member the failure of the gang: every waiting
  member is rejected, so its capacity is released and no partial gang is ever bound. A timeout
  (args `permitWaitingTimeSeconds`, or the PodGroup's `scheduleTimeoutSeconds`) does the same,
  because the timed-out member's Unreserve rejects the others.

Upstream deviations are deliberate and documented in docs/plugins/Coscheduling.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.quantity import format_quantity, resource_amount
from kubesched.api.resources import pod_requests
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState, StateData
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    EnqueueExtensions,
    Handle,
    PermitPlugin,
    PostFilterPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ReservePlugin,
)
from kubesched.framework.node_info import PODS, pod_key
from kubesched.framework.node_table import NodeSet, NodeTable, PodRowCounts
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_PERMIT_TIMEOUT, PostFilterResult, QueuedPodInfo

__all__ = [
    "MIN_AVAILABLE_ANNOTATION",
    "POD_GROUP_API_VERSION",
    "POD_GROUP_LABEL",
    "Coscheduling",
    "CoschedulingArgs",
]

#: The label naming a pod's group (scheduler-plugins' `v1alpha1.PodGroupLabel`).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
#: minMember for a group that has no PodGroup object (a kubesched convention, see the docs page).
MIN_AVAILABLE_ANNOTATION = "scheduling.x-k8s.io/min-available"
#: Only PodGroups of this API are read: the native `scheduling.k8s.io` PodGroup shares the kind name.
POD_GROUP_API_VERSION = "scheduling.x-k8s.io/v1alpha1"

_STATE_KEY = "PreFilterCoscheduling"
#: Past this many remembered groups, QueueSort forgets those with no pending member left.
_FIRST_SEEN_SWEEP = 4096


class CoschedulingArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, frozen=True):
    """pluginConfig args, as scheduler-plugins' CoschedulingArgs.

    `permitWaitingTimeSeconds`: how long members wait at Permit for the rest of their group when the
    PodGroup sets no `scheduleTimeoutSeconds` (at most 900: Permit's 15-minute cap).
    `podGroupBackoffSeconds`: after a group is rejected as a whole, PreFilter turns its members away
    for this long, so a gang that cannot be completed stops holding capacity over and over (0: off).
    """

    permit_waiting_time_seconds: int = 60
    pod_group_backoff_seconds: int = 0

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        limit = int(MAX_PERMIT_TIMEOUT)
        if not 0 < self.permit_waiting_time_seconds <= limit:
            errors.append(
                InputError(
                    f"must be between 1 and {limit} (Permit waits at most 15 minutes), "
                    f"got {self.permit_waiting_time_seconds}",
                    path="permitWaitingTimeSeconds",
                )
            )
        if self.pod_group_backoff_seconds < 0:
            errors.append(
                InputError(
                    f"must not be negative, got {self.pod_group_backoff_seconds}",
                    path="podGroupBackoffSeconds",
                )
            )
        return errors


#: Groups whose per-node member counts are remembered between cycles (oldest dropped first).
_MAX_TRACKED_GROUPS = 256


@dataclass(frozen=True, slots=True)
class _Group:
    """A pod's group as resolved for one cycle: identity, size, patience and where they came from."""

    namespace: str
    name: str
    min_member: int
    timeout: float
    #: PodGroup `spec.minResources` in scheduler units (cpu in milli); empty when unset.
    min_resources: dict[str, int] = field(default_factory=dict)
    source: str = "PodGroup"

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    def has(self, pod: Pod) -> bool:
        return (
            pod.metadata.namespace == self.namespace and pod.metadata.labels.get(POD_GROUP_LABEL) == self.name
        )


@dataclass(frozen=True, slots=True)
class _GroupState:
    """What PreFilter resolved, for PostFilter and Permit of the same cycle (never mutated)."""

    group: _Group

    def clone(self) -> StateData:
        return self


def _group_label(pod: Pod) -> str | None:
    name = pod.metadata.labels.get(POD_GROUP_LABEL)
    return name or None


def _queue_time(qpi: QueuedPodInfo) -> float:
    """When the pod entered the queue: its first attempt, or its arrival if never attempted.

    Neither changes while the pod sits in activeQ (the first is set when it is popped), which is
    what keeps the sort key of a queued pod fixed.
    """
    return qpi.initial_attempt_timestamp if qpi.initial_attempt_timestamp is not None else qpi.timestamp


class Coscheduling(
    QueueSortPlugin,
    PreFilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PermitPlugin,
    EnqueueExtensions,
):
    """Gang scheduling by pod group: QueueSort, PreFilter, PostFilter, Reserve/Unreserve, Permit.

    Pods without the `scheduling.x-k8s.io/pod-group` label are scheduled as usual (the QueueSort
    then orders them as PrioritySort does, with the pod's name breaking ties).
    """

    name: ClassVar[str] = "Coscheduling"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("Pod", "PodGroup")
    args_type: ClassVar[type[CoschedulingArgs]] = CoschedulingArgs

    def __init__(self, args: CoschedulingArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else CoschedulingArgs()
        self.handle = handle
        #: group full name -> queue time of the first member QueueSort saw; the group's sort time.
        self._first_seen: dict[str, float] = {}
        #: group full name -> time until which PreFilter turns the group away (podGroupBackoffSeconds).
        self._backoff_until: dict[str, float] = {}
        #: group full name -> per-node member counts, kept current from the table's pod change log.
        self._member_rows: dict[str, PodRowCounts] = {}

    # ================================================================== QueueSort
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Higher priority first; then the earlier group (or lone pod); then the smaller name.

        Every pod maps to a fixed key `(-priority, time, name, lone)` — for a group member the
        group's first-seen time and `namespace/group`, otherwise the pod's queue time and
        `namespace/name` — and keys compare as tuples, which is a strict weak ordering. Members of
        one group share a key, so nothing sorts between them and the queue keeps them in arrival
        order; `lone` keeps a pod named like a group (`ml/train`) from tying with its members.
        """
        return self._sort_key(a) < self._sort_key(b)

    def _sort_key(self, qpi: QueuedPodInfo) -> tuple[int, float, str, bool]:
        pod = qpi.pod
        priority = pod.spec.priority or 0
        group = _group_label(pod)
        if group is None:
            return (-priority, _queue_time(qpi), f"{pod.metadata.namespace}/{pod.metadata.name}", True)
        full = f"{pod.metadata.namespace}/{group}"
        seen = self._first_seen.get(full)
        if seen is None:
            if len(self._first_seen) >= _FIRST_SEEN_SWEEP:
                self._forget_finished_groups()
            seen = self._first_seen[full] = _queue_time(qpi)
        return (-priority, seen, full, False)

    def _forget_finished_groups(self) -> None:
        """Drop the first-seen times of groups with no pending member left in the cluster.

        A group with no pending pod has no pod in the queue, so forgetting it cannot move a queued
        pod's key; a member created later simply starts the group afresh.
        """
        if self.handle is None:
            return
        pending = {
            f"{p.metadata.namespace}/{g}"
            for p in self.handle.lister("Pod")
            if not p.spec.node_name and (g := _group_label(p)) is not None
        }
        self._first_seen = {k: v for k, v in self._first_seen.items() if k in pending}

    # ================================================================== PreFilter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Reject a member whose group cannot be completed now, before it holds any capacity."""
        resolved = self._resolve(pod)
        if resolved is None or isinstance(resolved, Status):
            return resolved
        group = resolved
        state.write(_STATE_KEY, _GroupState(group))
        until = self._backoff_until.get(group.full_name)
        if until is not None:
            now = self._now()
            if now < until:
                return Status.unschedulable(
                    f"pod group {group.full_name} was rejected recently, retrying in {until - now:g}s"
                )
            del self._backoff_until[group.full_name]

        members = self._members(group, pod)
        if len(members) < group.min_member:
            return Status.unschedulable_and_unresolvable(
                f"pod group {group.full_name} has {len(members)} pod(s), fewer than minMember "
                f"{group.min_member}"
            )
        table = nodes.table
        assigned = self._placed(group, table)
        assigned.pop(pod_key(pod), None)
        if len(assigned) >= group.min_member:
            return None  # the gang is already complete: this member schedules like any pod
        need = group.min_member - len(assigned)
        pending = [m for m in members if pod_key(m) not in assigned]
        return self._capacity_problem(group, pending, need, assigned.values(), table)

    def _capacity_problem(
        self,
        group: _Group,
        pending: Sequence[Pod],
        need: int,
        assigned: Iterable[Pod],
        table: NodeTable,
    ) -> Status | None:
        """Why `need` more of `pending` cannot be placed: Unschedulable if they cannot fit now,
        UnschedulableAndUnresolvable if they could not fit even an empty cluster; None if they may.

        Two necessary conditions (so a group that could fit is never turned away):

        * totals — per resource, the `need` smallest requests of the pending members must not exceed
          what all nodes have free together (and PodGroup `minResources`, counting the group's own
          assigned pods as free, as upstream does);
        * per node — a node holds at most `min over resources of free / smallest request` members,
          and the nodes together must hold `need` of them. This catches fragmentation the totals
          miss: 8-GPU members on nodes with 4 GPUs free each.
        """
        requests = [_requests_or_empty(m) for m in pending]
        smallest: dict[str, int] = {}
        totals: dict[str, int] = {}
        for r in sorted({r for req in requests for r in req if r != PODS}):
            values = sorted(req.get(r, 0) for req in requests)
            smallest[r] = values[0]
            totals[r] = sum(values[:need])
        free = np.clip(table.allocatable - table.requested, 0, None)
        now = _fit_problem(group, totals, smallest, need, _sum_requests(assigned), table, free, empty=False)
        if now is None:
            return None
        ever = _fit_problem(group, totals, smallest, need, {}, table, table.allocatable, empty=True)
        if ever is not None:
            return Status.unschedulable_and_unresolvable(ever)  # waiting or preempting cannot help
        return Status.unschedulable(now)

    # ================================================================== PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """A member fits nowhere: release its waiting siblings rather than let them hold capacity.

        Upstream reasons the same way ("if the nth pod failed, the others would very likely fail"):
        the waiting members would otherwise sit on their nodes until the timeout, blocking other
        pods and other gangs. Nothing is done (and nothing is said) for pods outside a group or of
        a group whose minMember is already met.
        """
        group = self._group_for(state, pod)
        if group is None:
            return None, Status(Code.UNSCHEDULABLE)
        assigned = self._placed(group, self._snapshot())
        assigned.pop(pod_key(pod), None)
        if len(assigned) >= group.min_member:
            return None, Status(Code.UNSCHEDULABLE)
        released = self._reject_waiting(
            group, f"pod group {group.full_name} rejected: member {pod.metadata.name} is unschedulable"
        )
        self._back_off(group)
        if not released:
            return None, Status(Code.UNSCHEDULABLE)
        return None, Status(
            Code.UNSCHEDULABLE,
            f"pod group {group.full_name}: released {released} waiting member(s) because "
            f"{pod.metadata.name} is unschedulable",
        )

    # ================================================================== Reserve / Unreserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Nothing to reserve: implemented so the framework calls Unreserve on a member's failure."""
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """One member failed after Reserve (timeout, rejection, bind error): fail its waiting siblings.

        This is what turns one member's timeout into the whole gang's: the first member to time out
        rejects the rest, so every waiting member is unreserved and its capacity released together.
        Idempotent: siblings already decided are left alone.
        """
        if _group_label(pod) is None or self.handle is None:
            return
        resolved = self._group_for(state, pod)
        if resolved is None:
            return
        released = self._reject_waiting(
            resolved,
            f"pod group {resolved.full_name} rejected: member {pod.metadata.name} was unreserved",
            exclude=pod_key(pod),
        )
        if released:
            self._back_off(resolved)

    # ================================================================== Permit
    def permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> Status | tuple[Status | None, float] | None:
        """Wait until minMember members are assumed, waiting or bound; then allow them all together."""
        group = self._resolved(state, pod)
        if group is None:
            return None
        if isinstance(group, Status):
            return Status.unschedulable(*group.reasons)  # Permit may only reject as Unschedulable
        assigned = self._placed(group, self._snapshot())
        assigned[pod_key(pod)] = pod  # assumed already in the scheduler's cache; counted once either way
        if len(assigned) >= group.min_member:
            handle = self._handle()
            for wp in handle.iterate_waiting_pods():
                if group.has(wp.pod):
                    wp.allow(self.name)
            self._backoff_until.pop(group.full_name, None)
            return None
        self._activate_siblings(group, assigned)
        return (
            Status.wait(f"pod group {group.full_name}: {len(assigned)}/{group.min_member} members reserved"),
            group.timeout,
        )

    def _activate_siblings(self, group: _Group, assigned: dict[str, Pod]) -> None:
        """Move the group's other pending members out of backoff / the unschedulable pool now.

        A member that was turned away earlier (e.g. while the gang's capacity was taken) would
        otherwise wait for an event or the 5-minute flush while this member's timer runs.
        """
        handle = self._handle()
        siblings = [p for p in self._members(group, None) if pod_key(p) not in assigned]
        if siblings:
            handle.activate(siblings)

    # ================================================================== EnqueueExtensions
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Events that can complete a rejected group: a new member, freed or added capacity, its PodGroup."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL), _sibling_hint
            ),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD_GROUP, ActionType.ADD | ActionType.UPDATE), _pod_group_hint
            ),
        ]

    # ================================================================== helpers
    def _handle(self) -> Handle:
        if self.handle is None:
            raise RuntimeError("Coscheduling needs a framework handle")
        return self.handle

    def _now(self) -> float:
        return self._handle().now()

    def _snapshot(self) -> NodeTable:
        return self._handle().snapshot

    def _group_for(self, state: CycleState, pod: Pod) -> _Group | None:
        """The group PreFilter resolved this cycle, or resolved afresh; None if there is none."""
        resolved = self._resolved(state, pod)
        return resolved if isinstance(resolved, _Group) else None

    def _resolved(self, state: CycleState, pod: Pod) -> _Group | Status | None:
        """`_resolve`, reusing PreFilter's answer of this cycle (Permit may run without PreFilter)."""
        cached = state.get(_STATE_KEY)
        if isinstance(cached, _GroupState) and cached.group.has(pod):
            return cached.group
        return self._resolve(pod)

    def _resolve(self, pod: Pod) -> _Group | Status | None:
        """The pod's group: None outside a group; a rejection when its size is unknown or invalid."""
        name = _group_label(pod)
        if name is None:
            return None
        namespace = pod.metadata.namespace
        full = f"{namespace}/{name}"
        default_timeout = float(self.args.permit_waiting_time_seconds)
        pg = self._pod_group(namespace, name)
        if pg is not None:
            timeout = default_timeout
            if pg.spec.schedule_timeout_seconds is not None and pg.spec.schedule_timeout_seconds > 0:
                timeout = min(float(pg.spec.schedule_timeout_seconds), MAX_PERMIT_TIMEOUT)
            min_resources: dict[str, int] = {}
            for r, value in pg.spec.min_resources.items():
                try:
                    min_resources[r] = resource_amount(r, value)
                except InputError as err:
                    return Status.unschedulable_and_unresolvable(
                        f"pod group {full}: spec.minResources[{r}]: {err.message}"
                    )
            return _Group(namespace, name, max(pg.spec.min_member, 1), timeout, min_resources, "PodGroup")
        raw = pod.metadata.annotations.get(MIN_AVAILABLE_ANNOTATION)
        if raw is None:
            return Status.unschedulable_and_unresolvable(
                f"pod group {full} not found: create a PodGroup ({POD_GROUP_API_VERSION}) named {name} "
                f"in namespace {namespace}, or set the pod annotation {MIN_AVAILABLE_ANNOTATION}"
            )
        try:
            min_member = int(raw.strip())
        except ValueError:
            min_member = 0
        if min_member < 1:
            return Status.unschedulable_and_unresolvable(
                f"pod group {full}: annotation {MIN_AVAILABLE_ANNOTATION} must be a positive integer, "
                f"got {raw!r}"
            )
        return _Group(namespace, name, min_member, default_timeout, {}, "annotation")

    def _pod_group(self, namespace: str, name: str) -> PodGroup | None:
        if self.handle is None:
            return None
        for obj in self.handle.lister("PodGroup"):
            if (
                isinstance(obj, PodGroup)
                and obj.api_version == POD_GROUP_API_VERSION
                and obj.metadata.name == name
                and (obj.metadata.namespace or "default") == namespace
            ):
                return obj
        return None

    def _members(self, group: _Group, pod: Pod | None) -> list[Pod]:
        """The group's live pods in the cluster (bound or not), with `pod` counted even if not listed yet."""
        members = [
            p
            for p in self._handle().lister("Pod")
            if group.has(p) and not p.metadata.deletion_timestamp and not p.finished
        ]
        if pod is not None and all(pod_key(p) != pod_key(pod) for p in members):
            members.append(pod)
        return members

    def _member_counts(self, group: _Group, table: NodeTable) -> npt.NDArray[np.int64]:
        """Members of `group` per node, recounted only on nodes whose pods changed since the last cycle."""
        counts = self._member_rows.get(group.full_name)
        if counts is None or counts.table is not table:
            if len(self._member_rows) >= _MAX_TRACKED_GROUPS:
                self._member_rows.pop(next(iter(self._member_rows)))  # the oldest group
            counts = PodRowCounts(table, lambda ni: sum(1 for pi in ni.pods.values() if group.has(pi.pod)))
            self._member_rows[group.full_name] = counts
        return counts.current()

    def _placed(self, group: _Group, table: NodeTable) -> dict[str, Pod]:
        """Members on a node in the snapshot — bound, binding, or assumed and waiting at Permit.

        Members already rejected at Permit are left out: they stay assumed until their binding
        cycle runs and unreserves them, and counting them would let a later member complete a
        "gang" whose other members are about to leave — a partial gang.
        """
        found: dict[str, Pod] = {}
        infos = table.infos
        for row in np.flatnonzero(self._member_counts(group, table)):
            for key, pi in infos[row].pods.items():
                if group.has(pi.pod):
                    found[key] = pi.pod
        if found and self.handle is not None:
            for wp in self.handle.iterate_waiting_pods():
                if wp.result is not None and not wp.result.is_success():
                    found.pop(pod_key(wp.pod), None)
        return found

    def _reject_waiting(self, group: _Group, message: str, *, exclude: str = "") -> int:
        """Reject the group's members still waiting at Permit; the number rejected."""
        handle = self._handle()
        rejected = 0
        for wp in handle.iterate_waiting_pods():
            key = pod_key(wp.pod)
            if key == exclude or not group.has(wp.pod) or wp.result is not None:
                continue
            if handle.reject_waiting_pod(key, self.name, message):
                rejected += 1
        return rejected

    def _back_off(self, group: _Group) -> None:
        if self.args.pod_group_backoff_seconds > 0 and self.handle is not None:
            self._backoff_until[group.full_name] = self._now() + self.args.pod_group_backoff_seconds


# ---------------------------------------------------------------------- module helpers


def _requests_or_empty(pod: Pod) -> dict[str, int]:
    """A sibling's requests; one with an invalid quantity is refused by the scheduler, so counts as 0."""
    try:
        return pod_requests(pod)
    except InputError:
        return {}


def _sum_requests(pods: Iterable[Pod]) -> dict[str, int]:
    total: dict[str, int] = {}
    for p in pods:
        for r, v in _requests_or_empty(p).items():
            total[r] = total.get(r, 0) + v
    return total


def _fit_problem(
    group: _Group,
    totals: dict[str, int],
    smallest: dict[str, int],
    need: int,
    own: dict[str, int],
    table: NodeTable,
    amounts: npt.NDArray[np.int64],
    *,
    empty: bool,
) -> str | None:
    """The first capacity condition `need` more members break against `amounts` (free or allocatable)."""
    phrase = "in total" if empty else "free"
    name = group.full_name
    for r, total in totals.items():
        if total > (have := _column_sum(table, amounts, r)):
            return f"pod group {name} needs {_fmt(total, r)} {r}, the cluster has {_fmt(have, r)} {phrase}"
    for r, amount in sorted(group.min_resources.items()):
        have = _column_sum(table, amounts, r) + own.get(r, 0)
        if amount > have:
            return (
                f"pod group {name} needs minResources {_fmt(amount, r)} {r}, "
                f"the cluster has {_fmt(have, r)} {phrase}"
            )
    room, limit = _room(table, empty, smallest, amounts)
    if room < need:
        what = f"{_fmt(smallest[limit], limit)} {limit}" if limit else "a pod slot"
        where = "even empty, the nodes hold" if empty else "the nodes have room for"
        return f"pod group {name} needs {need} more pod(s) placed, {where} {room} (each needs {what})"
    return None


def _column_sum(table: NodeTable, amounts: npt.NDArray[np.int64], resource: str) -> int:
    col = table.resource_column(resource)
    return 0 if col is None or len(table) == 0 else int(amounts[:, col].sum())


def _room(
    table: NodeTable, empty: bool, smallest: dict[str, int], amounts: npt.NDArray[np.int64]
) -> tuple[int, str]:
    """How many members the nodes can hold one by one, and the resource that limits it most ("" = pods)."""
    n = len(table)
    if n == 0:
        return 0, ""
    pods_free = table.allowed_pods if empty else np.clip(table.allowed_pods - table.pod_count, 0, None)
    slots = pods_free.astype(np.int64)
    limit, limit_total = "", int(slots.sum())
    for r, each in smallest.items():
        if each <= 0:
            continue
        col = table.resource_column(r)
        per_node = np.zeros(n, dtype=np.int64) if col is None else amounts[:, col] // each
        slots = np.minimum(slots, per_node)
        if (total := int(per_node.sum())) < limit_total:
            limit, limit_total = r, total
    return int(slots.sum()), limit


def _fmt(amount: int, resource: str) -> str:
    return format_quantity(amount, resource)


def _sibling_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A pod joining the rejected pod's group may bring the group up to minMember."""
    group = _group_label(pod)
    if group is None or not isinstance(new, Pod):
        return QueueingHint.SKIP
    same = new.metadata.namespace == pod.metadata.namespace and _group_label(new) == group
    return QueueingHint.QUEUE if same else QueueingHint.SKIP


def _pod_group_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only the pod's own PodGroup (same namespace and name) can change its size or timeout."""
    group = _group_label(pod)
    if group is None or not isinstance(new, PodGroup):
        return QueueingHint.SKIP
    same = (new.metadata.namespace or "default") == pod.metadata.namespace and new.metadata.name == group
    return QueueingHint.QUEUE if same else QueueingHint.SKIP
