"""Pods held at Permit: each pending plugin must Allow; any Reject or a timer ends the wait."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from kubesched.api.objects import Pod
from kubesched.framework.status import Code, Status


class WaitingPod:
    """A pod that passed Reserve and was asked to wait by one or more Permit plugins.

    Deadlines are absolute times on the scheduler's clock; the scheduler calls `expire(now)` so the
    same object works under the simulator's virtual clock and the live scheduler's wall clock.
    """

    def __init__(self, pod: Pod, node_name: str, deadlines: dict[str, float], started_at: float) -> None:
        self.pod = pod
        self.node_name = node_name
        self.started_at = started_at
        self._deadlines = dict(deadlines)
        self._result: Status | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    @property
    def pending_plugins(self) -> list[str]:
        return sorted(self._deadlines)

    @property
    def result(self) -> Status | None:
        """None while waiting; then Success (all allowed) or Unschedulable (rejected/timed out)."""
        return self._result

    def next_deadline(self) -> float | None:
        return min(self._deadlines.values()) if self._deadlines and self._result is None else None

    def allow(self, plugin: str) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._deadlines.pop(plugin, None)
            if not self._deadlines:
                self._finish(Status())

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._result is None:
                self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def expire(self, now: float) -> None:
        """Reject if a plugin's timer has fired by `now`."""
        with self._lock:
            if self._result is not None:
                return
            for plugin, deadline in sorted(self._deadlines.items(), key=lambda kv: kv[1]):
                if deadline <= now:
                    waited = _format_duration(deadline - self.started_at)
                    msg = f"rejected due to timeout after waiting {waited} at plugin {plugin}"
                    self._finish(Status(Code.UNSCHEDULABLE, msg, plugin=plugin))
                    return

    def wait(self, timeout: float | None = None) -> Status | None:
        """Block (live mode) until decided or `timeout` seconds passed."""
        self._done.wait(timeout)
        return self._result

    def _finish(self, status: Status) -> None:
        self._result = status
        self._done.set()


def _format_duration(seconds: float) -> str:
    """Go's time.Duration formatting for the common cases: `10s`, `1m0s`, `1.5s`, `500ms`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, secs = divmod(seconds, 60)
    secs_text = f"{secs:g}s"
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{int(hours)}h{int(minutes)}m{secs_text}"
    if minutes:
        return f"{int(minutes)}m{secs_text}"
    return secs_text


class WaitingPods:
    """The waiting pods of all profiles, by pod key."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, key: str, wp: WaitingPod) -> None:
        self._pods[key] = wp

    def remove(self, key: str) -> WaitingPod | None:
        return self._pods.pop(key, None)

    def get(self, key: str) -> WaitingPod | None:
        return self._pods.get(key)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def next_deadline(self) -> float | None:
        deadlines = [d for wp in self._pods.values() if (d := wp.next_deadline()) is not None]
        return min(deadlines) if deadlines else None
