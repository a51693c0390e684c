"""Failure handling (upstream's handleSchedulingFailure): what a failed attempt leaves behind.

The pod goes back to the queue with the plugins that rejected it, keeps, takes or drops a
nomination, and gets a FailedScheduling event and PodScheduled condition; the observer gets
the Attempt.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import Diagnosis, FitError, QueuedPodInfo, fit_error_message, truncate_note
from kubesched.scheduler.attempt import TOP_REASONS, Attempt
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.ports import ClusterPort
from kubesched.scheduler.queue import SchedulingQueue

__all__ = ["Failures", "as_fit_status"]


class Failures:
    """Ends failed attempts, from either cycle, the one way upstream does."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        nominator: Nominator,
        port: ClusterPort,
        clock: Clock,
        pending: dict[str, Pod],
        observer: Callable[[Attempt], None],
        explain: bool,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._nominator = nominator
        self._port = port
        self._clock = clock
        #: The Scheduler's unassigned pods (shared): only a pod still pending gets event and condition.
        self._pending = pending
        self._observer = observer
        self._explain = explain

    def after_fit_error(
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
        self.fail_fit(fwk, qpi, fit, started, nominated=nominated, victims=victims)
        return nominated, victims

    def fail_fit(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        fit: FitError,
        started: float,
        *,
        nominated: str | None,
        victims: list[str],
        reasons: list[tuple[str, int]] | None = None,
        requeue: Callable[[QueuedPodInfo], object] | None = None,
    ) -> None:
        """The failure of an attempt in which no node fit (its own or a repeated one, which passes
        the `reasons` the first one counted)."""
        qpi.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(fit.diagnosis.pending_plugins)
        explain = fit.diagnosis.node_to_status if self._explain else None
        if explain is not None and fit.diagnosis.absent_nodes_status is not None:
            explain = dict(explain)
            table = self._cache.snapshot()
            for name in table.names:
                explain.setdefault(name, fit.diagnosis.absent_nodes_status)
        status = Status(Code.UNSCHEDULABLE, error=fit)
        self.fail(
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
            requeue=requeue,
        )

    def fail(
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
        requeue: Callable[[QueuedPodInfo], object] | None = None,
    ) -> None:
        """Upstream's handleSchedulingFailure: requeue, nominate, FailedScheduling event, condition.

        `nominated`: None keeps the pod's nomination, "" clears it, a node name nominates the pod.
        `requeue` replaces the queue's own requeue (a pod-group member goes back as its group does).
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
        if pod is not None and not self._cache.has_pod(key):
            if requeue is None:
                self._queue.add_unschedulable_if_not_present(qpi, self._queue.scheduling_cycle)
            else:
                requeue(qpi)
            if nominated is not None:
                self._nominator.add(qpi.pod_info, nominated)
            self._port.record_event(
                pod,
                type="Warning",
                reason="FailedScheduling",
                action="Scheduling",
                note=truncate_note(message),
                reporter=fwk.profile_name,
            )
            self._port.set_pod_scheduled_condition(
                pod, reason=reason, message=message, nominated_node_name=nominated
            )
        self._queue.done(key)
        self._observer(
            Attempt(
                qpi.pod,
                fwk.profile_name,
                "Unschedulable" if rejected else "Error",
                message=message,
                nominated_node=nominated or self._nominator.nominated_node(key),
                filter=filter_,
                pre_filter=pre_filter,
                post_filter=post_filter,
                duration=self._clock.now() - started,
                attempts=qpi.attempts,
                reasons=list(reasons or ()),
                error=None if rejected else status.error,
                victims=list(victims or ()),
            )
        )


def as_fit_status(status: Status) -> Status:
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
        return fit_error_message(1, self.diagnosis)
