"""AsyncCalls: the bounded queue and retry store behind Events and status writes."""

from __future__ import annotations

import threading
import time

from kubesched.cluster.kube.client import ApiError
from kubesched.cluster.kube.workers import AsyncCalls, submit_retrying


def test_a_retry_waits_off_the_workers_and_runs_when_due() -> None:
    calls = AsyncCalls("t", 1)
    calls.start()
    ran: list[str] = []
    try:
        assert calls.submit_later(lambda: ran.append("later"), 0.2)
        assert calls.submit(lambda: ran.append("now"))  # the only worker is not held by the wait
        assert calls.drain(10)
        assert ran == ["now", "later"] and calls.pending == 0 and calls.waiting == 0
    finally:
        calls.stop(1)


def test_the_retry_store_is_bounded() -> None:
    calls = AsyncCalls("t", 1, max_waiting=2)
    calls.start()
    try:
        assert calls.submit_later(lambda: None, 60) and calls.submit_later(lambda: None, 60)
        assert not calls.submit_later(lambda: None, 60)
        assert calls.dropped == 1 and calls.waiting == 2
    finally:
        calls.stop(1)


def test_stop_gives_waiting_calls_one_last_try_at_once_and_no_retry_after_it() -> None:
    calls = AsyncCalls("t", 1)
    calls.start()
    sent: list[int] = []
    attempts: list[int] = []
    up = threading.Event()

    def send() -> None:
        attempts.append(1)
        if not up.is_set():
            raise ApiError(0, "ConnectError", "connection refused")
        sent.append(1)

    def failure(exc: ApiError) -> None:
        pass

    submit_retrying(calls, send, failure, delays=(60.0, 60.0))
    submit_retrying(calls, lambda: (_ for _ in ()).throw(ApiError(0, "ConnectError", "refused")),
                    failure, delays=(60.0, 60.0))  # fmt: skip
    deadline = time.monotonic() + 10
    while calls.waiting < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    up.set()
    started = time.monotonic()
    calls.stop(5)
    # Both retries were due in 60 s; stop ran them at once: one got through, the other failed
    # again and was not queued for another minute. (Half the delay: not the machine's speed.)
    assert time.monotonic() - started < 30
    assert sent == [1] and len(attempts) == 2 and calls.pending == 0 and calls.waiting == 0
    assert not calls.submit(lambda: None) and not calls.submit_later(lambda: None, 0)


def test_workers_start_as_calls_wait_for_them_up_to_the_limit() -> None:
    calls = AsyncCalls("t", 3)
    calls.start()
    release = threading.Event()
    try:
        assert calls.workers == 1
        assert calls.submit(lambda: None) and calls.drain(10)
        assert calls.workers == 1  # the one worker was idle: no second one
        for _ in range(5):
            assert calls.submit(release.wait)
        assert calls.workers == 3  # every call found the others busy, up to the limit
    finally:
        release.set()
        assert calls.drain(10)
        calls.stop(1)
    assert calls.pending == 0 and calls.failed == 0 and calls.dropped == 0


def test_calls_queued_before_the_start_get_their_workers_at_the_start() -> None:
    calls = AsyncCalls("t", 4)
    ran: list[int] = []
    for i in range(6):
        assert calls.submit(lambda i=i: ran.append(i))  # type: ignore[misc]
    assert calls.workers == 0
    calls.start()
    try:
        assert calls.drain(10) and sorted(ran) == list(range(6))
        assert calls.workers == 4
    finally:
        calls.stop(1)


def test_a_carrying_thread_keeps_its_calls_and_makes_them_itself() -> None:
    calls = AsyncCalls("t", 1)
    calls.start()
    made: list[tuple[str, str]] = []
    try:
        calls.carry()
        assert calls.submit(lambda: made.append(("carried", threading.current_thread().name)))
        carried = calls.carried()
        assert calls.submit(lambda: made.append(("queued", threading.current_thread().name)))
        deadline = time.monotonic() + 5
        while not made and time.monotonic() < deadline:
            time.sleep(0.005)
        # The queued call is made by a worker; the carried one still counts as pending.
        assert made == [("queued", "t-0")] and not calls.drain(0.05) and calls.pending == 1
        calls.make(carried)
        assert made[1] == ("carried", threading.current_thread().name) and calls.pending == 0
    finally:
        calls.stop(1)


def test_carried_calls_made_after_stop_are_dropped_and_counted() -> None:
    calls = AsyncCalls("t", 1)
    calls.start()
    made: list[int] = []
    calls.carry()
    calls.submit(lambda: made.append(1))
    carried = calls.carried()
    calls.stop(0.05)  # its budget runs out waiting for the carried call
    calls.make(carried)
    assert made == [] and calls.dropped == 1 and calls.pending == 0
