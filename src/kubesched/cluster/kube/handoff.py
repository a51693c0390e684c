"""Informer changes handed to the scheduling loop instead of each informer taking the state lock.

The loop holds the state lock for slices of steps anyway (see `live`); an informer thread that takes
the lock for every batch of changes makes the lock change hands twice per batch, each time a thread
switch. So, while the loop runs, a batch is queued here and the loop applies what is queued at the
top of each step, under the lock it holds, oldest first: every informer's changes stay in the order
they came. Before the loop starts (the first lists, applied as they are read) and after it ends,
nothing is queued and each batch is applied at once under the lock by the thread that brings it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from kubesched.cluster.kube.state_lock import StateLock

__all__ = ["LoopHandoff"]

log = logging.getLogger(__name__)


class LoopHandoff:
    """Batches of changes for the scheduling loop (`deliver`), applied by it (`apply`)."""

    def __init__(self, lock: StateLock) -> None:
        self._lock = lock
        self._queued: deque[Callable[[], None]] = deque()
        self._open = False
        self._mutex = threading.Lock()  # `deliver` checks and queues in one step; `close` waits for it

    def __bool__(self) -> bool:
        """Whether changes wait for the loop."""
        return bool(self._queued)

    def deliver(self, batch: Callable[[], None]) -> None:
        """Queue `batch` for the loop, or apply it now under the lock when no loop takes it."""
        with self._mutex:
            if self._open:
                self._queued.append(batch)
                return
        with self._lock:
            batch()

    def open(self) -> None:
        """The loop runs: queue from now on."""
        with self._mutex:
            self._open = True

    def close(self) -> None:
        """The loop ends: apply what is queued, then apply each batch as it comes. The lock is held
        throughout, so a batch that comes meanwhile waits for those queued before it."""
        with self._lock:
            with self._mutex:
                self._open = False
            self.apply()

    def apply(self) -> None:
        """Apply the queued batches, oldest first (under the lock)."""
        queued = self._queued
        while queued:
            try:
                queued.popleft()()
            except Exception:  # an informer's batch logs its handlers' failures; a last resort
                log.exception("applying an informer's changes failed")
