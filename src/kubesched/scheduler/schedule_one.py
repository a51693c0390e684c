"""The scheduling cycle (upstream's schedule_one.go): pop a pod, find the nodes that fit it,
score them, pick one, assume the pod there and Reserve and Permit it; the binding cycle
(binding_cycle.py) takes it from there.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.filter_memo import FilterMemo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.sampling import num_feasible_nodes_to_find
from kubesched.framework.scoring import ScoreOutcome
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
)
from kubesched.scheduler.attempt import ScheduleResult
from kubesched.scheduler.batch import OpportunisticBatch, RunnersUp
from kubesched.scheduler.binding_cycle import Binding, BindingCycle, node_version
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.failure_memo import RepeatedFailures
from kubesched.scheduler.failures import Failures, as_fit_status
from kubesched.scheduler.nominator import Nominator, filter_with_nominated_pods
from kubesched.scheduler.options import TIE_BREAK_NODE_NAME, SchedulerOptions
from kubesched.scheduler.ports import ClusterPort
from kubesched.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.extenders import Extenders

__all__ = [
    "PLUGIN_METRICS_SAMPLE_EVERY",
    "CycleError",
    "GroupCycle",
    "SchedulingCycle",
    "lowest_name_host",
    "select_host",
    "with_node_name",
]

#: One scheduling cycle in this many times its plugin calls (upstream samples 10 % of cycles:
#: timing every call costs more than the cheap plugins it times). Counted, not drawn at random, so
#: the seeded RNG that breaks score ties is never touched and the first cycle is always timed.
PLUGIN_METRICS_SAMPLE_EVERY = 10


class GroupCycle(Protocol):
    """The pod-group cycle (pod_group_cycle.py), asked first about every pod popped."""

    def handles(self, pod: Pod) -> bool: ...

    def schedule(self, fwk: Framework, qpi: QueuedPodInfo, started: float) -> None: ...


class SchedulingCycle:
    """Runs scheduling cycles; keeps the filter pass's rotating start (upstream's
    nextStartNodeIndex) from one to the next."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        nominator: Nominator,
        port: ClusterPort,
        clock: Clock,
        options: SchedulerOptions,
        rng: random.Random,
        pending: dict[str, Pod],
        frameworks: Mapping[str, Framework],
        batches: Mapping[str, OpportunisticBatch],
        extenders: Extenders | None,
        filter_memo: FilterMemo,
        failures: Failures,
        repeated: RepeatedFailures,
        binding: BindingCycle,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._nominator = nominator
        self._port = port
        self._clock = clock
        self._options = options
        self._rng = rng
        #: The Scheduler's unassigned pods (shared): a popped pod no longer in it is skipped.
        self._pending = pending
        self._frameworks = frameworks
        self._batches = batches
        self._extenders = extenders
        self._filter_memo = filter_memo
        self._failures = failures
        self._repeated = repeated
        self._binding = binding
        self._next_start = 0
        self._cycles = 0
        #: Set by the Scheduler when GenericWorkload is on: pods of a PodGroup are scheduled with it.
        self.group_cycle: GroupCycle | None = None

    def schedule_one(self) -> bool:
        """Pop one pod and run its scheduling cycle. False when the active queue is empty."""
        qpi = self._queue.pop()
        if qpi is None:
            return False
        fwk = self._frameworks.get(qpi.pod.spec.scheduler_name)
        if fwk is None:
            self._queue.done(qpi.key)
            return True
        if self.skipped(fwk, qpi):
            return True
        started = self._clock.now()
        if self.group_cycle is not None and self.group_cycle.handles(qpi.pod):
            self.group_cycle.schedule(fwk, qpi, started)
            return True
        begun = self._repeated.begin(fwk, qpi, self._next_start)
        if begun is not None and (failure := self._repeated.holding(fwk, qpi, begun)) is not None:
            moved = self._repeated.repeat(fwk, qpi, failure, started)
            if moved is not None:
                self._next_start = moved
            return True
        state = CycleState()
        state.record_plugin_metrics = self._cycles % PLUGIN_METRICS_SAMPLE_EVERY == 0
        self._cycles += 1
        try:
            result = self._schedule_pod(fwk, state, qpi)
        except FitError as fit:
            nominated, victims = self._failures.after_fit_error(fwk, state, qpi, fit, started)
            if begun is not None and not nominated and not victims:
                self._repeated.keep(
                    fwk, state, qpi, fit, begun, nominated=nominated, start_after=self._next_start
                )
            return True
        except CycleError as err:
            self._failures.fail(fwk, qpi, err.status, started, filter_=err.filter)
            return True
        self._assume_and_reserve(fwk, state, qpi, result, started)
        return True

    def skipped(self, fwk: Framework, qpi: QueuedPodInfo) -> bool:
        """upstream's skipPodSchedule: a popped pod that is gone, assumed or being deleted is not
        scheduled (its cycle is over: `done`); a deleting one gets a FailedScheduling event saying so."""
        pod = self._pending.get(qpi.key)
        if pod is None or self._cache.has_pod(qpi.key):
            self._queue.done(qpi.key)
            return True
        if pod.metadata.deletion_timestamp:
            self._port.record_event(
                pod,
                type="Warning",
                reason="FailedScheduling",
                action="Scheduling",
                note=f"skip schedule deleting pod: {pod.key}",
                reporter=fwk.profile_name,
            )
            self._queue.done(qpi.key)
            return True
        return False

    def schedule_pod(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, placement: NodeSet | None = None
    ) -> ScheduleResult:
        """Filter and score one pod (no PostFilter); raises FitError or CycleError. The pod-group
        cycle calls it for each member, within `placement` when it tries one (None: every node)."""
        return self._schedule_pod(fwk, state, qpi, placement)

    def assume_and_reserve(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult, started: float
    ) -> None:
        """Assume, Reserve and Permit the pod on `result.node`, then start its binding cycle."""
        self._assume_and_reserve(fwk, state, qpi, result, started)

    def _schedule_pod(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, placement: NodeSet | None = None
    ) -> ScheduleResult:
        pod = qpi.pod
        table = self._cache.snapshot()
        # Within a placement (upstream's AssumePlacement) only its nodes are filtered, counted in a
        # FitError and eligible as nominated or hinted node; PreFilter still sees every node.
        all_nodes = table.all() if placement is None else _in_table(placement, table)
        in_placement = None if placement is None else frozenset(all_nodes.names)
        if len(all_nodes) == 0:
            raise CycleError(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE))
        diagnosis = Diagnosis()
        pre_result, status, plugins = fwk.run_pre_filter(state, pod, table.all())
        diagnosis.unschedulable_plugins |= plugins
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise CycleError(status)
            diagnosis.pre_filter_msg = status.message()
            diagnosis.pre_filter_status = status
            if status.code == Code.PENDING:
                diagnosis.pending_plugins |= plugins
            raise FitError(pod, len(all_nodes), diagnosis)

        batch = self._batches[fwk.profile_name]
        cycle = self._queue.scheduling_cycle
        hint, signature = batch.node_hint(state, pod, cycle, table)

        # An earlier preemption nominated a node: try it alone first.
        nominated = pod.status.nominated_node_name or self._nominator.nominated_node(qpi.key)
        allowed = pre_result is None or pre_result.node_names is None or nominated in pre_result.node_names
        allowed = allowed and (in_placement is None or nominated in in_placement)
        if nominated and nominated in table.index and allowed:
            st = self._filter_with_nominated_pods(fwk, state, qpi, table, nominated)
            # Filter extenders must accept the nominated node too (upstream evaluateNominatedNode).
            extenders = self._extenders
            if st is None and (extenders is None or extenders.accepts_node(pod, table, nominated)):
                batch.store(signature, hint, nominated, cycle)
                return ScheduleResult(nominated, 1, 1)

        # Opportunistic batching: the last pod's runner-up, if it fits, without scoring anyone else.
        # A nominated pod whose node no longer fits goes to the full pass, hint or not (as upstream).
        allowed = pre_result is None or pre_result.node_names is None or hint in pre_result.node_names
        allowed = allowed and (in_placement is None or hint in in_placement)
        if (
            hint
            and not nominated
            and allowed
            and self._filter_with_nominated_pods(fwk, state, qpi, table, hint) is None
        ):
            batch.store(signature, hint, hint, cycle)
            return ScheduleResult(hint, 1, 1)

        nodes = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            narrowed = pre_result.node_names if in_placement is None else pre_result.node_names & in_placement
            nodes = table.subset(sorted(narrowed))
            diagnosis.absent_nodes_status = rejected_by_plugins(sorted(plugins))
        feasible, wrap, evaluated, node_to_status = self._find_nodes_that_pass_filters(fwk, state, qpi, nodes)
        self._next_start = (self._next_start + evaluated) % len(all_nodes)
        if self._extenders is not None:  # filter extenders run after the Filter plugins, in order
            feasible, ext_error = self._extenders.run_filters(pod, feasible, node_to_status, diagnosis)
            if ext_error is not None:
                raise CycleError(ext_error)
        diagnosis.node_to_status = node_to_status
        for st, _ in distinct_statuses(node_to_status):
            if st.plugin:
                diagnosis.unschedulable_plugins.add(st.plugin)
        if len(feasible) == 0:
            raise FitError(pod, len(all_nodes), diagnosis)
        explain = self._options.explain
        explain_filter = node_to_status if explain else None
        if len(feasible) == 1:
            batch.store(signature, hint, feasible.names[0], cycle)
            return ScheduleResult(feasible.names[0], evaluated, 1, filter=explain_filter)
        status = fwk.run_pre_score(state, pod, feasible)
        if status is not None:
            raise CycleError(status, explain_filter)
        outcome = fwk.run_score(state, pod, feasible, keep_raw=signature is not None)
        if outcome.error is not None:
            raise CycleError(outcome.error, explain_filter)
        if not fwk.has_score_plugins():
            outcome.totals[:] = 1
        if self._extenders is not None:  # prioritize extenders add score * weight * 10 per node
            self._extenders.run_prioritize(pod, feasible, outcome)
        by_name = self._options.tie_break == TIE_BREAK_NODE_NAME
        if by_name:
            best = lowest_name_host(outcome.totals, feasible)
        else:
            best = select_host(outcome.totals, self._rng, wrap)
        scores = None
        if explain:
            names = feasible.names
            scores = {
                names[i]: ({p: int(s[i]) for p, s in outcome.by_plugin.items()}, int(outcome.totals[i]))
                for i in range(len(feasible))
            }
        chosen = feasible.table.names[int(feasible.rows[best])]
        runners_up = _runners_up(feasible, outcome, wrap, best, by_name) if signature is not None else None
        batch.store(signature, hint, chosen, cycle, runners_up, left=len(feasible) - 1)
        return ScheduleResult(chosen, evaluated, len(feasible), scores, explain_filter)

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
            fwk.percentage_of_nodes_to_score, self._options.percentage_of_nodes_to_score, n
        )
        if not fwk.has_score_plugins() and not self._extenders:  # extenders want every feasible node
            to_find = 1
        start = self._next_start % n
        outcome = self._filter_memo.run_filter(fwk, state, qpi.pod, qpi.key, nodes)
        if outcome.error is not None:
            raise CycleError(outcome.error)
        status_idx = outcome.status_idx
        feasible_pos = np.flatnonzero(status_idx < 0)  # positions in `nodes`, ascending
        low = int(feasible_pos.searchsorted(start))  # feasible positions before the start (the
        # method: np.searchsorted's Python wrapper costs twice the search, once per cycle)
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
        readers = bool(self._extenders) or self._options.explain or self._nominator.has_nominated_pods()
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
        if self._nominator.has_nominated_pods():
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
        keep = np.ones(len(feasible), dtype=np.bool_)
        for i, name in enumerate(feasible.names):
            if self._nominator.nominated_pods_for_filter(name, qpi.pod_info):
                st = self._filter_with_nominated_pods(fwk, state, qpi, feasible.table, name)
                if st is not None:
                    keep[i] = False
                    failed[name] = st
        return feasible.select(keep)

    def _filter_with_nominated_pods(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, table: NodeTable, node_name: str
    ) -> Status | None:
        info = table.infos[table.index[node_name]]
        return filter_with_nominated_pods(self._nominator, fwk, state, qpi.pod_info, info)

    def _assume_and_reserve(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult, started: float
    ) -> None:
        """Assume the pod on the chosen node, then Reserve and Permit; the binding cycle follows."""
        pod = qpi.pod
        node = result.node
        assumed = with_node_name(pod, node)
        assumed_info = qpi.pod_info.with_pod(assumed)  # only spec.nodeName differs
        self._cache.assume_pod(assumed_info, node)
        self._nominator.delete(qpi.key)

        status = fwk.run_reserve(state, assumed, node)
        if status is not None:
            fwk.run_unreserve(state, assumed, node)
            self._cache.forget_pod(qpi.key)
            self._failures.fail(fwk, qpi, as_fit_status(status), started, filter_=result.filter)
            return
        permit = fwk.run_permit(state, assumed, node)
        if permit.status is not None and not permit.status.is_wait():
            fwk.run_unreserve(state, assumed, node)
            self._cache.forget_pod(qpi.key)
            self._failures.fail(fwk, qpi, as_fit_status(permit.status), started, filter_=result.filter)
            return
        decided_on = node_version(self._cache, node)
        self._binding.begin(Binding(fwk, state, qpi, node, assumed, result, started, decided_on), permit)


class CycleError(Exception):
    def __init__(self, status: Status, filter: dict[str, Status] | None = None) -> None:
        self.status = status
        self.filter = filter
        super().__init__(status.message())


def _runners_up(
    feasible: NodeSet, outcome: ScoreOutcome, wrap: int, chosen: int, by_name: bool = False
) -> RunnersUp:
    """The feasible nodes but the chosen one, with their totals and raw scores; equal totals rank
    in the order they were evaluated (`feasible[wrap:]` then `feasible[:wrap]`), or by node name
    under the `nodeName` tie-break."""
    n = len(feasible)
    keep = np.arange(n) != chosen
    names = feasible.names
    evaluation_rank = np.argsort(np.argsort(names, kind="stable")) if by_name else (np.arange(n) - wrap) % n
    return RunnersUp(
        [names[i] for i in np.flatnonzero(keep).tolist()],
        outcome.totals[keep].copy(),
        {p: raw[keep] for p, raw in outcome.raw.items()},
        evaluation_rank[keep],
    )


def select_host(totals: np.ndarray[Any, np.dtype[np.int64]], rng: random.Random, wrap: int = 0) -> int:
    """Uniformly random among the top-scoring nodes, from the seeded RNG.

    The draw indexes the top nodes in evaluation order: `totals[wrap:]` then `totals[:wrap]`.
    """
    top = np.flatnonzero(totals == totals.max())
    if len(top) == 1:
        return int(top[0])
    k = rng.randrange(len(top))
    if wrap:
        high = len(top) - int(top.searchsorted(wrap))  # top nodes at or after `wrap` come first
        return int(top[len(top) - high + k] if k < high else top[k - high])
    return int(top[k])


def _in_table(placement: NodeSet, table: NodeTable) -> NodeSet:
    """`placement`'s nodes in the current table (the table is rebuilt when nodes come and go)."""
    return placement if placement.table is table else table.subset(placement.names)


def lowest_name_host(totals: np.ndarray[Any, np.dtype[np.int64]], feasible: NodeSet) -> int:
    """The top-scoring node with the lowest name (TIE_BREAK_NODE_NAME): no draw, so runs repeat
    whatever the seed."""
    top = np.flatnonzero(totals == totals.max())
    if len(top) == 1:
        return int(top[0])
    return int(top[np.argmin(feasible.table.name_rank()[feasible.rows[top]])])


def with_node_name(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
