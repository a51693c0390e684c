"""StateLock: the one lock that guards all scheduler state in live mode (see live.py's docstring).

FIFO, so a waiting binder is not starved by the loop re-taking the lock at once (which a plain
`threading.Lock` allows), and it knows its owner, so a holder can step out for blocking I/O.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterator

__all__ = ["StateLock"]


class StateLock:
    """A FIFO lock that knows which thread holds it.

    Release hands the lock directly to the longest waiter, so a thread that re-acquires in a loop
    cannot starve the others. `released()` lets the owner step out for blocking I/O.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._owner: int | None = None
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._mutex:
            if not self._held:
                self._held = True
                self._owner = me
                return
            gate = threading.Lock()
            gate.acquire()
            self._waiters.append(gate)
        gate.acquire()  # released by the previous owner: the lock is ours, still marked held
        self._owner = me

    def release(self) -> None:
        with self._mutex:
            if self._owner != threading.get_ident():
                raise RuntimeError("StateLock released by a thread that does not hold it")
            self._owner = None
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._held = False

    def owned(self) -> bool:
        return self._owner == threading.get_ident()

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Step out of the lock if this thread holds it (for blocking I/O), and take it back after."""
        if not self.owned():
            yield
            return
        self.release()
        try:
            yield
        finally:
            self.acquire()
