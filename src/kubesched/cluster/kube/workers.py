"""Fire-and-forget API calls on a few worker threads, off the scheduling loop.

Events and status patches must never hold up scheduling (upstream sends events through an
asynchronous broadcaster for the same reason). Calls queue up to a bound; past it new calls are
dropped and counted, as client-go's event broadcaster drops events when its queue is full, because a
scheduler that blocks on telemetry under load only makes the overload worse.

Workers are started as calls need them, up to `workers`: a new call that finds no worker idle
starts one more. A burst of Events (one per bind) is therefore sent with as many requests in flight
as it takes to keep up, as upstream's events broadcaster sends each Event on a goroutine of its own,
while a quiet scheduler keeps one or two threads. What bounds the work is the queue, not the
threads: a slow API server fills it and further calls are dropped, never the scheduling loop held.

A call that failed for a reason that passes (the API server restarting) can come back later
(`submit_later`): it waits off the workers, in a second bounded store, so an outage costs neither a
worker thread nor unbounded memory. `stop` gives every waiting call one last try within its budget,
then drops whatever is left (counted and logged once), so a shutdown never waits for telemetry.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence

from kubesched.cluster.kube.client import ApiError

__all__ = ["RETRY_DELAYS", "AsyncCalls", "passing", "retry_failed", "submit_retrying"]

log = logging.getLogger(__name__)

_STOP = object()

Call = Callable[[], None]


class AsyncCalls:
    """A bounded queue of calls served by up to `workers` daemon threads (started as needed), and a
    bounded store of calls waiting to be retried."""

    def __init__(
        self, name: str, workers: int = 2, *, maxsize: int = 10_000, max_waiting: int = 5_000
    ) -> None:
        self.name = name
        self._queue: queue.Queue[object] = queue.Queue(maxsize)
        self._max_workers = max(1, workers)
        self._threads: list[threading.Thread] = []
        self._idle_workers = 0  # workers waiting for a call (under `_lock`)
        self._unclaimed = 0  # calls put on the queue that no worker has taken yet (under `_lock`)
        self._started = False
        self._closing = False  # `stop` began: the waiting calls get their last try, no new retries
        self._stopped = False
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._max_waiting = max_waiting
        self._waiting: list[tuple[float, int, Call]] = []  # a heap by due time
        self._order = itertools.count()
        self._timer = threading.Condition(self._lock)
        self._timer_thread = threading.Thread(target=self._release_due, name=f"{name}-retry", daemon=True)
        self._local = threading.local()  # `sink`: where this thread's calls go while it carries them
        #: Calls dropped (queue or retry store full, or still queued at `stop`), and calls that raised.
        self.dropped = 0
        self.failed = 0

    def start(self) -> None:
        if not self._started:
            with self._lock:
                self._started = True
                # Calls queued before the start get as many workers as they would have started.
                for _ in range(min(self._max_workers, max(1, self._unclaimed))):
                    self._add_worker()
            self._timer_thread.start()

    @property
    def workers(self) -> int:
        """Worker threads started so far."""
        return len(self._threads)

    def _add_worker(self) -> None:
        """Start one more worker (under `_lock`); it counts as idle until it takes a call."""
        t = threading.Thread(target=self._serve, name=f"{self.name}-{len(self._threads)}", daemon=True)
        self._threads.append(t)
        self._idle_workers += 1
        t.start()

    def submit(self, call: Call) -> bool:
        """Queue `call`; False (and counted) if the queue is full or the calls were stopped."""
        sink: list[Call] | None = getattr(self._local, "sink", None)
        with self._lock:
            if self._stopped:
                self.dropped += 1
                return False
            self._pending += 1
            if sink is not None:
                sink.append(call)
                return True
            self._unclaimed += 1
            # More calls waiting on the queue than idle workers to take them: one more worker.
            short = self._unclaimed > self._idle_workers
            if short and self._started and len(self._threads) < self._max_workers:
                self._add_worker()
        try:
            self._queue.put_nowait(call)
        except queue.Full:
            with self._lock:
                self._pending -= 1
                self._unclaimed -= 1
                self.dropped += 1
                if not self._pending:
                    self._idle.notify_all()
            log.warning("%s: queue full, dropping a call", self.name)
            return False
        return True

    def submit_later(self, call: Call, delay: float) -> bool:
        """Queue `call` to run in `delay` seconds (a retry); False (and counted) if `max_waiting`
        calls wait already or `stop` began (it gives the waiting calls their last try). A waiting
        call counts as pending."""
        with self._lock:
            if self._closing or len(self._waiting) >= self._max_waiting:
                self.dropped += 1
                return False
            self._pending += 1
            heapq.heappush(self._waiting, (time.monotonic() + delay, next(self._order), call))
            self._timer.notify()
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until every queued call ran (or `timeout` passed); True if all did."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._started:
                    return False
                self._idle.wait(remaining)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Run what is queued, and the waiting retries at once (up to `timeout`); drop the rest and
        end the workers. Calls still running are not waited for."""
        with self._lock:
            self._closing = True
            now = time.monotonic()
            self._waiting = sorted((now, order, call) for _, order, call in self._waiting)
            self._timer.notify()
        self.drain(timeout)
        with self._lock:
            self._stopped = True
            left = self._pending
            workers = len(self._threads)
            self._timer.notify()
        if left:
            log.warning("%s: %d calls not made at shutdown", self.name, left)
        for _ in range(workers):
            try:
                self._queue.put_nowait(_STOP)
            except queue.Full:
                break

    def carry(self) -> None:
        """From now on, calls submitted on this thread are kept for it (`carried`) instead of queued
        for the workers: a thread about to be free anyway makes them itself, which spares a worker's
        wake-up per call. They count as pending, so `drain` and `stop` wait for them as for any."""
        self._local.sink = []

    def carried(self) -> list[Call]:
        """Stop carrying; the calls submitted on this thread since `carry`, for `make`."""
        calls: list[Call] = self._local.sink
        self._local.sink = None
        return calls

    def make(self, calls: list[Call]) -> None:
        """Make carried calls on this thread, as a worker would."""
        for call in calls:
            self._make(call)

    @property
    def pending(self) -> int:
        """Calls queued, running, or waiting to be retried."""
        return self._pending

    @property
    def waiting(self) -> int:
        """Calls waiting to be retried."""
        return len(self._waiting)

    def _serve(self) -> None:
        while True:
            call = self._queue.get()
            if call is _STOP:
                return
            with self._lock:
                self._idle_workers -= 1
                self._unclaimed -= 1
            try:
                self._make(call)  # type: ignore[arg-type]
            finally:
                with self._lock:
                    self._idle_workers += 1

    def _make(self, call: Call) -> None:
        """Make one pending call (or drop it, past shutdown's budget) and count it done."""
        try:
            if self._stopped:
                self.dropped += 1  # queued when the shutdown's budget ran out
            else:
                call()
        except Exception:
            self.failed += 1
            if self._stopped:  # a call cut short by the shutdown (its client closed)
                log.debug("%s: call failed during shutdown", self.name, exc_info=True)
            else:
                log.exception("%s: call failed", self.name)
        finally:
            with self._idle:
                self._pending -= 1
                if not self._pending:
                    self._idle.notify_all()

    def _release_due(self) -> None:
        """Move waiting calls to the queue when they are due (a timer thread, so no worker sleeps)."""
        with self._lock:
            while True:
                if self._stopped:
                    self.dropped += len(self._waiting)
                    self._pending -= len(self._waiting)
                    self._waiting.clear()
                    if not self._pending:
                        self._idle.notify_all()
                    return
                if not self._waiting:
                    self._timer.wait()
                    continue
                due = self._waiting[0][0] - time.monotonic()
                if due > 0:
                    self._timer.wait(due)
                    continue
                _, _, call = heapq.heappop(self._waiting)
                try:
                    self._queue.put_nowait(call)
                    self._unclaimed += 1
                except queue.Full:
                    self._pending -= 1
                    self.dropped += 1
                    log.warning("%s: queue full, dropping a retry", self.name)
                    if not self._pending:
                        self._idle.notify_all()


#: Pauses before the retries of a call that failed for a reason that passes (seconds): about 45 s in
#: all, longer than an API-server restart takes, shorter than anyone would still want the Event.
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0)


def passing(exc: ApiError) -> bool:
    """A failure worth trying again: no answer at all, throttled, or the server's own fault."""
    return exc.is_transport or exc.code == 429 or exc.code >= 500


def submit_retrying(
    calls: AsyncCalls,
    send: Call,
    on_failure: Callable[[ApiError], None],
    delays: Sequence[float] = RETRY_DELAYS,
) -> bool:
    """Queue `send`; when it raises an ApiError that `passing` excuses, queue it again after the
    next pause (off the workers, `submit_later`). A final failure goes to `on_failure`. `send` must
    be safe to repeat (a create under a fixed name, an absolute patch)."""
    return calls.submit(lambda: _attempt(calls, send, on_failure, delays, 0))


def retry_failed(
    calls: AsyncCalls,
    send: Call,
    on_failure: Callable[[ApiError], None],
    error: ApiError,
    delays: Sequence[float] = RETRY_DELAYS,
) -> None:
    """`send`'s first try (made elsewhere, e.g. in a pipelined batch) failed with `error`: go on as
    `submit_retrying` would have from there."""
    _after_failure(calls, send, on_failure, delays, 0, error)


def _attempt(
    calls: AsyncCalls, send: Call, on_failure: Callable[[ApiError], None], delays: Sequence[float], n: int
) -> None:
    try:
        send()
    except ApiError as exc:
        _after_failure(calls, send, on_failure, delays, n, exc)


def _after_failure(
    calls: AsyncCalls,
    send: Call,
    on_failure: Callable[[ApiError], None],
    delays: Sequence[float],
    n: int,
    exc: ApiError,
) -> None:
    again = passing(exc) and n < len(delays)
    if not (
        again and calls.submit_later(lambda: _attempt(calls, send, on_failure, delays, n + 1), delays[n])
    ):
        on_failure(exc)
