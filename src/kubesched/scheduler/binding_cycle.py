"""The binding cycle (upstream's bindingCycle): wait at Permit, PreBind, Bind, PostBind.

Just before the bind is sent, the decision is checked again against the cache as it is then
(`stale_decision`): a decision that no longer holds is abandoned, and the pod goes straight back to
activeQ. A binding that fails undoes Reserve and the assume and fails the pod as a scheduling
cycle would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, Resource
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.outcomes import PermitOutcome
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.scheduler.attempt import Abandoned, Attempt, ScheduleResult
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.failures import Failures, as_fit_status
from kubesched.scheduler.ports import BindRefused, ClusterPort
from kubesched.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.extenders import Extenders

__all__ = ["REVALIDATED_FILTERS", "Binding", "BindingCycle", "BindingJob", "NodeVersion", "node_version"]

#: Filter plugins re-run on the chosen node just before its bind is sent: the cheap checks whose
#: answer other pods' binds and node updates can change while a decision waits to be bound.
REVALIDATED_FILTERS = ("NodeResourcesFit", "NodePorts")

#: Which NodeInfo the cache had for a node and its generation then (None: no such node).
NodeVersion = tuple[NodeInfo, int] | None


def node_version(cache: Cache, node: str) -> NodeVersion:
    """Which NodeInfo the cache has for `node` and how often it changed (None: no such node);
    a node deleted and added again is another NodeInfo, so equal versions mean no change."""
    info = cache.node_info(node)
    return None if info is None else (info, info.generation)


@dataclass(slots=True)
class Binding:
    """A decision on its way to the API server: the pod assumed on `node` and Reserved there."""

    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    node: str
    #: The pod with `spec.nodeName` set, as the cache assumes it.
    assumed: Pod
    result: ScheduleResult
    #: When the scheduling cycle began (the Attempt's duration counts from it).
    started: float
    #: The node's version the decision was made on (`stale_decision` compares it).
    decided_on: NodeVersion
    #: Whether `nominatedNodeName` was set to the node while the binding runs (cleared if it fails).
    expected: bool = False


class BindingCycle:
    """Runs binding cycles and keeps the pods waiting at Permit until they may go on."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        waiting: WaitingPods,
        port: ClusterPort,
        clock: Clock,
        pending: dict[str, Pod],
        failures: Failures,
        observer: Callable[[Attempt], None],
        run_binding: Callable[[Callable[[], None]], None],
        bind_gate: Callable[[], str | None],
        on_abandoned: Callable[[Abandoned], None],
        extenders: Extenders | None,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._waiting = waiting
        self._port = port
        self._clock = clock
        #: The Scheduler's unassigned pods (shared): a bound pod leaves it here.
        self._pending = pending
        self._failures = failures
        self._observer = observer
        self._run_binding = run_binding
        self._bind_gate = bind_gate
        self._on_abandoned = on_abandoned
        self._extenders = extenders
        self._parked: dict[str, Binding] = {}  # pods waiting at Permit
        self._binds_by_port: dict[str, bool] = {}  # profile -> DefaultBinder is its one Bind plugin

    def begin(self, b: Binding, permit: PermitOutcome) -> None:
        """After Permit: park the pod if a plugin said wait, else hand the cycle to `run_binding`."""
        if not permit.waits:
            self._run_binding(BindingJob(self, b))
            return
        self._expect_binding(b)  # before waiting, as upstream's binding cycle does
        now = self._clock.now()
        deadlines = {p: now + t for p, t in permit.waits.items()}
        key = b.qpi.key
        self._waiting.add(key, WaitingPod(b.assumed, b.node, deadlines, now))
        self._parked[key] = b
        result = b.result
        self._observer(
            Attempt(
                b.qpi.pod,
                b.fwk.profile_name,
                "Waiting",
                node=b.node,
                message=permit.status.message() if permit.status else None,
                filter=result.filter,
                scores=result.scores,
                attempts=b.qpi.attempts,
                evaluated=result.evaluated,
                feasible=result.feasible,
            )
        )

    def release_waiting_pods(self) -> int:
        """Expire Permit timers and start the binding cycles of pods no longer waiting."""
        now = self._clock.now()
        released = 0
        for key, binding in list(self._parked.items()):
            wp = self._waiting.get(key)
            if wp is None:
                continue
            wp.expire(now)
            if wp.result is not None:
                del self._parked[key]
                released += 1
                self._run_binding(lambda b=binding: self.run(b))  # type: ignore[misc]
        return released

    def run(self, b: Binding) -> None:
        """One binding cycle, from the Permit wait (if any) to PostBind and the Attempt."""
        going, status = self._before_bind(b)
        if going:
            self.finish(b, status if status is not None else self.bind(b))

    def splittable(self, b: Binding) -> bool:
        """Whether the cycle's bind may be sent apart from the rest of it (`BindingJob`): it waits at
        no Permit, no PreBind plugin has work (those write with the state lock let go), no extender
        binds, and DefaultBinder, which only asks the port, is the one Bind plugin."""
        fwk = b.fwk
        binds_by_port = self._binds_by_port.get(fwk.profile_name)
        if binds_by_port is None:
            binds_by_port = self._binds_by_port[fwk.profile_name] = fwk.plugins_at("bind") == [
                "DefaultBinder"
            ]
        return (
            binds_by_port
            and self._extenders is None
            and self._waiting.get(b.qpi.key) is None
            and not fwk.pre_bind_has_work(b.state, b.assumed, b.node)
        )

    def prepare(self, b: Binding) -> bool:
        """The part of a `splittable` cycle before its bind. False: the cycle ended here (abandoned,
        or failed in PreBind); True: `bind`, then `finish` with what it returned."""
        going, status = self._before_bind(b)
        if going and status is not None:
            self.finish(b, status)
            return False
        return going

    def _before_bind(self, b: Binding) -> tuple[bool, Status | None]:
        """The Permit wait, PreBind and the last look at the decision. (False, None): the cycle
        ended (failed at Permit, or abandoned); else (True, PreBind's failure or None to bind)."""
        key = b.qpi.key
        fwk, state, pod, node = b.fwk, b.state, b.assumed, b.node
        wp = self._waiting.get(key)
        if wp is not None:
            status = wp.result if wp.result is not None else wp.wait()
            self._waiting.remove(key)
            if status is not None and not status.is_success():
                self._binding_failed(b, as_fit_status(status), b.started)
                return False, None
        self._queue.done(key)
        if (refused := self._bind_gate()) is not None:
            self._abandon(b, "Refused", refused)
            return False, None
        if wp is None and fwk.pre_bind_has_work(state, pod, node):
            self._expect_binding(b)
        status = fwk.run_pre_bind(state, pod, node)
        if status is None and (stale := self.stale_decision(b)) is not None:
            self._abandon(b, *stale)
            return False, None
        return True, status

    def bind(self, b: Binding) -> Status | None:
        """The bind: a bindVerb extender first (Skip: none took the pod), then the Bind plugins."""
        fwk, state, pod, node = b.fwk, b.state, b.assumed, b.node
        if self._extenders is not None:
            status = self._extenders.bind(pod, node)
            return fwk.run_bind(state, pod, node) if status is not None and status.is_skip() else status
        return fwk.run_bind(state, pod, node)

    def finish(self, b: Binding, status: Status | None) -> None:
        """After the bind (`status`: how it went): PostBind and the Attempt, or the undo."""
        key = b.qpi.key
        fwk, state, pod, node = b.fwk, b.state, b.assumed, b.node
        started = b.started
        result = b.result
        if status is not None:
            if (refused := _refusal(status)) is not None:
                self._abandon(b, "Refused", str(refused))
                return
            self._binding_failed(b, status, started)
            return
        self._cache.finish_binding(key)
        self._pending.pop(key, None)
        self._port.record_event(
            pod,
            type="Normal",
            reason="Scheduled",
            action="Binding",
            note=f"Successfully assigned {pod.metadata.namespace}/{pod.metadata.name} to {node}",
            reporter=fwk.profile_name,
        )
        fwk.run_post_bind(state, pod, node)
        self._observer(
            Attempt(
                b.qpi.pod,
                fwk.profile_name,
                "Scheduled",
                node=node,
                filter=result.filter,
                scores=result.scores,
                duration=self._clock.now() - started,
                attempts=b.qpi.attempts,
                evaluated=result.evaluated,
                feasible=result.feasible,
            )
        )

    def _expect_binding(self, b: Binding) -> None:
        """v1.37's NominatedNodeNameForExpectation: a pod whose binding will take a while (a Permit
        waits, or PreBind has volumes or claims to bind) shows the node in `nominatedNodeName` until
        it is bound, so autoscalers count the room as taken; a quick bind gets no extra write."""
        b.expected = True
        self._port.expect_binding(b.qpi.pod, b.node)
        # The pod as the API server holds it now: clearing the nomination later must not be
        # skipped as "no change" because the informer has not shown this write yet.
        if (pending := self._pending.get(b.qpi.key)) is not None:
            self._pending[b.qpi.key] = _with_nomination(pending, b.node)

    def stale_decision(self, b: Binding) -> tuple[str, str] | None:
        """(reason, message) when the decision must not be bound any more; None when it still holds.

        Asked under the state lock just before the bind is sent: the gate first (leadership,
        shutdown), then the decision against the cache as it is now: the pod is still ours and
        assumed there, the node still exists, and the profile's cheap filters (REVALIDATED_FILTERS)
        still pass on the node with every other bound and assumed pod counted.
        """
        if (refused := self._bind_gate()) is not None:
            return "Refused", refused
        key = b.qpi.key
        cache = self._cache
        if key not in self._pending or not cache.is_assumed(key) or cache.pod_node(key) != b.node:
            return "PodGone", f"pod {b.assumed.key} was deleted or bound elsewhere meanwhile"
        info = cache.node_info(b.node)
        if info is None:
            return "NodeGone", f"node {b.node} no longer exists"
        if b.decided_on == node_version(cache, b.node):
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

    def _abandon(self, b: Binding, reason: str, message: str) -> None:
        """Drop a decision before its bind is sent: undo Reserve and the assume, and put the pod
        straight back into activeQ (no backoff, no FailedScheduling: nothing failed but the timing)."""
        key = b.qpi.key
        b.fwk.run_unreserve(b.state, b.assumed, b.node)
        if self._cache.is_assumed(key):
            self._cache.forget_pod(key)
            freed = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
            self._queue.move_all_to_active_or_backoff(freed, b.assumed, None, exclude=key)
        if key in self._pending:
            if b.expected:
                self._port.set_nominated_node_name(self._pending[key], "")
            self._queue.retry_now(b.qpi)
        self._queue.done(key)
        self._on_abandoned(Abandoned(b.qpi.pod, b.fwk.profile_name, b.node, reason, message))

    def _binding_failed(self, b: Binding, status: Status, started: float) -> None:
        key = b.qpi.key
        b.fwk.run_unreserve(b.state, b.assumed, b.node)
        if self._cache.is_assumed(key):
            self._cache.forget_pod(key)
        freed = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
        # A binding that set nominatedNodeName clears it when it fails (upstream does too).
        nominated = "" if b.expected else None
        if status.is_rejected():
            # Requeue the pod first, then tell the others about the freed room without moving the
            # pod itself: it stays unschedulable instead of cycling through backoff.
            self._failures.fail(b.fwk, b.qpi, status, started, filter_=None, nominated=nominated)
            self._queue.move_all_to_active_or_backoff(freed, b.assumed, None, exclude=key)
            return
        self._queue.move_all_to_active_or_backoff(freed, b.assumed, None)
        self._failures.fail(b.fwk, b.qpi, status, started, filter_=None, nominated=nominated)


def _refusal(status: Status) -> BindRefused | None:
    """The `BindRefused` behind a failed bind, if any: the port raises it and DefaultBinder and the
    Bind plugins' runner wrap it, so it is the status's error or one of its causes."""
    error: BaseException | None = status.error
    while error is not None:
        if isinstance(error, BindRefused):
            return error
        error = error.__cause__
    return None


def _with_nomination(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name=node))


class BindingJob:
    """A binding cycle as `run_binding` receives it: calling it runs the whole cycle.

    A host that sends binds from worker threads while one thread owns the scheduler state (live
    mode) may split a `splittable` cycle instead: `prepare` where the scheduling cycle ran, `bind`
    on a worker without the state lock, and `finish` back under it. The worker then never waits for
    the state lock, which costs thread switches on every pod; the steps are the same either way.
    """

    __slots__ = ("binding", "cycle")

    def __init__(self, cycle: BindingCycle, binding: Binding) -> None:
        self.cycle = cycle
        self.binding = binding

    def __call__(self) -> None:
        self.cycle.run(self.binding)

    def splittable(self) -> bool:
        return self.cycle.splittable(self.binding)

    def prepare(self) -> bool:
        return self.cycle.prepare(self.binding)

    def bind(self) -> Status | None:
        return self.cycle.bind(self.binding)

    def finish(self, status: Status | None) -> None:
        self.cycle.finish(self.binding, status)
