"""Clocks: the scheduler never reads the time itself, so the simulator can run in virtual time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on this clock (monotonic)."""
        ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()


class VirtualClock:
    """Time that moves only when told to: backoff and Permit waits cost nothing in a simulation."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t > self._now:
            self._now = t

    def advance(self, seconds: float) -> None:
        self._now += max(0.0, seconds)
