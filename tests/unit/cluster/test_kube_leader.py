"""Lease leader election timing, with an in-memory Lease and an injected clock.

The rules under test are client-go's: a lease held by someone else is respected for its duration as
measured on *our* clock since we saw it change; renewals that fail for renewDeadline lose leadership;
release empties the holder so a standby takes over within a retry period.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import pytest

from kubesched.cluster.kube.client import ApiError
from kubesched.cluster.kube.leader import LeaderElector, LeaseRecord


class MemoryLease:
    """One Lease with resourceVersion checks, like the API server's optimistic concurrency."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.rv = 0
        self.fail: ApiError | None = None
        self.writes = 0

    def describe(self) -> str:
        return "kube-system/kubesched"

    def get(self) -> tuple[LeaseRecord, str] | None:
        if self.fail is not None:
            raise self.fail
        return None if self.record is None else (self.record, str(self.rv))

    def create(self, record: LeaseRecord) -> str:
        if self.fail is not None:
            raise self.fail
        if self.record is not None:
            raise ApiError(409, "AlreadyExists", "leases already exists")
        self.record, self.rv = record, self.rv + 1
        self.writes += 1
        return str(self.rv)

    def update(self, record: LeaseRecord, resource_version: str) -> str:
        if self.fail is not None:
            raise self.fail
        if resource_version != str(self.rv):
            raise ApiError(409, "Conflict", "the object has been modified")
        self.record, self.rv = record, self.rv + 1
        self.writes += 1
        return str(self.rv)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def elector(lease: MemoryLease, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(
        lease,
        identity,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        clock=clock,
        wall_clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_first_candidate_creates_the_lease_and_leads() -> None:
    lease, clock = MemoryLease(), Clock()
    a = elector(lease, clock, "a")
    assert a.try_acquire_or_renew() and a.is_leader
    assert lease.record is not None
    assert lease.record.holder_identity == "a" and lease.record.lease_duration_seconds == 15
    assert lease.record.renew_time == "2026-01-01T00:00:00.000000Z"


def test_a_held_lease_is_respected_until_it_goes_unrenewed_for_its_duration_on_our_clock() -> None:
    lease, clock = MemoryLease(), Clock()
    a, b = elector(lease, clock, "a"), elector(lease, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b first sees the record now
    clock.t += 14.9
    assert not b.try_acquire_or_renew()
    clock.t += 0.2  # 15.1 s since b saw the record change
    assert b.try_acquire_or_renew() and b.is_leader
    assert lease.record is not None and lease.record.lease_transitions == 1


def test_renewals_keep_the_lease_from_expiring_for_the_standby() -> None:
    lease, clock = MemoryLease(), Clock()
    a, b = elector(lease, clock, "a"), elector(lease, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    for _ in range(20):
        clock.t += 2.0
        # The wall clock is frozen here, so make each renewal a visibly different record.
        a._wall = functools.partial(datetime.fromtimestamp, clock.t, UTC)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()


def test_remote_clock_skew_does_not_matter_only_observed_changes_do() -> None:
    lease, clock = MemoryLease(), Clock()
    lease.record = LeaseRecord(
        holder_identity="far-away", lease_duration_seconds=15,
        renew_time="1999-01-01T00:00:00.000000Z", acquire_time="1999-01-01T00:00:00.000000Z",
    )  # fmt: skip
    b = elector(lease, clock, "b")
    assert not b.try_acquire_or_renew()  # an ancient renewTime alone does not make it expired


def test_two_candidates_racing_for_an_expired_lease_cannot_both_win() -> None:
    lease, clock = MemoryLease(), Clock()
    a, b, c = elector(lease, clock, "a"), elector(lease, clock, "b"), elector(lease, clock, "c")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    c.try_acquire_or_renew()
    clock.t += 16
    # Both read the same expired record; the second write carries a stale resourceVersion.
    rb, rc = lease.get(), lease.get()
    assert rb is not None and rc is not None
    original_get = lease.get
    lease.get = lambda: rb  # type: ignore[method-assign]
    assert b.try_acquire_or_renew()
    lease.get = lambda: rc  # type: ignore[method-assign]
    assert not c.try_acquire_or_renew()
    lease.get = original_get  # type: ignore[method-assign]
    assert lease.record is not None and lease.record.holder_identity == "b"


def test_release_empties_the_holder_so_a_standby_takes_over_within_a_second() -> None:
    lease, clock = MemoryLease(), Clock()
    a, b = elector(lease, clock, "a"), elector(lease, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    assert a.release()
    assert lease.record is not None
    assert lease.record.holder_identity == "" and lease.record.lease_duration_seconds == 1
    clock.t += 0.1
    assert b.try_acquire_or_renew() and b.is_leader  # an empty holder is free at once


def test_release_is_a_no_op_for_a_non_leader() -> None:
    lease, clock = MemoryLease(), Clock()
    a, b = elector(lease, clock, "a"), elector(lease, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    writes = lease.writes
    assert b.release() and lease.writes == writes


def test_run_leads_then_loses_the_lease_after_renew_deadline_without_success() -> None:
    lease, clock = MemoryLease(), Clock()
    events: list[str] = []

    def sleep(seconds: float) -> bool:
        clock.t += seconds
        if clock.t > 1010:  # from here on the API server is unreachable
            lease.fail = ApiError(0, "ConnectError", "connection refused")
        return False

    a = LeaderElector(
        lease, "a", lease_duration=15, renew_deadline=10, retry_period=2, clock=clock, sleep=sleep,
        wall_clock=lambda: datetime.fromtimestamp(clock.t, UTC),
    )  # fmt: skip
    lost = a.run(lambda: events.append("started"), lambda: events.append("stopped"))
    assert lost and events == ["started", "stopped"]
    # The last good renewal was at or before t=1010; leadership ends once 10 s passed without one,
    # well before the 15 s lease could expire for a standby.
    assert 1018 <= clock.t <= 1022
    assert not a.leading


def test_run_stops_cleanly_and_releases_when_stopped() -> None:
    lease, clock = MemoryLease(), Clock()
    events: list[str] = []
    a: LeaderElector

    def sleep(seconds: float) -> bool:
        clock.t += seconds
        if clock.t > 1006:
            a.stop()
            return True
        return False

    a = LeaderElector(
        lease, "a", lease_duration=15, renew_deadline=10, retry_period=2, clock=clock, sleep=sleep,
        wall_clock=lambda: datetime.fromtimestamp(clock.t, UTC),
    )  # fmt: skip
    lost = a.run(lambda: events.append("started"), lambda: events.append("stopped"))
    assert not lost and events == ["started", "stopped"]
    assert lease.record is not None and lease.record.holder_identity == ""


def test_run_waits_as_standby_with_jittered_retries() -> None:
    lease, clock = MemoryLease(), Clock()
    lease.record = LeaseRecord(holder_identity="other", lease_duration_seconds=15)
    delays: list[float] = []
    b: LeaderElector

    def sleep(seconds: float) -> bool:
        delays.append(seconds)
        clock.t += seconds
        if len(delays) >= 5:
            b.stop()
            return True
        lease.rv += 1  # the holder keeps renewing
        lease.record = LeaseRecord(
            holder_identity="other", lease_duration_seconds=15, renew_time=str(clock.t)
        )
        return False

    b = LeaderElector(
        lease, "b", lease_duration=15, renew_deadline=10, retry_period=2, clock=clock, sleep=sleep
    )
    assert b.run(lambda: pytest.fail("must not lead"), lambda: None) is False
    assert all(2.0 <= d <= 2.0 * 2.2 for d in delays)


def test_lease_duration_must_exceed_renew_deadline() -> None:
    with pytest.raises(ValueError, match="greater than renewDeadline"):
        LeaderElector(MemoryLease(), "a", lease_duration=10, renew_deadline=10)


def test_health_watchdog_flags_a_leader_that_stopped_renewing() -> None:
    lease, clock = MemoryLease(), Clock()
    a = elector(lease, clock, "a")
    a.try_acquire_or_renew()
    a._leading.set()
    a.last_renew = clock.t
    assert a.healthy()
    clock.t += 15 + 21
    assert not a.healthy()


def test_the_fence_refuses_binds_renew_deadline_after_the_last_renewal_started() -> None:
    """Measured from when the successful attempt *started*: a standby cannot take over before that
    moment + leaseDuration, so binds stop renewDeadline in and leave the rest for the wire."""
    lease, clock = MemoryLease(), Clock()
    fences: list[str | None] = []

    def sleep(seconds: float) -> bool:
        clock.t += seconds
        fences.append(a.fence())
        if clock.t > 1004:
            lease.fail = ApiError(0, "ConnectError", "connection refused")
        return False

    a = LeaderElector(
        lease, "a", lease_duration=15, renew_deadline=10, retry_period=2, clock=clock, sleep=sleep,
        wall_clock=lambda: datetime.fromtimestamp(clock.t, UTC),
    )  # fmt: skip
    assert a.fence() == "not leading"
    assert a.run(lambda: None, lambda: None)
    # Renewals at 1002 and 1004 succeeded (the last one started at 1004); the fence is open through
    # 1012 and shut from 1014 on, and no later renewal reopened it.
    assert fences[:5] == [None, None, None, None, None]
    shut = [f for f in fences if f is not None]
    assert shut and "not renewed" in str(shut[0])
    assert a.fence() == "not leading"


def test_a_renew_round_starting_after_renew_deadline_is_lost_without_asking_the_server() -> None:
    """A leader paused past its lease (SIGSTOP, a frozen VM) gives up the moment it resumes: even if
    the server would still take the renewal, another replica may already be leading."""
    lease, clock = MemoryLease(), Clock()
    paused = False

    def sleep(seconds: float) -> bool:
        nonlocal paused
        clock.t += seconds
        if not paused and clock.t > 1004:
            paused = True
            clock.t += 20  # frozen past renewDeadline and leaseDuration
            writes_before.append(lease.writes)
        return False

    writes_before: list[int] = []
    a = LeaderElector(
        lease, "a", lease_duration=15, renew_deadline=10, retry_period=2, clock=clock, sleep=sleep,
        wall_clock=lambda: datetime.fromtimestamp(clock.t, UTC),
    )  # fmt: skip
    assert a.run(lambda: None, lambda: None)
    assert lease.writes == writes_before[0]  # no renewal was attempted after the pause
