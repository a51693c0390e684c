"""events.k8s.io/v1 Events about pods: `Scheduled`, `FailedScheduling`, `Preempted`.

As upstream's events recorder: `reportingController` is the profile's scheduler name, the
`reportingInstance` is `<controller>-<hostname>`, the Event is named `<pod>.<unix nanos in hex>`
and lives in the pod's namespace, and the note is cut to 1024 bytes (`msg[:1020] + " ..."`).

Repeats are counted as client-go's events/v1 broadcaster counts them. Two events are the same
(isomorphic) when type, action, reason, reporter, instance and the pod reference (its UID and
resourceVersion included) agree; the note does not count. The first is created; the second patches
the first Event's `series` to count 2; later ones only count here, and the count goes out when the
series ends (6 minutes without a repeat), every 30 minutes while it goes on, and at `stop`. So a
pod failing the same way a hundred times costs two requests, not a hundred. An entry is forgotten 6
minutes after its last occurrence, and a repeat after that starts a new Event.

Sending happens on worker threads (`AsyncCalls`); `record` never blocks. New Events wait in an
outbox that sender calls empty, a pipelined batch at a time on one connection each
(`KubeClient.post_many`): a burst of Events, one per bind, costs one write and a worker's wake-up
per batch instead of per Event, as upstream's broadcaster sends Events off the scheduling path.
With `linger` (the live scheduler's), a sender whose batch is not full waits that long for it to
fill first. The API server answers a connection's requests one after another, so one sender alone
fell behind the binds (thousands of Events unsent after 3,000 binds): another starts whenever more
than a full batch per sender waits, up to `SENDERS`, each taking its share of the backlog, up to
`BATCH`. Starting one as soon as more Events waited than senders ran kept up as well, but with a
sender, a connection and a request of its own for almost every Event: 25 sender threads, 7.5
thread switches and 0.22 ms of CPU per Event; batches take 2.1-2.4 switches and 0.14-0.17 ms
(3,000 pods on 1,000 nodes, load 21-27; none left unsent either way). A full outbox drops (and
counts) the Event.

A send that fails for a passing reason (the API server restarting) is tried again for about 45 s,
as upstream's broadcaster retries: a pod bound during an outage still gets its `Scheduled` Event. A
retried create keeps the Event's name, so it never makes a second Event; an AlreadyExists answer
means an earlier try did reach the server. A series patch whose Event is gone
(404) creates the Event again with its series, as upstream does.
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
from kubesched.cluster.kube.workers import AsyncCalls, retry_failed, submit_retrying

# The scheduler core truncates FailedScheduling notes already; every note passes through it again here
# because plugins record events too, and the API server rejects a note over the limit.
from kubesched.framework.types import truncate_note

__all__ = ["EventRecorder", "event_body", "micro_time", "truncate_note"]

log = logging.getLogger(__name__)

#: A series (or a lone Event) ends this long after its last occurrence (upstream's finishTime).
FINISH_AFTER = 6 * 60.0
#: A series still going on has its count written this often (upstream's refreshTime).
REFRESH_EVERY = 30 * 60.0
#: events/v1 validation limits on these fields.
_NAME_LIMIT = 128
#: Events sent in one pipelined batch at most; batches in flight at most (one connection each); Events
#: waiting to be sent at most (past it, dropped).
BATCH = 16
SENDERS = 64
OUTBOX_LIMIT = 10_000


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
class _Entry:
    """The first Event of an isomorphic group, and how often it has happened since."""

    body: dict[str, Any]
    last: float
    #: Occurrences so far, and the count the server was last sent (1: no series yet).
    count: int = 1
    written: int = 1

    @property
    def path(self) -> str:
        meta = self.body["metadata"]
        return f"/apis/events.k8s.io/v1/namespaces/{meta['namespace']}/events/{meta['name']}"


class EventRecorder:
    """Creates Events through `client` on `calls`' workers; isomorphic repeats become a series.

    `start()` runs the timer that ends and refreshes series; `stop()` ends it and sends the counts
    not yet written (call it before the calls' own `stop`, which flushes them).
    """

    def __init__(
        self,
        client: KubeClient,
        calls: AsyncCalls,
        *,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
        linger: float = 0.0,
    ) -> None:
        self.client = client
        self.calls = calls
        #: Seconds a sender waits for a batch that is not full yet (a burst's next Events).
        self.linger = linger
        self.hostname = hostname or socket.gethostname()
        self._clock = clock
        self._cache: dict[tuple[object, ...], _Entry] = {}
        self._lock = threading.Lock()
        self._next_refresh = clock() + REFRESH_EVERY
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._outbox: list[dict[str, Any]] = []  # new Events not yet sent (under `_lock`)
        self._sending = 0  # Events taken from the outbox by the batches in flight (under `_lock`)
        self._senders = 0  # calls sending the outbox, queued or running (under `_lock`)
        #: Events dropped because the outbox was full.
        self.dropped = 0
        #: Events created, series patches sent, and repeats only counted (for tests and logs).
        self.created = 0
        self.series_updates = 0
        self.counted = 0

    def record(self, pod: Pod, *, type: str, reason: str, action: str, note: str, reporter: str) -> None:
        now = self._clock()
        instance = f"{reporter}-{self.hostname}"
        meta = pod.metadata
        key = (type, action, reason, reporter, instance, meta.namespace, meta.name, meta.uid,
               meta.resource_version)  # fmt: skip
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                entry.count += 1
                entry.last = now
                if entry.count > 2:
                    self.counted += 1  # written when the series ends or is refreshed
                    return
                self._send_series(entry)
                return
            body = event_body(
                pod,
                type=type,
                reason=reason,
                action=action,
                note=note,
                reporter=reporter,
                instance=instance,
                now=now,
            )
            self._cache[key] = _Entry(body, now)
            if len(self._outbox) >= OUTBOX_LIMIT:
                self.dropped += 1
                return
            self._outbox.append(body)
            senders = self._senders
            if senders and (senders >= SENDERS or len(self._outbox) <= senders * BATCH):
                return  # the senders running take it
            self._senders += 1
        if not self.calls.submit(self._flush):
            with self._lock:
                self._senders -= 1
                if not self._senders:
                    self.dropped += len(self._outbox)
                    self._outbox.clear()

    @property
    def unsent(self) -> int:
        """New Events not sent yet (waiting in the outbox, or in the batch on its way)."""
        return len(self._outbox) + self._sending

    # ------------------------------------------------------------------ series upkeep

    def start(self) -> None:
        if self._timer is None:
            self._timer = threading.Thread(target=self._tick, name="event-series", daemon=True)
            self._timer.start()

    def stop(self) -> None:
        """End the timer and send every count not yet written (the calls' `stop` flushes them)."""
        self._stop.set()
        with self._lock:
            for entry in self._cache.values():
                if entry.count > entry.written:
                    self._send_series(entry)

    def upkeep(self) -> None:
        """End the series that saw no repeat for `FINISH_AFTER` (writing their final count) and
        forget lone Events as old; every `REFRESH_EVERY`, write the count of every series."""
        now = self._clock()
        with self._lock:
            refresh = now >= self._next_refresh
            if refresh:
                self._next_refresh = now + REFRESH_EVERY
            for key, entry in list(self._cache.items()):
                ended = now - entry.last > FINISH_AFTER
                if entry.count > 1 and (refresh or (ended and entry.count > entry.written)):
                    self._send_series(entry)
                if ended:
                    del self._cache[key]

    def _tick(self) -> None:
        while not self._stop.wait(FINISH_AFTER / 6):
            try:
                self.upkeep()
            except Exception:  # pragma: no cover - never let the timer die
                log.exception("event series upkeep failed")

    # ------------------------------------------------------------------ sending

    def _send_series(self, entry: _Entry) -> None:
        """Queue a patch with the entry's count and time now (under the lock)."""
        entry.written = entry.count
        body = {**entry.body, "series": {"count": entry.count, "lastObservedTime": micro_time(entry.last)}}
        patch = {"series": body["series"]}
        path = entry.path
        submit_retrying(
            self.calls,
            lambda: self._patch_series(path, patch, body),
            lambda exc: self._series_failed(path, exc),
        )

    def _flush(self) -> None:
        """One sender: the outbox, a pipelined batch at a time, until it is empty; a create that
        failed for a passing reason is tried again alone, as `submit_retrying` would."""
        while True:
            if self.linger and len(self._outbox) < BATCH:
                time.sleep(self.linger)
            with self._lock:
                # An even share of the backlog per sender (at most BATCH): the server works through
                # each connection's batch one request at a time, so spreading it finishes sooner.
                n = min(BATCH, -(-len(self._outbox) // max(1, self._senders)))
                bodies = self._outbox[:n]
                del self._outbox[:n]
                if not bodies:
                    self._senders -= 1
                    return
                self._sending += len(bodies)
            try:
                answers = self.client.post_many([(_events_path(b), b) for b in bodies])
            finally:
                with self._lock:
                    self._sending -= len(bodies)
            for body, answer in zip(bodies, answers, strict=True):
                if not isinstance(answer, ApiError) or answer.code == 409:  # 409: an earlier try got there
                    self.created += 1
                    continue
                self._retry(body, answer)

    def _retry(self, body: dict[str, Any], error: ApiError) -> None:
        retry_failed(
            self.calls, lambda: self._create(body), lambda exc: self._create_failed(body, exc), error
        )

    def _create(self, body: dict[str, Any]) -> None:
        try:
            self.client.post(_events_path(body), body)
        except ApiError as exc:
            if exc.code != 409:  # 409 AlreadyExists: an earlier try got there, its answer did not
                raise
        self.created += 1

    def _create_failed(self, body: dict[str, Any], exc: ApiError) -> None:
        if exc.code == 404:  # the namespace is being deleted: nothing to report to
            return
        log.warning("event %s %s for %s/%s not recorded: %s", body["type"], body["reason"],
                    body["metadata"]["namespace"], body["regarding"]["name"], exc)  # fmt: skip

    def _patch_series(self, path: str, patch: dict[str, Any], body: dict[str, Any]) -> None:
        try:
            self.client.patch(path, patch)  # absolute count and time: safe to repeat
        except ApiError as exc:
            if exc.code != 404:
                raise
            # The Event is gone (expired, deleted, or its create still retrying): create it again
            # with its series, as upstream does; AlreadyExists means it was there after all.
            try:
                self.client.post(_events_path(body), body)
            except ApiError as again:
                if again.code != 409:
                    raise
                self.client.patch(path, patch)
        self.series_updates += 1

    def _series_failed(self, path: str, exc: ApiError) -> None:
        if exc.code != 404:
            log.warning("event series update %s failed: %s", path, exc)


def _events_path(body: dict[str, Any]) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{body['metadata']['namespace']}/events"
