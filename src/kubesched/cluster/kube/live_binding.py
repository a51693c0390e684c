"""How the live scheduler runs the core's binding cycles: on the bind pipeline, split when it can.

The core hands each binding cycle over under the state lock (its `run_binding` hook). A cycle whose
only work is DefaultBinder's POST (`BindingJob.splittable`: no PreBind work, no Permit wait, no
extender) is split when its rate-limiter token is there now: its checks run at once on the loop,
under the lock it holds; a pipeline worker sends the bind without the lock and hands the rest back
to the loop through the informer handoff, so the worker never waits for the lock. Waiting for the
lock twice per pod, each time a thread switch for the worker and one for the loop, cost more CPU
than the bind's request. Other cycles run whole on their worker, taking the lock around them.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.cluster.kube.pipeline import BindPipeline
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.cluster.kube.workers import AsyncCalls
from kubesched.scheduler.binding_cycle import BindingJob

__all__ = ["BindingRunner"]


class BindingRunner:
    """The core's `run_binding` hook over a `BindPipeline` (see module docstring)."""

    def __init__(
        self,
        lock: StateLock,
        pipeline: BindPipeline,
        events: AsyncCalls,
        dispatch: Callable[[Callable[[], None]], None],
    ) -> None:
        self._lock = lock
        self._pipeline = pipeline
        self._events = events
        self._dispatch = dispatch  # runs a callable on the scheduling loop, under the lock

    def run(self, fn: Callable[[], None]) -> None:
        """Hand one binding cycle to the pipeline (called under the lock)."""
        if isinstance(fn, BindingJob) and fn.splittable() and self._pipeline.take_token_now():
            if fn.prepare():
                self._pipeline.submit(lambda: self._send_bind(fn), token_taken=True)
            return
        events = self._events
        lock = self._lock

        def cycle() -> Callable[[], None] | None:
            # The cycle's `Scheduled` Event is sent by this worker once the cycle is over, on the
            # connection it just used, instead of waking an Event worker for it.
            events.carry()
            try:
                with lock:
                    fn()
            finally:
                carried = events.carried()
            return (lambda: events.make(carried)) if carried else None

        self._pipeline.submit(cycle)

    def _send_bind(self, job: BindingJob) -> None:
        """A split cycle's bind, on a pipeline worker without the lock; the rest goes to the loop."""
        status = job.bind()
        self._dispatch(lambda: job.finish(status))
