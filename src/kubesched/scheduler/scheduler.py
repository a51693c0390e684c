"""Scheduler: pops pods, runs the scheduling cycle, then the binding cycle, as kube-scheduler does.

Cluster changes come in through the `on_*` handlers; decisions go out through a ClusterPort.
Time comes from the injected clock and ties are broken by a seeded RNG, so a run is
reproducible. Binding cycles are handed to `run_binding` (called inline by the simulator, on a
worker by the live scheduler).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from kubesched.api.objects import Node, PersistentVolumeClaim, Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    Resource,
)
from kubesched.framework.filter_memo import FilterMemo
from kubesched.framework.interfaces import BackgroundEvictionPort
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework, ScoreOutcome, num_feasible_nodes_to_find
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    FitError,
    NodeStatuses,
    QueuedPodInfo,
    StatusColumns,
    distinct_statuses,
    rejected_by_plugins,
    truncate_note,
)
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.scheduler.batch import BatchMetrics, OpportunisticBatch, RunnersUp
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.failure_memo import FailureMemo, RepeatableFailure, pod_content
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.ports import BindRefused, ClusterPort, ResourceClaimPort, VolumeBinderPort
from kubesched.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.extenders import Extenders

T = TypeVar("T")


#: Filter reasons an Attempt keeps for logs (the message has them all).
TOP_REASONS = 3
#: A kept failure is checked against at most this many nodes whose pods changed since; past
#: that, a full attempt is about as cheap.
MAX_REFILTERED_ROWS = 32


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One resolved profile: plugins per extension point (name, weight) and their decoded args."""

    scheduler_name: str
    points: Mapping[str, Sequence[tuple[str, int]]]
    plugin_args: Mapping[str, Any]
    percentage_of_nodes_to_score: int | None = None


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    seed: int = 0
    #: Keep per-node filter statuses and per-plugin scores of each attempt (simulate --explain).
    explain: bool = False


@dataclass(slots=True)
class Attempt:
    """The outcome of one scheduling attempt (or of its binding cycle), for reports and metrics."""

    pod: Pod
    profile: str
    result: str  # Scheduled | Unschedulable | Error | Waiting
    node: str | None = None
    message: str | None = None
    nominated_node: str | None = None
    filter: dict[str, Status] | None = None
    scores: dict[str, tuple[dict[str, int], int]] | None = None
    #: The PreFilter rejection that ended this attempt before any node was filtered.
    pre_filter: Status | None = None
    #: What the PostFilter plugins (preemption) said when no node fit; "" when they did not run.
    post_filter: str = ""
    duration: float = 0.0
    #: Scheduling attempts of the pod so far, this one included.
    attempts: int = 0
    #: When no node fit: the most frequent filter reasons and their node counts, most first.
    reasons: list[tuple[str, int]] = field(default_factory=list)
    #: Nodes evaluated and found feasible by this attempt's filters (0 when unknown).
    evaluated: int = 0
    feasible: int = 0
    #: For an Error: the exception (a plugin's own is its `__cause__`), for tracebacks on request.
    error: BaseException | None = None
    #: Pods evicted by this attempt's PostFilter (preemption), as `namespace/name`.
    victims: list[str] = field(default_factory=list)


#: Filter plugins re-run on the chosen node just before its bind is sent: the cheap checks whose
#: answer other pods' binds and node updates can change while a decision waits to be bound.
REVALIDATED_FILTERS = ("NodeResourcesFit", "NodePorts")


@dataclass(frozen=True, slots=True)
class Abandoned:
    """A decision dropped just before its bind was sent; the pod went back to activeQ if still pending.

    `reason`: `NodeGone` (the node left the cache), `NoLongerFits` (a re-run of the cheap filters
    failed), `PodGone` (deleted or bound by someone else meanwhile) or `Refused` (this scheduler may
    not bind now: it lost its Lease or is shutting down).
    """

    pod: Pod
    profile: str
    node: str
    reason: str
    message: str


@dataclass(slots=True)
class _ScheduleResult:
    node: str
    evaluated: int
    feasible: int
    scores: dict[str, tuple[dict[str, int], int]] | None = None
    filter: dict[str, Status] | None = None


@dataclass(slots=True)
class _Binding:
    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    node: str
    assumed: Pod
    extra: dict[str, Any] = field(default_factory=dict)


class _ProfileHandle:
    """The Handle plugins of one profile get."""

    def __init__(self, scheduler: Scheduler, profile: str) -> None:
        self._s = scheduler
        self._profile = profile
        #: the port last found to store claims (a Protocol isinstance check is slow: once per port)
        self._claims_checked: object = None
        #: The PodInfo of the pod last filtered through `run_filter_plugins_with_nominated_pods`.
        self._pod_info: PodInfo | None = None

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def snapshot(self) -> NodeTable:
        return self._s.cache.snapshot()

    @property
    def seed(self) -> int:
        """The run's seed, for plugins that draw random numbers of their own (preemption offset)."""
        return self._s.options.seed

    def now(self) -> float:
        return self._s.clock.now()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._s.waiting.get(uid)

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]:
        return list(self._s.waiting)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        wp = self._s.waiting.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True

    def activate(self, pods: Sequence[Pod]) -> None:
        self._s.queue.activate([pod_key(p) for p in pods])

    def bind(self, pod: Pod, node_name: str) -> None:
        self._s.port.bind(pod, node_name)

    def lister(self, kind: str) -> Sequence[Any]:
        return self._s.port.lister(kind)

    def shared_state(self, key: str, factory: Callable[[], T]) -> T:
        """One object per key for every profile of this scheduler (upstream's shared listers and
        DRA manager): e.g. the devices in use, which no two profiles may hand out twice."""
        found = self._s.shared.get(key)
        if found is None:
            found = self._s.shared[key] = factory()
        return cast(T, found)

    # -- ResourceClaim writes (DynamicResources' PreBind, Unreserve, PostFilter)
    def _claims_port(self) -> ResourceClaimPort:
        port = self._s.port
        if port is not self._claims_checked:
            if not isinstance(port, ResourceClaimPort):
                raise RuntimeError("this cluster does not store ResourceClaim allocations")
            self._claims_checked = port
        return cast(ResourceClaimPort, port)

    def write_claim_allocation(
        self, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod
    ) -> ResourceClaim:
        return self._claims_port().write_claim_allocation(claim, allocation, pod)

    def remove_claim_reservation(self, claim: ResourceClaim, pod: Pod) -> None:
        self._claims_port().remove_claim_reservation(claim, pod)

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        self._claims_port().deallocate_claim(claim)

    def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self._claims_port().create_claim(claim)

    def delete_claim(self, claim: ResourceClaim) -> None:
        self._claims_port().delete_claim(claim)

    def write_extended_resource_claim_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        self._claims_port().write_extended_resource_claim_status(pod, status)

    def pause(self, seconds: float) -> None:
        self._claims_port().pause(seconds)

    def _framework(self) -> Framework:
        return self._s.frameworks[self._profile]

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        # Preemption's dry run asks this many times for one pod: its PodInfo is made once.
        cached = self._pod_info
        if cached is None or cached.pod is not pod:
            cached = self._pod_info = PodInfo(pod)
        return self._s._filter_info_with_nominated_pods(self._framework(), state, cached, node_info)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._framework().run_pre_filter_extension_add_pod(state, pod, pod_info_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._framework().run_pre_filter_extension_remove_pod(
            state, pod, pod_info_to_remove, node_info
        )

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self._s.nominator.nominated_pods_for_node(node_name)

    def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        self._s.nominator.add(PodInfo(pod), node_name)
        self._s.port.set_nominated_node_name(pod, node_name)

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        self._s.port.delete_pod(pod, reason=reason, message=message)

    def background_eviction(self) -> BackgroundEvictionPort | None:
        """The port's asynchronous eviction (live mode), or None: evict synchronously (simulator)."""
        port = self._s.port
        return port if isinstance(port, BackgroundEvictionPort) else None

    def process_preemption_with_extenders(
        self, pod: Pod, candidates: dict[str, tuple[list[Pod], int]]
    ) -> dict[str, tuple[list[Pod], int]]:
        """The candidates the preempt-verb extenders keep (all of them when there are none)."""
        extenders = self._s.extenders
        if extenders is None:
            return candidates
        return extenders.process_preemption(pod, candidates, self._s.cache.snapshot())

    def record_event(self, pod: Pod, *, type: str, reason: str, action: str, note: str) -> None:
        self._s.port.record_event(
            pod, type=type, reason=reason, action=action, note=note, reporter=self._profile
        )


class _VolumeBinderHandle(_ProfileHandle):
    """The Handle when the port writes volume bindings (live mode): VolumeBinding's PreBind uses it."""

    def __init__(self, scheduler: Scheduler, profile: str, binder: VolumeBinderPort) -> None:
        super().__init__(scheduler, profile)
        self._binder = binder

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        self._binder.bind_pvc(pvc, pv_name, timeout=timeout)

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        self._binder.provision_pvc(pvc, node_name, timeout=timeout)


class Scheduler:
    def __init__(
        self,
        profiles: Sequence[ProfileSpec],
        registry: Registry,
        port: ClusterPort,
        clock: Clock,
        options: SchedulerOptions = SchedulerOptions(),
        *,
        observer: Callable[[Attempt], None] | None = None,
        run_binding: Callable[[Callable[[], None]], None] | None = None,
        extenders: Extenders | None = None,
        bind_gate: Callable[[], str | None] | None = None,
        on_abandoned: Callable[[Abandoned], None] | None = None,
        batch_metrics: BatchMetrics | None = None,
    ) -> None:
        self.port = port
        #: Why this scheduler may not bind at all right now (None: it may); asked before PreBind and
        #: again, with the re-validation of the decision, just before Bind.
        self.bind_gate = bind_gate or (lambda: None)
        self.on_abandoned = on_abandoned or (lambda abandoned: None)
        #: HTTP extenders of the config (scheduler/extenders.py); None skips every extender hook.
        self.extenders = extenders
        self.clock = clock
        self.options = options
        self.rng = random.Random(options.seed)
        self.cache = Cache()
        #: objects every profile's plugins share (Handle.shared_state)
        self.shared: dict[str, Any] = {}
        self.nominator = Nominator()
        self.waiting = WaitingPods()
        self.observer = observer or (lambda attempt: None)
        self.run_binding = run_binding or (lambda fn: fn())
        self.frameworks: dict[str, Framework] = {}
        for spec in profiles:
            self.frameworks[spec.scheduler_name] = Framework(
                spec.scheduler_name,
                spec.points,
                spec.plugin_args,
                registry,
                (
                    _VolumeBinderHandle(self, spec.scheduler_name, port)
                    if isinstance(port, VolumeBinderPort)
                    else _ProfileHandle(self, spec.scheduler_name)
                ),
                percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
            )
        #: Opportunistic batching per profile; extenders turn signatures off, as upstream.
        self.batches = {
            name: OpportunisticBatch(fwk, clock, batch_metrics, signs=extenders is None)
            for name, fwk in self.frameworks.items()
        }
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            first.less,
            clock,
            profiles=self.frameworks,
            initial_backoff=options.pod_initial_backoff_seconds,
            max_backoff=options.pod_max_backoff_seconds,
        )
        self._pending: dict[str, Pod] = {}  # unassigned pods this scheduler is responsible for
        self._parked: dict[str, _Binding] = {}  # pods waiting at Permit
        self._next_start = 0
        #: Filter verdicts per pod shape, patched for the next pod of the shape (framework/filter_memo).
        self.filter_memo = FilterMemo()
        #: Failed attempts repeated for pods of the same content while nothing changes
        #: (scheduler/failure_memo); `_objects_version` counts the other objects' events for it.
        self.failure_memo = FailureMemo()
        self._objects_version = 0

    # ================================================================== cluster events in
    def responsible_for(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.frameworks

    def on_node_add(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)

    def on_node_update(self, old: Node, new: Node) -> None:
        self.cache.update_node(new)
        self.queue.move_all_to_active_or_backoff(
            ClusterEvent(Resource.NODE, _node_change(old, new)), old, new
        )

    def on_node_delete(self, node: Node) -> None:
        self.cache.remove_node(node.metadata.name)

    def on_object_event(self, resource: Resource, action: ActionType, old: Any, new: Any) -> None:
        """Another kind changed (a ResourceClaim, a PV, ...): plugins that keep a cache of such
        objects (`on_cluster_object`) see it first, then pods waiting for such an event move."""
        for fwk in self.frameworks.values():
            for plugin in fwk.plugins.values():
                observe = getattr(plugin, "on_cluster_object", None)
                if observe is not None:
                    observe(resource, old, new)
        self.filter_memo.forget_all()
        self._objects_version += 1
        self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, action), old, new)

    def on_pod_add(self, pod: Pod) -> None:
        """A pod appeared. Raises InputError (e.g. a bad quantity) so the caller can report the pod."""
        if pod.spec.node_name:
            self.cache.add_pod(PodInfo(pod))
            self._pending.pop(pod_key(pod), None)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)
            return
        if not self.responsible_for(pod):
            return
        pi = PodInfo(pod)
        self._pending[pi.key] = pod
        self.queue.add(pi)

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        key = pod_key(new)
        if new.spec.node_name:
            was_pending = key in self._pending
            self._pending.pop(key, None)
            if was_pending:
                self.queue.delete(key)
            known = self.cache.pod_info(key)  # typically the assumed copy of this very pod
            same_spec = known is not None and known.pod.spec == new.spec
            self.cache.update_pod(known.with_pod(new) if known is not None and same_spec else PodInfo(new))
            if not old.spec.node_name:
                self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, old, new)
            return
        if not self.responsible_for(new):
            return
        self._pending[key] = new
        if self.cache.is_assumed(key):
            # Being bound (its binding's own nominatedNodeName write comes back here): upstream
            # leaves assumed pods out of the queue, so the nomination is not counted twice.
            return
        self.queue.update(old, PodInfo(new))

    def on_pod_delete(self, pod: Pod) -> None:
        key = pod_key(pod)
        if self._pending.pop(key, None) is not None:
            self.queue.delete(key)
            self.filter_memo.forget(key)
            self.nominator.delete(key)
            wp = self.waiting.get(key)
            if wp is not None:
                wp.reject("", "pod deleted")
            # Live mode runs binding cycles concurrently: a pod deleted while its bind is in flight
            # is still assumed here; drop it, or its resources would stay accounted on the node.
            if self.cache.is_assumed(key):
                self.cache.remove_pod(key)
            return
        if self.cache.remove_pod(key) is not None:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)

    # ================================================================== scheduling cycle
    def schedule_one(self) -> bool:
        """Pop one pod and run its scheduling cycle. False when the active queue is empty."""
        qpi = self.queue.pop()
        if qpi is None:
            return False
        pod = self._pending.get(qpi.key)
        fwk = self.frameworks.get(qpi.pod.spec.scheduler_name)
        if pod is None or fwk is None or self.cache.has_pod(qpi.key):
            self.queue.done(qpi.key)
            return True
        if pod.metadata.deletion_timestamp:
            self.port.record_event(
                pod,
                type="Warning",
                reason="FailedScheduling",
                action="Scheduling",
                note=f"skip schedule deleting pod: {pod.key}",
                reporter=fwk.profile_name,
            )
            self.queue.done(qpi.key)
            return True
        started = self.clock.now()
        content = self._repeatable_content(fwk, qpi)
        frame: tuple[Any, ...] = ()
        start, position = self._next_start, -1
        if content is not None:
            frame, position = self._cluster_frame(), self.cache.snapshot().pod_log_position
            failure = self.failure_memo.get(frame, fwk.profile_name, content)
            if failure is not None and self._still_fails(fwk, qpi, failure):
                self._repeat_failure(fwk, qpi, failure, started)
                return True
        state = CycleState()
        try:
            result = self._schedule_pod(fwk, state, qpi)
        except FitError as fit:
            nominated, victims = self._after_fit_error(fwk, state, qpi, fit, started)
            if (
                content is not None
                and not nominated
                and not victims
                and self._cluster_frame() == frame
                and self.cache.snapshot().pod_log_position == position
            ):
                self._keep_failure(fwk, state, qpi, fit, content, start, nominated, frame, position)
            return True
        except _CycleError as err:
            self._fail(fwk, qpi, err.status, started, filter_=err.filter)
            return True
        self._assume_and_reserve(fwk, state, qpi, result, started)
        return True

    def _schedule_pod(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo) -> _ScheduleResult:
        pod = qpi.pod
        table = self.cache.snapshot()
        if len(table) == 0:
            raise _CycleError(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE))
        all_nodes = table.all()
        diagnosis = Diagnosis()
        pre_result, status, plugins = fwk.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins |= plugins
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise _CycleError(status)
            diagnosis.pre_filter_msg = status.message()
            diagnosis.pre_filter_status = status
            if status.code == Code.PENDING:
                diagnosis.pending_plugins |= plugins
            raise FitError(pod, len(table), diagnosis)

        batch = self.batches[fwk.profile_name]
        cycle = self.queue.scheduling_cycle
        hint, signature = batch.node_hint(state, pod, cycle, table)

        # An earlier preemption nominated a node: try it alone first.
        nominated = pod.status.nominated_node_name or self.nominator.nominated_node(qpi.key)
        allowed = pre_result is None or pre_result.node_names is None or nominated in pre_result.node_names
        if nominated and nominated in table.index and allowed:
            st = self._filter_with_nominated_pods(fwk, state, qpi.pod_info, table, nominated)
            # Filter extenders must accept the nominated node too (upstream evaluateNominatedNode).
            if st is None and (self.extenders is None or self.extenders.accepts_node(pod, table, nominated)):
                batch.store(signature, hint, nominated, cycle)
                return _ScheduleResult(nominated, 1, 1)

        # Opportunistic batching: the last pod's runner-up, if it fits, without scoring anyone else.
        # A nominated pod whose node no longer fits goes to the full pass, hint or not (as upstream).
        allowed = pre_result is None or pre_result.node_names is None or hint in pre_result.node_names
        pi = qpi.pod_info
        if (
            hint
            and not nominated
            and allowed
            and self._filter_with_nominated_pods(fwk, state, pi, table, hint) is None
        ):
            batch.store(signature, hint, hint, cycle)
            return _ScheduleResult(hint, 1, 1)

        nodes = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            nodes = table.subset(sorted(pre_result.node_names))
            diagnosis.absent_nodes_status = rejected_by_plugins(sorted(plugins))
        feasible, wrap, evaluated, node_to_status = self._find_nodes_that_pass_filters(fwk, state, qpi, nodes)
        self._next_start = (self._next_start + evaluated) % len(table)
        if self.extenders is not None:  # filter extenders run after the Filter plugins, in order
            feasible, ext_error = self.extenders.run_filters(pod, feasible, node_to_status, diagnosis)
            if ext_error is not None:
                raise _CycleError(ext_error)
        diagnosis.node_to_status = node_to_status
        for st, _ in distinct_statuses(node_to_status):
            if st.plugin:
                diagnosis.unschedulable_plugins.add(st.plugin)
        if len(feasible) == 0:
            raise FitError(pod, len(table), diagnosis)
        explain_filter = node_to_status if self.options.explain else None
        if len(feasible) == 1:
            batch.store(signature, hint, feasible.names[0], cycle)
            return _ScheduleResult(feasible.names[0], evaluated, 1, filter=explain_filter)
        status = fwk.run_pre_score(state, pod, feasible)
        if status is not None:
            raise _CycleError(status, explain_filter)
        outcome = fwk.run_score(state, pod, feasible, keep_raw=signature is not None)
        if outcome.error is not None:
            raise _CycleError(outcome.error, explain_filter)
        if not fwk.has_score_plugins():
            outcome.totals[:] = 1
        if self.extenders is not None:  # prioritize extenders add score * weight * 10 per node
            self.extenders.run_prioritize(pod, feasible, outcome)
        best = self._select_host(outcome.totals, wrap)
        scores = None
        if self.options.explain:
            names = feasible.names
            scores = {
                names[i]: ({p: int(s[i]) for p, s in outcome.by_plugin.items()}, int(outcome.totals[i]))
                for i in range(len(feasible))
            }
        chosen = feasible.table.names[int(feasible.rows[best])]
        runners_up = _runners_up(feasible, outcome, wrap, best) if signature is not None else None
        batch.store(signature, hint, chosen, cycle, runners_up, left=len(feasible) - 1)
        return _ScheduleResult(chosen, evaluated, len(feasible), scores, explain_filter)

    def _find_nodes_that_pass_filters(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, nodes: NodeSet
    ) -> tuple[NodeSet, int, int, dict[str, Status]]:
        """Filter from a rotating start, keep the first `numFeasibleNodesToFind` feasible nodes.

        Returns (feasible, wrap, evaluated, failed). The Filter plugins see `nodes` in table order
        (a full table reads its columns as views); the rotation only decides which feasible nodes
        are kept and their order, which is `feasible[wrap:]` then `feasible[:wrap]`. When someone
        reads that order (extenders, --explain, nominated pods) feasible comes rotated (wrap 0).
        `failed` (node -> status) is filled only when it can be read: no feasible node, or the
        readers above.
        """
        n = len(nodes)
        if n == 0:
            return nodes, 0, 0, {}
        to_find = num_feasible_nodes_to_find(
            fwk.percentage_of_nodes_to_score, self.options.percentage_of_nodes_to_score, n
        )
        if not fwk.has_score_plugins() and not self.extenders:  # extenders want every feasible node
            to_find = 1
        start = self._next_start % n
        outcome = self.filter_memo.run_filter(fwk, state, qpi.pod, qpi.key, nodes)
        if outcome.error is not None:
            raise _CycleError(outcome.error)
        status_idx = outcome.status_idx
        feasible_pos = np.flatnonzero(status_idx < 0)  # positions in `nodes`, ascending
        low = int(np.searchsorted(feasible_pos, start))  # feasible positions before the start
        evaluated = n
        if len(feasible_pos) > to_find:
            # Keep the first `to_find` feasible nodes in rotated order (positions >= start first).
            high = len(feasible_pos) - low
            if to_find <= high:
                last = int(feasible_pos[low + to_find - 1])
                evaluated = last - start + 1
                feasible_pos = feasible_pos[low : low + to_find]
                low = 0
            else:
                last = int(feasible_pos[to_find - high - 1])
                evaluated = n - start + last + 1
                feasible_pos = np.concatenate((feasible_pos[: to_find - high], feasible_pos[low:]))
                low = to_find - high
        failed: dict[str, Status] = {}
        # Per-node statuses only matter if the pod cannot be placed (FitError, preemption), or to
        # extenders, --explain and nominated pods; a pod that fits never needs them.
        readers = bool(self.extenders) or self.options.explain or self.nominator.has_nominated_pods()
        if (readers or len(feasible_pos) == 0) and (failing := np.flatnonzero(status_idx >= 0)).size:
            # Failed nodes in rotated order, among the evaluated ones only.
            cut = int(np.searchsorted(failing, start))
            rotated_failing = np.concatenate((failing[cut:], failing[:cut]))
            if evaluated < n:
                rotated_failing = rotated_failing[(rotated_failing - start) % n < evaluated]
            columns = StatusColumns(
                nodes.table, nodes.rows[rotated_failing], status_idx[rotated_failing], outcome.statuses
            )
            failed = NodeStatuses.from_columns(columns)
        if low and readers:
            feasible_pos = np.concatenate((feasible_pos[low:], feasible_pos[:low]))
            low = 0
            feasible = NodeSet(nodes.table, nodes.rows[feasible_pos])
        elif nodes.full and len(feasible_pos) == n:
            feasible = nodes  # every node, in table order: plugins read the table's columns as views
        else:
            feasible = NodeSet(nodes.table, nodes.rows[feasible_pos])
        if self.nominator.has_nominated_pods():
            feasible = self._apply_nominated_pods(fwk, state, qpi, feasible, failed)
        return feasible, low, evaluated, failed

    def _apply_nominated_pods(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        feasible: NodeSet,
        failed: dict[str, Status],
    ) -> NodeSet:
        """Re-check feasible nodes that have nominated pods of equal or higher priority."""
        if not self.nominator.has_nominated_pods():
            return feasible
        keep = np.ones(len(feasible), dtype=np.bool_)
        for i, name in enumerate(feasible.names):
            if self.nominator.nominated_pods_for_filter(name, qpi.pod_info):
                st = self._filter_with_nominated_pods(fwk, state, qpi.pod_info, feasible.table, name)
                if st is not None:
                    keep[i] = False
                    failed[name] = st
        return feasible.select(keep)

    def _filter_with_nominated_pods(
        self, fwk: Framework, state: CycleState, pi: PodInfo, table: NodeTable, node_name: str
    ) -> Status | None:
        """Filters with higher-or-equal priority nominated pods added, then without them; both must pass."""
        return self._filter_info_with_nominated_pods(fwk, state, pi, table.infos[table.index[node_name]])

    def _filter_info_with_nominated_pods(
        self, fwk: Framework, state: CycleState, pi: PodInfo, info: NodeInfo
    ) -> Status | None:
        node_name = info.name
        nominated = self.nominator.nominated_pods_for_filter(node_name, pi)
        if nominated:
            state_with = state.clone()
            info_with = info.clone()
            for other in nominated:
                info_with.add_pod(other)
                st = fwk.run_pre_filter_extension_add_pod(state_with, pi.pod, other, info_with)
                if st is not None:
                    return st
            st = fwk.run_filter_on_node(state_with, pi.pod, info_with)
            if st is not None:
                return st
        return fwk.run_filter_on_node(state, pi.pod, info)

    def _select_host(self, totals: np.ndarray[Any, np.dtype[np.int64]], wrap: int = 0) -> int:
        """Uniformly random among the top-scoring nodes, from the seeded RNG.

        The draw indexes the top nodes in evaluation order: `totals[wrap:]` then `totals[:wrap]`.
        """
        top = np.flatnonzero(totals == totals.max())
        if len(top) == 1:
            return int(top[0])
        k = self.rng.randrange(len(top))
        if wrap:
            high = len(top) - int(np.searchsorted(top, wrap))  # top nodes at or after `wrap` come first
            return int(top[len(top) - high + k] if k < high else top[k - high])
        return int(top[k])

    # ================================================================== assume, reserve, permit
    def _assume_and_reserve(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: _ScheduleResult, started: float
    ) -> None:
        pod = qpi.pod
        node = result.node
        assumed = _with_node_name(pod, node)
        assumed_info = qpi.pod_info.with_pod(assumed)  # only spec.nodeName differs
        self.cache.assume_pod(assumed_info, node)
        self.nominator.delete(qpi.key)

        status = fwk.run_reserve(state, assumed, node)
        if status is not None:
            fwk.run_unreserve(state, assumed, node)
            self.cache.forget_pod(qpi.key)
            self._fail(fwk, qpi, _as_fit_status(status), started, filter_=result.filter)
            return
        permit = fwk.run_permit(state, assumed, node)
        if permit.status is not None and not permit.status.is_wait():
            fwk.run_unreserve(state, assumed, node)
            self.cache.forget_pod(qpi.key)
            self._fail(fwk, qpi, _as_fit_status(permit.status), started, filter_=result.filter)
            return
        binding = _Binding(fwk, state, qpi, node, assumed)
        binding.extra["result"] = result
        binding.extra["started"] = started
        binding.extra["decided_on"] = self._node_version(node)
        if permit.waits:
            self._expect_binding(binding)  # before waiting, as upstream's binding cycle does
            now = self.clock.now()
            deadlines = {p: now + t for p, t in permit.waits.items()}
            self.waiting.add(qpi.key, WaitingPod(assumed, node, deadlines, now))
            self._parked[qpi.key] = binding
            self.observer(
                Attempt(
                    pod,
                    fwk.profile_name,
                    "Waiting",
                    node=node,
                    message=permit.status.message() if permit.status else None,
                    filter=result.filter,
                    scores=result.scores,
                    attempts=qpi.attempts,
                    evaluated=result.evaluated,
                    feasible=result.feasible,
                )
            )
            return
        self.run_binding(lambda: self._binding_cycle(binding))

    # ================================================================== binding cycle
    def release_waiting_pods(self) -> int:
        """Expire Permit timers and start the binding cycles of pods no longer waiting."""
        now = self.clock.now()
        released = 0
        for key, binding in list(self._parked.items()):
            wp = self.waiting.get(key)
            if wp is None:
                continue
            wp.expire(now)
            if wp.result is not None:
                del self._parked[key]
                released += 1
                self.run_binding(lambda b=binding: self._binding_cycle(b))  # type: ignore[misc]
        return released

    def next_permit_deadline(self) -> float | None:
        return self.waiting.next_deadline()

    def _binding_cycle(self, b: _Binding) -> None:
        key = b.qpi.key
        fwk, state, pod, node = b.fwk, b.state, b.assumed, b.node
        started: float = b.extra["started"]
        result: _ScheduleResult = b.extra["result"]
        wp = self.waiting.get(key)
        if wp is not None:
            status = wp.result if wp.result is not None else wp.wait()
            self.waiting.remove(key)
            if status is not None and not status.is_success():
                self._binding_failed(b, _as_fit_status(status), started)
                return
        self.queue.done(key)
        if (refused := self.bind_gate()) is not None:
            self._abandon(b, "Refused", refused)
            return
        if wp is None and fwk.pre_bind_has_work(state, pod, node):
            self._expect_binding(b)
        status = fwk.run_pre_bind(state, pod, node)
        if status is None and (stale := self.stale_decision(b)) is not None:
            self._abandon(b, *stale)
            return
        if status is None and self.extenders is not None:  # a bindVerb extender binds before the plugins
            status = self.extenders.bind(pod, node)  # Skip: no extender took the pod
            status = fwk.run_bind(state, pod, node) if status is not None and status.is_skip() else status
        elif status is None:
            status = fwk.run_bind(state, pod, node)
        if status is not None:
            if isinstance(status.error, BindRefused):
                self._abandon(b, "Refused", str(status.error))
                return
            self._binding_failed(b, status, started)
            return
        self.cache.finish_binding(key)
        self._pending.pop(key, None)
        self.port.record_event(
            pod,
            type="Normal",
            reason="Scheduled",
            action="Binding",
            note=f"Successfully assigned {pod.metadata.namespace}/{pod.metadata.name} to {node}",
            reporter=fwk.profile_name,
        )
        fwk.run_post_bind(state, pod, node)
        self.observer(
            Attempt(
                b.qpi.pod,
                fwk.profile_name,
                "Scheduled",
                node=node,
                filter=result.filter,
                scores=result.scores,
                duration=self.clock.now() - started,
                attempts=b.qpi.attempts,
                evaluated=result.evaluated,
                feasible=result.feasible,
            )
        )

    def _expect_binding(self, b: _Binding) -> None:
        """v1.37's NominatedNodeNameForExpectation: a pod whose binding will take a while (a Permit
        waits, or PreBind has volumes or claims to bind) shows the node in `nominatedNodeName` until
        it is bound, so autoscalers count the room as taken; a quick bind gets no extra write."""
        b.extra["expected"] = True
        self.port.expect_binding(b.qpi.pod, b.node)
        # The pod as the API server holds it now: clearing the nomination later must not be
        # skipped as "no change" because the informer has not shown this write yet.
        if (pending := self._pending.get(b.qpi.key)) is not None:
            self._pending[b.qpi.key] = _with_nomination(pending, b.node)

    def stale_decision(self, b: _Binding) -> tuple[str, str] | None:
        """(reason, message) when the decision must not be bound any more; None when it still holds.

        Asked under the state lock just before the bind is sent: the gate first (leadership,
        shutdown), then the decision against the cache as it is now: the pod is still ours and
        assumed there, the node still exists, and the profile's cheap filters (REVALIDATED_FILTERS)
        still pass on the node with every other bound and assumed pod counted.
        """
        if (refused := self.bind_gate()) is not None:
            return "Refused", refused
        key = b.qpi.key
        if key not in self._pending or not self.cache.is_assumed(key) or self.cache.pod_node(key) != b.node:
            return "PodGone", f"pod {b.assumed.key} was deleted or bound elsewhere meanwhile"
        info = self.cache.node_info(b.node)
        if info is None:
            return "NodeGone", f"node {b.node} no longer exists"
        if b.extra.get("decided_on") == self._node_version(b.node):
            # Nothing on the node changed since the decision: it holds exactly as the Filters saw
            # it. Re-filtering here could only disagree with them (ports are a set, see below), and
            # an abandoned decision that is made again unchanged would loop for ever.
            return None
        # The node with every other pod, accounted afresh (removing ours from a clone would also
        # drop a host port another pod holds too: ports are kept as a set).
        probe = NodeInfo(info.node, [pi for k, pi in info.pods.items() if k != key])
        enabled = b.fwk.plugins_at("filter")
        for name in REVALIDATED_FILTERS:
            plugin = b.fwk.plugins.get(name) if name in enabled else None
            if plugin is None:
                continue
            status = plugin.filter(b.state, b.assumed, probe)
            if status is not None and not status.is_success():
                return "NoLongerFits", f"node {b.node}: {status.message()}"
        return None

    def _node_version(self, node: str) -> tuple[NodeInfo, int] | None:
        """Which NodeInfo the cache has for `node` and how often it changed (None: no such node);
        a node deleted and added again is another NodeInfo, so equal versions mean no change."""
        info = self.cache.node_info(node)
        return None if info is None else (info, info.generation)

    def _abandon(self, b: _Binding, reason: str, message: str) -> None:
        """Drop a decision before its bind is sent: undo Reserve and the assume, and put the pod
        straight back into activeQ (no backoff, no FailedScheduling: nothing failed but the timing)."""
        key = b.qpi.key
        b.fwk.run_unreserve(b.state, b.assumed, b.node)
        if self.cache.is_assumed(key):
            self.cache.forget_pod(key)
            freed = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
            self.queue.move_all_to_active_or_backoff(freed, b.assumed, None, exclude=key)
        if key in self._pending:
            if b.extra.get("expected"):
                self.port.set_nominated_node_name(self._pending[key], "")
            self.queue.retry_now(b.qpi)
        self.queue.done(key)
        self.on_abandoned(Abandoned(b.qpi.pod, b.fwk.profile_name, b.node, reason, message))

    def _binding_failed(self, b: _Binding, status: Status, started: float) -> None:
        key = b.qpi.key
        b.fwk.run_unreserve(b.state, b.assumed, b.node)
        if self.cache.is_assumed(key):
            self.cache.forget_pod(key)
        freed = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
        # A binding that set nominatedNodeName clears it when it fails (upstream does too).
        nominated = "" if b.extra.get("expected") else None
        if status.is_rejected():
            # Requeue the pod first, then tell the others about the freed room without moving the
            # pod itself: it stays unschedulable instead of cycling through backoff.
            self._fail(b.fwk, b.qpi, status, started, filter_=None, nominated=nominated)
            self.queue.move_all_to_active_or_backoff(freed, b.assumed, None, exclude=key)
            return
        self.queue.move_all_to_active_or_backoff(freed, b.assumed, None)
        self._fail(b.fwk, b.qpi, status, started, filter_=None, nominated=nominated)

    # ================================================================== repeated failures
    def _repeatable_content(self, fwk: Framework, qpi: QueuedPodInfo) -> bytes | None:
        """The pod's content (`pod_content`) when a failure of its attempt may be kept or repeated:
        every plugin up to PostFilter promises it, no extender takes part, the pod is not
        nominated (its nominated node is tried first) and batching has no node list to offer."""
        if not fwk.repeats_failures or self.extenders is not None:
            return None
        pod = qpi.pod
        if pod.status.nominated_node_name or self.nominator.nominated_node(qpi.key) is not None:
            return None
        if not self.batches[fwk.profile_name].idle:
            return None
        known = qpi.content_key
        if known is not None and known[0] is pod:
            return known[1]
        content = pod_content(pod)
        qpi.content_key = (pod, content)
        return content

    def _cluster_frame(self) -> tuple[Any, ...]:
        """What a promised plugin reads besides the pod and the pods on nodes (which the node
        table's pod log follows): the nodes, the nominations and the other objects."""
        table = self.cache.snapshot()
        return (table, table.node_generation, self.nominator.version, self._objects_version)

    def _still_fails(self, fwk: Framework, qpi: QueuedPodInfo, failure: RepeatableFailure) -> bool:
        """Whether the kept failure holds now: no pod changed since, or every plugin's part survives
        pod changes and each node whose pods changed, filtered again with the failed attempt's
        state, gives the status it gave.

        A failure that filtered every node left the rotating start where it was and does not depend
        on it (only the order of its per-node statuses, a map upstream, follows the start); one that
        filtered fewer (PreFilter named the nodes) moved it, and is repeated only from the same start.
        """
        if failure.start_after != failure.start_before and failure.start_before != self._next_start:
            return False
        table = self.cache.snapshot()
        position = table.pod_log_position
        if failure.position == position:
            return True
        if self.nominator.has_nominated_pods():  # nominated pods take part in filtering a node
            return False
        rows = table.rows_changed_since(failure.position)
        if rows is None or len(rows) > MAX_REFILTERED_ROWS:
            return False
        if not fwk.failure_survives_pod_changes(failure.state, qpi.pod, table):
            return False
        diagnosis = failure.diagnosis
        if diagnosis.pre_filter_status is None:  # else no node was filtered: PreFilter still says no
            for row in rows:
                was = failure.status_on(table, row)
                info = table.infos[row]
                if was is None:
                    if diagnosis.absent_nodes_status is None:
                        return False
                    continue  # left out by PreFilter, which still answers the same
                now = fwk.run_filter_on_node(failure.state, qpi.pod, info)
                if now is None or now != was or now.plugin != was.plugin:
                    return False
        failure.position = position
        return True

    def _keep_failure(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        fit: FitError,
        content: bytes,
        start: int,
        nominated: str | None,
        frame: tuple[Any, ...],
        position: int,
    ) -> None:
        """Keep a failed attempt, which nominated and evicted nobody and changed nothing (the
        cluster is still in `frame`, the pod log at `position`), for the next pods of the same
        content, if every plugin says a repeat would fail the same way."""
        if not fwk.failure_repeats(state, qpi.pod):
            return
        counts = fit.reason_counts()
        failure = RepeatableFailure(
            diagnosis=fit.diagnosis,
            num_all_nodes=fit.num_all_nodes,
            counts=counts,
            reasons=counts.most_common(TOP_REASONS),
            message=str(fit),
            state=state,
            nominated=nominated,
            asked_for_hint=fit.diagnosis.pre_filter_status is None,
            start_before=start,
            start_after=self._next_start,
            position=position,
        )
        self.failure_memo.put(frame, fwk.profile_name, content, failure)

    def _repeat_failure(
        self, fwk: Framework, qpi: QueuedPodInfo, failure: RepeatableFailure, started: float
    ) -> None:
        """Fail the pod as the kept attempt failed, redoing what that attempt changed besides the
        plugins' answers: their random draws, batching's count of cycles without a hint, the
        rotating start, then the requeue, event and condition of any failure."""
        fwk.repeat_failure(failure.state)
        if failure.asked_for_hint:
            self.batches[fwk.profile_name].no_hint()  # idle, or the failure would not be repeated
        if failure.start_after != failure.start_before:
            self._next_start = failure.start_after
        fit = FitError(qpi.pod, failure.num_all_nodes, failure.diagnosis, failure.counts, failure.message)
        self._fail_fit(
            fwk, qpi, fit, started, nominated=failure.nominated, victims=[], reasons=failure.reasons
        )

    # ================================================================== failures
    def _after_fit_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, fit: FitError, started: float
    ) -> tuple[str | None, list[str]]:
        """PostFilter, then the failure; returns the PostFilter's nomination and victims."""
        nominated: str | None = None
        victims: list[str] = []
        if fwk.plugins_at("postFilter"):
            result, status = fwk.run_post_filter(state, qpi.pod, fit.diagnosis.node_to_status)
            fit.diagnosis.post_filter_msg = status.message()
            if result is not None:
                # None keeps the pod's nomination, "" clears it, a name nominates (preemption).
                nominated = result.nominated_node_name
                victims = list(result.victims)
        self._fail_fit(fwk, qpi, fit, started, nominated=nominated, victims=victims)
        return nominated, victims

    def _fail_fit(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        fit: FitError,
        started: float,
        *,
        nominated: str | None,
        victims: list[str],
        reasons: list[tuple[str, int]] | None = None,
    ) -> None:
        """The failure of an attempt in which no node fit (its own or a repeated one, which passes
        the `reasons` the first one counted)."""
        qpi.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(fit.diagnosis.pending_plugins)
        explain = fit.diagnosis.node_to_status if self.options.explain else None
        if explain is not None and fit.diagnosis.absent_nodes_status is not None:
            explain = dict(explain)
            table = self.cache.snapshot()
            for name in table.names:
                explain.setdefault(name, fit.diagnosis.absent_nodes_status)
        status = Status(Code.UNSCHEDULABLE, error=fit)
        self._fail(
            fwk,
            qpi,
            status,
            started,
            filter_=explain,
            nominated=nominated,
            victims=victims,
            pre_filter=fit.diagnosis.pre_filter_status,
            post_filter=fit.diagnosis.post_filter_msg,
            reasons=fit.reason_counts().most_common(TOP_REASONS) if reasons is None else reasons,
        )

    def _fail(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        started: float,
        *,
        filter_: dict[str, Status] | None,
        nominated: str | None = None,
        victims: list[str] | None = None,
        pre_filter: Status | None = None,
        post_filter: str = "",
        reasons: list[tuple[str, int]] | None = None,
    ) -> None:
        """Upstream's handleSchedulingFailure: requeue, nominate, FailedScheduling event, condition.

        `nominated`: None keeps the pod's nomination, "" clears it, a node name nominates the pod.
        """
        key = qpi.key
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        if rejected and status.plugin and not isinstance(status.error, FitError):
            qpi.unschedulable_plugins.add(status.plugin)
        if not rejected:
            qpi.unschedulable_plugins = set()
            qpi.pending_plugins = set()
        message = status.message()
        pod = self._pending.get(key)
        if pod is not None and not self.cache.has_pod(key):
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle)
            if nominated is not None:
                self.nominator.add(qpi.pod_info, nominated)
            self.port.record_event(
                pod,
                type="Warning",
                reason="FailedScheduling",
                action="Scheduling",
                note=truncate_note(message),
                reporter=fwk.profile_name,
            )
            self.port.set_pod_scheduled_condition(
                pod, reason=reason, message=message, nominated_node_name=nominated
            )
        self.queue.done(key)
        self.observer(
            Attempt(
                qpi.pod,
                fwk.profile_name,
                "Unschedulable" if rejected else "Error",
                message=message,
                nominated_node=nominated or self.nominator.nominated_node(key),
                filter=filter_,
                pre_filter=pre_filter,
                post_filter=post_filter,
                duration=self.clock.now() - started,
                attempts=qpi.attempts,
                reasons=list(reasons or ()),
                error=None if rejected else status.error,
                victims=list(victims or ()),
            )
        )


class _CycleError(Exception):
    def __init__(self, status: Status, filter: dict[str, Status] | None = None) -> None:
        self.status = status
        self.filter = filter
        super().__init__(status.message())


def _as_fit_status(status: Status) -> Status:
    """Reserve/Permit rejections read like a one-node FitError: `0/1 nodes are available: <r>.`"""
    if not status.is_rejected():
        return status
    d = Diagnosis(
        node_to_status={"": status}, unschedulable_plugins={status.plugin} if status.plugin else set()
    )
    wrapped = Status(status.code, error=_PlainFitError(d))
    wrapped.plugin = status.plugin
    return wrapped


class _PlainFitError(Exception):
    def __init__(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        from kubesched.framework.types import fit_error_message

        return fit_error_message(1, self.diagnosis)


def _runners_up(feasible: NodeSet, outcome: ScoreOutcome, wrap: int, chosen: int) -> RunnersUp:
    """The feasible nodes but the chosen one, with their totals and raw scores; equal totals rank
    in the order they were evaluated (`feasible[wrap:]` then `feasible[:wrap]`)."""
    n = len(feasible)
    keep = np.arange(n) != chosen
    evaluation_rank = (np.arange(n) - wrap) % n
    names = feasible.names
    return RunnersUp(
        [names[i] for i in np.flatnonzero(keep).tolist()],
        outcome.totals[keep].copy(),
        {p: raw[keep] for p, raw in outcome.raw.items()},
        evaluation_rank[keep],
    )


def _with_node_name(pod: Pod, node: str) -> Pod:
    import msgspec

    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


def _with_nomination(pod: Pod, node: str) -> Pod:
    import msgspec

    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name=node))


def _node_change(old: Node, new: Node) -> ActionType:
    """Which Update* bits a node update carries (labels, taints, allocatable, conditions)."""
    action = ActionType(0)
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.spec.taints != new.spec.taints or old.spec.unschedulable != new.spec.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.effective_allocatable() != new.effective_allocatable():
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.status.conditions != new.status.conditions:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.status.declared_features != new.status.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action or ActionType.UPDATE


__all__ = ["REVALIDATED_FILTERS", "Abandoned", "Attempt", "ProfileSpec", "Scheduler", "SchedulerOptions"]
