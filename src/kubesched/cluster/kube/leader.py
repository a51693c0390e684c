"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does.

Only the leader schedules; standbys keep their informers warm so a takeover costs no relist.

* Acquire: every `retryPeriod` (jittered), read the Lease. Take it if nobody holds it, or if its
  record has not changed for `leaseDuration` *as measured on our own monotonic clock* since we
  first saw that record (never by comparing the remote `renewTime` with our wall clock, so clock
  skew between machines cannot make two leaders).
* Renew: every `retryPeriod` write a new `renewTime`. If no renewal succeeded for `renewDeadline`,
  leadership is lost: scheduling stops at once (`on_stopped_leading`), before another instance may
  take over (`leaseDuration` > `renewDeadline` is that safety margin; config validation enforces it).
  A renewal round that starts after `renewDeadline` (the process was paused, or the last attempt
  hung) is lost without asking the server, as client-go's timed renew round is.
* Fence: `fence()` is what the bind pipeline asks before each bind. It refuses from the moment the
  last successful acquire/renew *started* is `renewDeadline` old, measured on our clock, without
  waiting for the renew loop to notice: a leader resuming from a pause sends nothing. Another
  candidate cannot take over before that moment + `leaseDuration`, so the gap is left for requests
  already on the wire.
* Release on shutdown: clear `holderIdentity` and set `leaseDurationSeconds: 1`, so a standby takes
  over within one retry period instead of waiting out the lease.

Writes use the Lease's resourceVersion (optimistic concurrency), so two candidates racing for an
expired lease cannot both win: the loser gets a 409 and stays standby.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import msgspec

from kubesched.cluster.kube.client import ApiError, KubeClient

__all__ = [
    "ApiLeaseLock",
    "LeaderElector",
    "LeaseLock",
    "LeaseRecord",
    "default_identity",
]

log = logging.getLogger(__name__)

#: client-go's JitterFactor for the acquire loop.
JITTER_FACTOR = 1.2


def default_identity() -> str:
    """`<hostname>_<uuid>`, as kube-scheduler names itself in the Lease."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The Lease spec fields leader election reads and writes."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0


class LeaseLock(Protocol):
    """Get/create/update one Lease. `get` returns (record, resourceVersion) or None if absent."""

    def get(self) -> tuple[LeaseRecord, str] | None: ...

    def create(self, record: LeaseRecord) -> str: ...

    def update(self, record: LeaseRecord, resource_version: str) -> str: ...

    def describe(self) -> str: ...


class _LeaseSpec(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, frozen=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class _LeaseMeta(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Lease(msgspec.Struct, kw_only=True, frozen=True):
    metadata: _LeaseMeta = _LeaseMeta()
    spec: _LeaseSpec = _LeaseSpec()


class ApiLeaseLock:
    """A Lease in the API server (`coordination.k8s.io/v1`)."""

    def __init__(self, client: KubeClient, namespace: str, name: str, *, timeout: float = 10.0) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.timeout = timeout
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> tuple[LeaseRecord, str] | None:
        try:
            resp = self.client.request("GET", f"{self._collection}/{self.name}", timeout=self.timeout)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        lease: _Lease = resp.decode(_Lease)
        s = lease.spec
        record = LeaseRecord(
            holder_identity=s.holder_identity or "",
            lease_duration_seconds=s.lease_duration_seconds or 0,
            acquire_time=s.acquire_time,
            renew_time=s.renew_time,
            lease_transitions=s.lease_transitions or 0,
        )
        return record, lease.metadata.resource_version

    def _body(self, record: LeaseRecord, resource_version: str = "") -> bytes:
        meta: dict[str, str] = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        spec = _LeaseSpec(
            holder_identity=record.holder_identity,
            lease_duration_seconds=record.lease_duration_seconds,
            acquire_time=record.acquire_time,
            renew_time=record.renew_time,
            lease_transitions=record.lease_transitions,
        )
        return msgspec.json.encode(
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}
        )

    def create(self, record: LeaseRecord) -> str:
        resp = self.client.request("POST", self._collection, body=self._body(record), timeout=self.timeout)
        lease: _Lease = resp.decode(_Lease)
        return lease.metadata.resource_version

    def update(self, record: LeaseRecord, resource_version: str) -> str:
        resp = self.client.request(
            "PUT",
            f"{self._collection}/{self.name}",
            body=self._body(record, resource_version),
            timeout=self.timeout,
        )
        lease: _Lease = resp.decode(_Lease)
        return lease.metadata.resource_version


def _micro_time(wall: datetime) -> str:
    return wall.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Runs the acquire/renew/release cycle for one identity on one LeaseLock.

    `run()` blocks (run it in a thread) until `stop()` or until leadership is lost; it calls
    `on_started_leading()` once leading and `on_stopped_leading()` when it stops leading for any
    reason. Clocks and sleep are injectable, so the timing rules are unit-tested without waiting.
    """

    def __init__(
        self,
        lock: LeaseLock,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], bool] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        self.lock = lock
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._clock = clock
        self._wall = wall_clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait  # True when stopped
        self._rng = rng or random.Random()
        self._leading = threading.Event()
        #: The last record seen (or written) and when (our monotonic clock) it last changed.
        self.observed: LeaseRecord | None = None
        self.observed_at = 0.0
        self._observed_rv = ""
        #: When the last successful acquire/renew attempt started (monotonic): the Lease is ours, by
        #: any other candidate's clock, until at least this + leaseDuration.
        self.last_renew = 0.0

    # ------------------------------------------------------------------ state

    @property
    def is_leader(self) -> bool:
        return self.observed is not None and self.observed.holder_identity == self.identity

    @property
    def leading(self) -> bool:
        """True between on_started_leading and on_stopped_leading."""
        return self._leading.is_set()

    @property
    def leader(self) -> str:
        return self.observed.holder_identity if self.observed is not None else ""

    def healthy(self, tolerance: float = 20.0) -> bool:
        """client-go's watchdog: a leader that has not renewed for leaseDuration + tolerance is stuck."""
        if not self.leading:
            return True
        return self._clock() - self.last_renew <= self.lease_duration + tolerance

    def fence(self) -> str | None:
        """Why binding is not safe now (None: it is): not leading, or renewDeadline passed since the
        last successful renewal started."""
        if not self.leading:
            return "not leading"
        age = self._clock() - self.last_renew
        if age >= self.renew_deadline:
            return (
                f"lease {self.lock.describe()} not renewed for {age:.1f} s "
                f"(renewDeadline {self.renew_deadline:g} s)"
            )
        return None

    def stop(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------ one attempt

    def _observe(self, record: LeaseRecord, resource_version: str) -> None:
        if record != self.observed:
            self.observed = record
            self.observed_at = self._clock()
        self._observed_rv = resource_version

    def _lease_valid(self, now: float) -> bool:
        """Whether the observed holder's lease is still running, by our clock since we saw it change."""
        if self.observed is None:
            return False
        duration = self.observed.lease_duration_seconds or self.lease_duration
        return self.observed_at + duration > now

    def try_acquire_or_renew(self) -> bool:
        """One acquire/renew attempt: True if we hold the lease afterwards."""
        now = self._clock()
        stamp = _micro_time(self._wall())
        record = LeaseRecord(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.lease_duration)),
            acquire_time=stamp,
            renew_time=stamp,
        )
        try:
            current = self.lock.get()
        except ApiError as exc:
            log.warning("error retrieving lease %s: %s", self.lock.describe(), exc)
            return False
        if current is None:
            try:
                rv = self.lock.create(record)
            except ApiError as exc:
                log.warning("error creating lease %s: %s", self.lock.describe(), exc)
                return False
            self._observe(record, rv)
            return True
        old, old_rv = current
        self._observe(old, old_rv)
        if old.holder_identity and self._lease_valid(now) and old.holder_identity != self.identity:
            return False  # somebody else holds a valid lease
        if old.holder_identity == self.identity:
            record = LeaseRecord(
                holder_identity=self.identity,
                lease_duration_seconds=record.lease_duration_seconds,
                acquire_time=old.acquire_time or stamp,
                renew_time=stamp,
                lease_transitions=old.lease_transitions,
            )
        else:
            record = LeaseRecord(
                holder_identity=self.identity,
                lease_duration_seconds=record.lease_duration_seconds,
                acquire_time=stamp,
                renew_time=stamp,
                lease_transitions=old.lease_transitions + 1,
            )
        try:
            rv = self.lock.update(record, old_rv)
        except ApiError as exc:
            if exc.code != 409:
                log.warning("error updating lease %s: %s", self.lock.describe(), exc)
            return False
        self._observe(record, rv)
        return True

    def release(self) -> bool:
        """Give the lease up (only if we hold it): empty holder, 1-second duration."""
        if not self.is_leader or self.observed is None:
            return True
        stamp = _micro_time(self._wall())
        record = LeaseRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=stamp,
            renew_time=stamp,
            lease_transitions=self.observed.lease_transitions,
        )
        try:
            rv = self.lock.update(record, self._observed_rv)
        except ApiError as exc:
            log.warning("failed to release lease %s: %s", self.lock.describe(), exc)
            return False
        self._observe(record, rv)
        log.info("released lease %s", self.lock.describe())
        return True

    # ------------------------------------------------------------------ the loop

    def run(
        self,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
    ) -> bool:
        """Acquire, lead until stopped or lost, release. Returns True if leadership was lost."""
        log.info("attempting to acquire leader lease %s as %s", self.lock.describe(), self.identity)
        while True:
            if self._stop.is_set():
                return False
            started = self._clock()
            if self.try_acquire_or_renew():
                break
            if self.observed is not None and self.observed.holder_identity:
                log.debug("lease %s is held by %s", self.lock.describe(), self.observed.holder_identity)
            delay = self.retry_period * (1.0 + JITTER_FACTOR * self._rng.random())
            if self._sleep(delay):
                return False
        log.info("successfully acquired lease %s", self.lock.describe())
        self.last_renew = started
        self._leading.set()
        lost = False
        try:
            on_started_leading()
            lost = self._renew_loop()
        finally:
            self._leading.clear()
            if not lost and self.release_on_cancel:
                self.release()
            on_stopped_leading()
        return lost

    def _renew_loop(self) -> bool:
        """Renew every retryPeriod until stopped (False) or no renewal for renewDeadline (True)."""
        while True:
            if self._sleep(self.retry_period):
                return False
            started = self._clock()
            if started - self.last_renew >= self.renew_deadline:
                log.error(
                    "failed to renew lease %s: no renewal for %.1f s (paused?)",
                    self.lock.describe(),
                    started - self.last_renew,
                )
                return True
            if self.try_acquire_or_renew() and self.is_leader:
                self.last_renew = started
                continue
            if self._clock() - self.last_renew >= self.renew_deadline:
                log.error("failed to renew lease %s: timed out reached", self.lock.describe())
                return True
