"""The bind pipeline: a bounded number of binding cycles, one gate before each send that refuses once
suspended, closed or fenced, requests on the wire counted and waited for, token waits cut short."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kubesched.cluster.kube.client import TokenBucket
from kubesched.cluster.kube.pipeline import BATCH_SPLIT, BindPipeline, BindRefused


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def test_depth_bounds_the_cycles_admitted_and_room_comes_back_as_they_end() -> None:
    release = threading.Event()
    done = threading.Event()
    pipeline = BindPipeline(3, on_done=done.set)
    for _ in range(3):
        assert pipeline.has_room()
        pipeline.submit(lambda: release.wait(5) and None)
    assert not pipeline.has_room() and pipeline.admitted == 3
    release.set()
    wait_until(lambda: pipeline.admitted == 0)
    assert pipeline.has_room() and done.is_set()
    pipeline.stop_workers()


def test_the_gate_counts_requests_on_the_wire_and_drain_waits_for_them() -> None:
    pipeline = BindPipeline(2)
    answer = threading.Event()
    sent = threading.Event()

    def cycle() -> None:
        with pipeline.sending():
            sent.set()
            answer.wait(5)

    pipeline.submit(cycle)
    sent.wait(5)
    assert pipeline.on_wire == 1
    pipeline.close("shutting down")
    assert not pipeline.drain(0.05)  # still on the wire: drain gives up at its bound
    answer.set()
    assert pipeline.drain(5) and pipeline.on_wire == 0
    pipeline.stop_workers()


@pytest.mark.parametrize("how", ["suspend", "close", "fence"])
def test_no_request_passes_the_gate_once_it_is_shut(how: str) -> None:
    fenced: list[str] = []
    pipeline = BindPipeline(1, fence=lambda: fenced[0] if fenced else None)
    with pipeline.sending():
        pass
    if how == "suspend":
        pipeline.suspend("not leading")
    elif how == "close":
        pipeline.close("shutting down")
    else:
        fenced.append("lease not renewed")
    with pytest.raises(BindRefused), pipeline.sending():
        raise AssertionError("a request was let through")
    assert pipeline.refused == 1 and pipeline.on_wire == 0
    assert pipeline.refusal() is not None


def test_resume_opens_a_suspended_gate_but_never_a_closed_one() -> None:
    pipeline = BindPipeline(1)
    pipeline.suspend("not leading")
    pipeline.resume()
    assert pipeline.refusal() is None
    pipeline.close("shutting down")
    pipeline.resume()
    assert pipeline.refusal() == "shutting down"


def test_a_cycle_waiting_for_a_rate_limiter_token_is_released_at_once_by_close() -> None:
    limiter = TokenBucket(qps=0.2, burst=1)  # the second token is 5 s away
    pipeline = BindPipeline(2, limiter=limiter)
    ran: list[float] = []
    pipeline.submit(lambda: ran.append(time.monotonic()))
    wait_until(lambda: len(ran) == 1)
    pipeline.submit(lambda: ran.append(time.monotonic()))
    time.sleep(0.1)
    assert len(ran) == 1  # waiting for its token
    closed_at = time.monotonic()
    pipeline.close("shutting down")
    wait_until(lambda: len(ran) == 2, timeout=2)
    assert ran[1] - closed_at < 1.0
    pipeline.stop_workers()


def test_a_crashing_cycle_frees_its_place() -> None:
    pipeline = BindPipeline(1)

    def boom() -> None:
        raise RuntimeError("bug")

    pipeline.submit(boom)
    wait_until(lambda: pipeline.admitted == 0)
    assert pipeline.crashed == 1 and pipeline.has_room()
    pipeline.stop_workers()


def test_what_a_cycle_leaves_runs_after_its_place_is_freed_without_holding_up_the_next_cycle() -> None:
    pipeline = BindPipeline(1)
    release = threading.Event()
    seen: dict[str, object] = {}
    second = threading.Event()

    def after() -> None:
        seen["admitted while after runs"] = pipeline.admitted
        release.wait(5)

    pipeline.submit(lambda: after)
    wait_until(lambda: "admitted while after runs" in seen)
    assert seen["admitted while after runs"] == 0 and pipeline.has_room()
    pipeline.submit(lambda: second.set() and None)  # a worker of its own: the first one is busy
    assert second.wait(5)
    release.set()
    pipeline.stop_workers()


def test_batched_cycles_queued_while_a_batch_is_out_go_in_the_next_one_on_few_threads() -> None:
    """Cycles admitted with `submit_batched` need no thread each: a batch thread takes every one
    queued at the time; they count as admitted until their batch is answered."""
    release = threading.Event()
    batches: list[list[object]] = []
    sent = threading.Event()

    def send(members: list[object]) -> None:
        batches.append(members)
        sent.set()
        release.wait(5)

    pipeline = BindPipeline(20, send_batch=send, batch_threads=1)
    pipeline.submit_batched("a")
    assert sent.wait(5)
    for name in "bcde":
        pipeline.submit_batched(name)
    assert pipeline.admitted == 5
    release.set()
    wait_until(lambda: pipeline.admitted == 0)
    assert batches == [["a"], ["b", "c", "d", "e"]]
    assert [t.name for t in threading.enumerate() if t.name.startswith("bind-batch")] == ["bind-batch-0"]
    pipeline.stop_workers()


def test_a_backlog_behind_a_batch_on_the_wire_goes_out_on_another_batch_thread() -> None:
    release = threading.Event()
    batches: list[list[object]] = []

    def send(members: list[object]) -> None:
        batches.append(members)
        release.wait(5)

    pipeline = BindPipeline(32, send_batch=send, batch_threads=2)
    pipeline.submit_batched(0)
    wait_until(lambda: len(batches) == 1)
    for n in range(1, BATCH_SPLIT):
        pipeline.submit_batched(n)
    time.sleep(0.05)
    assert len(batches) == 1  # fewer than BATCH_SPLIT wait: they wait for the batch out
    pipeline.submit_batched(BATCH_SPLIT)
    wait_until(lambda: len(batches) == 2)
    assert batches[1] == list(range(1, BATCH_SPLIT + 1))
    release.set()
    wait_until(lambda: pipeline.admitted == 0)
    pipeline.stop_workers()


def test_a_batch_that_raises_frees_its_places() -> None:
    def send(members: list[object]) -> None:
        raise RuntimeError("bug")

    pipeline = BindPipeline(2, send_batch=send)
    pipeline.submit_batched("a")
    wait_until(lambda: pipeline.admitted == 0)
    assert pipeline.crashed == 1 and pipeline.has_room()
    pipeline.stop_workers()


def test_the_gate_counts_a_batch_as_that_many_requests() -> None:
    pipeline = BindPipeline(8)
    with pipeline.sending(5):
        assert pipeline.on_wire == 5
    assert pipeline.on_wire == 0
    pipeline.suspend("not leading")
    with pytest.raises(BindRefused), pipeline.sending(3):
        raise AssertionError("a batch was let through")
    assert pipeline.refused == 3
