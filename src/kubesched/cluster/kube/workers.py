"""Fire-and-forget API calls on a few worker threads, off the scheduling loop.

Events and status patches must never hold up scheduling (upstream sends events through an
asynchronous broadcaster for the same reason). Calls queue up to a bound; past it new calls are
dropped and counted, as client-go's event broadcaster drops events when its queue is full, because a
scheduler that blocks on telemetry under load only makes the overload worse.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["AsyncCalls"]

log = logging.getLogger(__name__)

_STOP = object()


class AsyncCalls:
    """A bounded queue of calls served by `workers` daemon threads."""

    def __init__(self, name: str, workers: int = 2, *, maxsize: int = 10_000) -> None:
        self.name = name
        self._queue: queue.Queue[object] = queue.Queue(maxsize)
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        self._started = False
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        #: Calls dropped because the queue was full, and calls that raised.
        self.dropped = 0
        self.failed = 0

    def start(self) -> None:
        if not self._started:
            self._started = True
            for t in self._threads:
                t.start()

    def submit(self, call: Callable[[], None]) -> bool:
        """Queue `call`; False (and counted) if the queue is full."""
        with self._lock:
            self._pending += 1
        try:
            self._queue.put_nowait(call)
        except queue.Full:
            with self._lock:
                self._pending -= 1
                self.dropped += 1
            log.warning("%s: queue full, dropping a call", self.name)
            return False
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
        """Run what is queued (up to `timeout`), then end the workers."""
        self.drain(timeout)
        for _ in self._threads:
            try:
                self._queue.put_nowait(_STOP)
            except queue.Full:
                break

    @property
    def pending(self) -> int:
        return self._pending

    def _serve(self) -> None:
        while True:
            call = self._queue.get()
            if call is _STOP:
                return
            try:
                call()  # type: ignore[operator]
            except Exception:
                self.failed += 1
                log.exception("%s: call failed", self.name)
            finally:
                with self._idle:
                    self._pending -= 1
                    if not self._pending:
                        self._idle.notify_all()
