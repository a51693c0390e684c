"""events.k8s.io/v1 Events about pods: `Scheduled`, `FailedScheduling`, `Preempted`.

As upstream's events recorder: `reportingController` is the profile's scheduler name, the
`reportingInstance` is `<controller>-<hostname>`, the Event is named `<pod>.<unix nanos in hex>`
and lives in the pod's namespace, and the note is cut to 1024 bytes (`msg[:1020] + " ..."`).

A repeat of the same event for the same pod within 6 minutes (a pod failing again and again for the
same reason) does not create a new Event: the first one's `series` is patched with the new count and
time, as the events/v1 broadcaster aggregates isomorphic events. Sending happens on worker threads
(`AsyncCalls`); `record` never blocks. A send that fails for a passing reason (the API server
restarting) is tried again for about 45 s, as upstream's broadcaster retries: a pod bound during an
outage still gets its `Scheduled` Event. A retried create keeps the Event's name, so it never makes a
second Event; an AlreadyExists answer means an earlier try did reach the server.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.api.objects import Pod
from kubesched.cluster.kube.client import ApiError, KubeClient
from kubesched.cluster.kube.workers import AsyncCalls, submit_retrying

# The scheduler core truncates FailedScheduling notes already; every note passes through it again here
# because plugins record events too, and the API server rejects a note over the limit.
from kubesched.framework.types import truncate_note

__all__ = ["EventRecorder", "event_body", "micro_time", "truncate_note"]

log = logging.getLogger(__name__)

#: Isomorphic events within this many seconds become one Event with a series (upstream: 6 minutes).
SERIES_WINDOW = 6 * 60.0
#: events/v1 validation limits on these fields.
_NAME_LIMIT = 128


def micro_time(t: float) -> str:
    """A Kubernetes MicroTime: RFC 3339 with microseconds, UTC."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    pod: Pod,
    *,
    type: str,
    reason: str,
    action: str,
    note: str,
    reporter: str,
    instance: str,
    now: float,
) -> dict[str, Any]:
    """The events.k8s.io/v1 Event object for one occurrence."""
    meta = pod.metadata
    regarding: dict[str, str] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": meta.namespace,
        "name": meta.name,
    }
    if meta.uid:
        regarding["uid"] = meta.uid
    if meta.resource_version:
        regarding["resourceVersion"] = meta.resource_version
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.name}.{int(now * 1e9):x}", "namespace": meta.namespace},
        "eventTime": micro_time(now),
        "reportingController": reporter[:_NAME_LIMIT],
        "reportingInstance": instance[:_NAME_LIMIT],
        "action": action[:_NAME_LIMIT],
        "reason": reason[:_NAME_LIMIT],
        "type": type,
        "note": truncate_note(note),
        "regarding": regarding,
    }


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    first: float
    last: float
    count: int = 1


class EventRecorder:
    """Creates Events through `client` on `calls`' workers; isomorphic repeats become a series."""

    def __init__(
        self,
        client: KubeClient,
        calls: AsyncCalls,
        *,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.calls = calls
        self.hostname = hostname or socket.gethostname()
        self._clock = clock
        self._series: dict[tuple[str, ...], _Series] = {}
        self._lock = threading.Lock()
        self._last_prune = clock()
        #: Events created and series updates sent (for tests and logs).
        self.created = 0
        self.series_updates = 0

    def record(self, pod: Pod, *, type: str, reason: str, action: str, note: str, reporter: str) -> None:
        now = self._clock()
        note = truncate_note(note)
        key = (pod.metadata.uid or pod.key, type, reason, action, note, reporter)
        with self._lock:
            self._prune(now)
            series = self._series.get(key)
            if series is not None and now - series.last <= SERIES_WINDOW:
                series.count += 1
                series.last = now
                patch = {"series": {"count": series.count, "lastObservedTime": micro_time(now)}}
                path = f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events/{series.name}"
                submit_retrying(
                    self.calls,
                    lambda: self._send_series(path, patch),
                    lambda exc: self._series_failed(path, exc),
                )
                return
            body = event_body(
                pod,
                type=type,
                reason=reason,
                action=action,
                note=note,
                reporter=reporter,
                instance=f"{reporter}-{self.hostname}",
                now=now,
            )
            self._series[key] = _Series(body["metadata"]["name"], pod.metadata.namespace, now, now)
        submit_retrying(self.calls, lambda: self._create(body), lambda exc: self._create_failed(body, exc))

    def _create(self, body: dict[str, Any]) -> None:
        ns = body["metadata"]["namespace"]
        try:
            self.client.post(f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)
        except ApiError as exc:
            if exc.code != 409:  # 409 AlreadyExists: an earlier try got there, its answer did not
                raise
        self.created += 1

    def _create_failed(self, body: dict[str, Any], exc: ApiError) -> None:
        if exc.code == 404:  # the namespace is being deleted: nothing to report to
            return
        log.warning("event %s %s for %s/%s not recorded: %s", body["type"], body["reason"],
                    body["metadata"]["namespace"], body["regarding"]["name"], exc)  # fmt: skip

    def _send_series(self, path: str, patch: dict[str, Any]) -> None:
        self.client.patch(path, patch)  # absolute count and time: safe to repeat
        self.series_updates += 1

    def _series_failed(self, path: str, exc: ApiError) -> None:
        if exc.code != 404:
            log.warning("event series update %s failed: %s", path, exc)

    def _prune(self, now: float) -> None:
        """Forget series older than the window (at most once a minute, so record stays O(1))."""
        if now - self._last_prune < 60.0:
            return
        self._last_prune = now
        stale = [k for k, s in self._series.items() if now - s.last > SERIES_WINDOW]
        for k in stale:
            del self._series[k]
