"""How the live scheduler runs the core's binding cycles: on the bind pipeline, split when it can.

The core hands each binding cycle over under the state lock (its `run_binding` hook). A cycle whose
only work is DefaultBinder's POST (`BindingJob.splittable`: no PreBind work, no Permit wait, no
extender) is split when its rate-limiter token is there now: its checks run at once on the loop,
under the lock it holds; one of the pipeline's batch threads sends its bind, pipelined on one
connection with those of the other split cycles queued meanwhile, and hands the rest of each back
to the loop in one go through the informer handoff, so no thread waits for the lock. Waiting for
the lock twice per pod, each time a thread switch for the worker and one for the loop, cost more
CPU than the bind's request; so did a request, a reply and a thread wake-up per bind. Other cycles
run whole on their worker, taking the lock around them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from kubesched.cluster.kube.binder import Binder
from kubesched.cluster.kube.pipeline import BindPipeline
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.cluster.kube.workers import AsyncCalls
from kubesched.framework.status import Status
from kubesched.scheduler.binding_cycle import BindingJob

__all__ = ["BindingRunner"]

log = logging.getLogger(__name__)


class AnsweringPort(Protocol):
    """The port's side of a batch: its `bind` gives an answer already in (`LivePort.answered`)."""

    def answered(self, error: Exception | None) -> contextlib.AbstractContextManager[None]: ...


class BindingRunner:
    """The core's `run_binding` hook over a `BindPipeline` (see module docstring)."""

    def __init__(
        self,
        lock: StateLock,
        pipeline: BindPipeline,
        events: AsyncCalls,
        dispatch: Callable[[Callable[[], None]], None],
        binder: Binder,
        port: AnsweringPort,
    ) -> None:
        self._lock = lock
        self._pipeline = pipeline
        self._events = events
        self._dispatch = dispatch  # runs a callable on the scheduling loop, under the lock
        self._binder = binder
        self._port = port

    def run(self, fn: Callable[[], None]) -> None:
        """Hand one binding cycle to the pipeline (called under the lock)."""
        if isinstance(fn, BindingJob) and fn.splittable() and self._pipeline.take_token_now():
            if fn.prepare():
                self._pipeline.submit_batched(fn)
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

    def send_binds(self, jobs: list[BindingJob]) -> None:
        """Split cycles' binds, on a batch thread without the lock: through the gate together and
        pipelined on one connection (`Binder.bind_many`). Each cycle's Bind plugins then run as
        ever, the port giving DefaultBinder its answer, and the cycles' ends go to the loop in order."""
        binds = [(job.binding.assumed, job.binding.node) for job in jobs]
        answers: list[Exception | None]
        try:
            with self._pipeline.sending(len(jobs)):
                answers = list(self._binder.bind_many(binds))
        except Exception as exc:  # BindRefused: the gate is shut; anything else fails them alike
            answers = [exc] * len(jobs)
        done: list[tuple[BindingJob, Status | None]] = []
        try:
            for job, error in zip(jobs, answers, strict=True):
                with self._port.answered(error):
                    done.append((job, job.bind()))
        finally:
            self._dispatch(lambda: _finish(done))


def _finish(done: list[tuple[BindingJob, Status | None]]) -> None:
    """The ends of a batch's cycles, in order, on the loop; one that fails does not stop the rest."""
    for job, status in done:
        try:
            job.finish(status)
        except Exception:
            log.exception("finishing the binding cycle of %s failed", job.binding.assumed.key)
