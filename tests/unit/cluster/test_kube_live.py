"""LiveCluster end to end over scripted informers and a fake API: the loop binds, one bad pod does not
block the others, a 409 is final, and the state lock hands over fairly."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from kube_fakes import FakeKube, ScriptedListWatch, list_page, node_json, pod_json

from kubesched.cluster.kube.client import TokenBucket
from kubesched.cluster.kube.informer import KINDS, ResourceKind
from kubesched.cluster.kube.live import LiveCluster, LiveOptions
from kubesched.cluster.kube.live_loop import LOOP_SLICE_SECONDS
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.config import decode_config
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins import default_registry

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: kubesched
- schedulerName: nodelabelfilter
  plugins:
    filter:
      enabled: [{name: NodeFilterLabel}]
"""


class PerKind:
    """One scripted source per kind."""

    def __init__(self, sources: dict[str, ScriptedListWatch]) -> None:
        self.sources = sources

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        return self.sources[kind.kind].list_page(kind, limit=limit, continue_token=continue_token)

    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[Iterable[bytes]]:
        return self.sources[kind.kind].watch(
            kind, resource_version=resource_version, timeout_seconds=timeout_seconds, on_open=on_open
        )


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def build(
    kube: FakeKube,
    nodes: list[Any],
    pods: list[Any],
    *,
    metrics: SchedulerMetrics | None = None,
    options: LiveOptions | None = None,
    fence: Callable[[], str | None] | None = None,
) -> tuple[LiveCluster, PerKind]:
    """A LiveCluster over scripted lists of `nodes` and `pods`, not started."""
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "test.yaml", registry)
    source = PerKind(
        {
            "Node": ScriptedListWatch([[list_page(nodes, rv="10")]], []),
            "Pod": ScriptedListWatch([[list_page(pods, rv="10")]], []),
        }
    )
    cluster = LiveCluster(
        cfg,
        registry,
        kube,  # type: ignore[arg-type]
        metrics=metrics,
        options=options or LiveOptions(),
        source=source,
        fence=fence,
    )
    return cluster, source


def start(
    kube: FakeKube, nodes: list[Any], pods: list[Any], metrics: SchedulerMetrics | None = None
) -> tuple[LiveCluster, PerKind]:
    cluster, source = build(
        kube, nodes, pods, metrics=metrics or SchedulerMetrics(), options=LiveOptions(bind_depth=4)
    )
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    assert cluster.wait_for_sync(5)
    cluster.start_loop()
    cluster.set_leading(True)
    return cluster, source


def stop(cluster: LiveCluster, source: PerKind) -> None:
    for s in source.sources.values():
        s.release.set()
    cluster.stop(5)


def test_pods_of_our_profiles_are_bound_and_others_left_alone() -> None:
    kube = FakeKube()
    nodes = [node_json("n1"), node_json("n2", labels={"node": "hello"})]
    pods = [
        pod_json("a", scheduler="kubesched"),
        pod_json("b", scheduler="nodelabelfilter"),
        pod_json("c", scheduler="default-scheduler"),
        pod_json("d", scheduler="kubesched", node="n1"),  # already bound: only accounted
    ]
    cluster, source = start(kube, nodes, pods)
    try:
        wait_until(lambda: len(kube.bound) == 2)
        assert kube.bound["default/b"] == "n1"  # NodeFilterLabel rejects n2 for this profile
        assert "default/c" not in kube.bound and "default/d" not in kube.bound
        wait_until(lambda: sum(e["reason"] == "Scheduled" for e in kube.events) == 2)
        reporters = {e["regarding"]["name"]: e["reportingController"] for e in kube.events}
        assert reporters == {"a": "kubesched", "b": "nodelabelfilter"}
        assert cluster.scheduled == 2
    finally:
        stop(cluster, source)


def test_a_pod_with_a_bad_quantity_gets_failed_scheduling_and_does_not_block_the_rest() -> None:
    kube = FakeKube()
    pods = [pod_json("bad", scheduler="kubesched", cpu="lots"), pod_json("good", scheduler="kubesched")]
    cluster, source = start(kube, [node_json("n1")], pods)
    try:
        wait_until(lambda: "default/good" in kube.bound)
        wait_until(lambda: any(e["regarding"]["name"] == "bad" for e in kube.events))
        (event,) = [e for e in kube.events if e["regarding"]["name"] == "bad"]
        assert event["reason"] == "FailedScheduling" and event["type"] == "Warning"
        assert "lots" in event["note"]
        wait_until(lambda: any(p.endswith("/bad/status") for p, _ in kube.patches))
        (patch,) = [b for p, b in kube.patches if p.endswith("/bad/status")]
        assert patch["status"]["conditions"][0]["reason"] == "SchedulerError"
        assert "default/bad" not in kube.bound
    finally:
        stop(cluster, source)


def test_a_409_already_assigned_elsewhere_is_final_and_never_retried() -> None:
    kube = FakeKube()
    kube.bound["default/taken"] = "someone-elses-node"
    cluster, source = start(kube, [node_json("n1")], [pod_json("taken", scheduler="kubesched")])
    try:
        wait_until(lambda: len(kube.bind_calls) == 1)
        time.sleep(0.3)  # a requeued pod would be retried at once (backoff pops early when idle)
        assert kube.bind_calls == [("default/taken", "n1")]
        assert cluster.bind_conflicts == 1
        assert not any(e["reason"] == "FailedScheduling" for e in kube.events)
        counts = cluster.snapshot_counts()
        assert counts["active"] == counts["backoff"] == counts["unschedulable"] == 0
    finally:
        stop(cluster, source)


def test_a_409_naming_our_own_node_is_not_our_success() -> None:
    """Another replica (or a request of ours whose answer was lost) bound it: no Scheduled Event and no
    scheduled count of ours, and the pod leaves the queue without another bind."""
    kube = FakeKube()
    kube.bound["default/mine"] = "n1"
    metrics = SchedulerMetrics()
    cluster, source = start(kube, [node_json("n1")], [pod_json("mine", scheduler="kubesched")], metrics)
    try:
        wait_until(lambda: cluster.bind_conflicts == 1)
        time.sleep(0.3)  # a requeued pod would be retried at once (backoff pops early when idle)
        assert kube.bind_calls == [("default/mine", "n1")]
        assert cluster.scheduled == 0
        assert not any(e["reason"] == "Scheduled" for e in kube.events)
        assert metrics.schedule_attempts.labels("scheduled", "kubesched")._value.get() == 0
        counts = cluster.snapshot_counts()
        assert counts["active"] == counts["backoff"] == counts["unschedulable"] == 0
    finally:
        stop(cluster, source)


def test_a_failed_bind_is_forgotten_and_requeued() -> None:
    from kubesched.cluster.kube.client import ApiError

    kube = FakeKube()
    kube.fail_binds_with = ApiError(500, "InternalError", "etcd leader changed")
    cluster, source = start(kube, [node_json("n1")], [pod_json("p", scheduler="kubesched")])
    try:
        wait_until(lambda: len(kube.bind_calls) >= 1)
        wait_until(lambda: cluster.snapshot_counts()["assumed"] == 0)
        kube.fail_binds_with = None
        wait_until(lambda: "default/p" in kube.bound, timeout=15)  # after its error backoff
        wait_until(lambda: cluster.scheduled == 1)  # counted once the bind's answer is handled
        time.sleep(0.2)
        assert cluster.scheduled == 1 and len(kube.bound) == 1
    finally:
        stop(cluster, source)


def test_nothing_is_popped_while_not_leading() -> None:
    kube = FakeKube()
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "test.yaml", registry)
    source = PerKind(
        {
            "Node": ScriptedListWatch([[list_page([node_json("n1")], rv="1")]], []),
            "Pod": ScriptedListWatch([[list_page([pod_json("a", scheduler="kubesched")], rv="1")]], []),
        }
    )
    cluster = LiveCluster(cfg, registry, kube, source=source)  # type: ignore[arg-type]
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    cluster.wait_for_sync(5)
    cluster.start_loop()
    try:
        time.sleep(0.3)
        assert kube.bind_calls == []
        cluster.set_leading(True)
        wait_until(lambda: "default/a" in kube.bound)
    finally:
        stop(cluster, source)


# --------------------------------------------------------------------------- the bind pipeline


def many_pods(n: int) -> list[Any]:
    return [pod_json(f"p{i:02d}", scheduler="kubesched") for i in range(n)]


def test_the_loop_runs_at_most_depth_pods_ahead_of_completed_binds() -> None:
    kube = FakeKube()
    kube.hold_binds = threading.Event()
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(30))  # depth 4
    try:
        wait_until(lambda: cluster.pipeline.admitted == 4 and kube.binds_waiting >= 1)
        time.sleep(0.3)  # an unbounded loop would have placed all 30 by now
        counts = cluster.snapshot_counts()
        assert counts["assumed"] == 4 and counts["in_flight_binds"] == 4
        assert counts["active"] == 26
        assert len(kube.bind_calls) == 0  # the fake records a bind once it is answered
        kube.hold_binds.set()
        wait_until(lambda: len(kube.bound) == 30)
        wait_until(lambda: cluster.scheduled == 30)  # counted once each bind's answer is handled
        time.sleep(0.2)
        assert cluster.scheduled == 30
    finally:
        kube.hold_binds.set()
        stop(cluster, source)


def test_the_loop_keeps_the_lock_for_consecutive_steps_within_its_slice() -> None:
    """Handing the lock over after every pod cost two thread switches per pod; the loop takes steps
    in one hold until its slice runs out, the work does, or it may no longer pop."""
    kube = FakeKube()
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "test.yaml", registry)
    cluster = LiveCluster(cfg, registry, kube)  # type: ignore[arg-type]
    cluster.set_leading(True)
    held: list[bool] = []

    def step(result: float) -> float:
        held.append(cluster._lock.owned())
        return result

    cluster.loop.step = lambda: step(0.0)  # type: ignore[method-assign]
    with cluster._lock:
        started = time.monotonic()
        assert cluster.loop.steps() == 0.0
    assert len(held) > 1 and all(held) and time.monotonic() - started >= LOOP_SLICE_SECONDS
    held.clear()
    cluster.loop.step = lambda: step(0.5)  # type: ignore[method-assign]  # nothing to do
    with cluster._lock:
        assert cluster.loop.steps() == 0.5
    assert held == [True]
    held.clear()
    cluster.loop.step = lambda: step(0.0)  # type: ignore[method-assign]
    cluster.set_leading(False)
    with cluster._lock:
        cluster.loop.steps()
    assert held == [True]
    cluster.stop(1)


def lock_takers(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of the threads that take any StateLock from now on."""
    takers: set[str] = set()
    acquire = StateLock.acquire

    def recorded(lock: StateLock) -> None:
        takers.add(threading.current_thread().name)
        acquire(lock)

    monkeypatch.setattr(StateLock, "acquire", recorded)
    return takers


def test_a_bind_sent_apart_from_its_cycle_never_waits_for_the_state_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop checks each decision and a worker sends its bind without the state lock, the rest
    of the cycle going back to the loop: no binding worker takes the lock (each wait for it cost
    a thread switch for the worker and one for the loop)."""
    takers = lock_takers(monkeypatch)
    kube = FakeKube()
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(30))
    try:
        wait_until(lambda: cluster.scheduled == 30)
        wait_until(lambda: len(kube.events) == 30)
        assert len(kube.bound) == 30 and cluster.snapshot_counts()["in_flight_binds"] == 0
        assert {e["reason"] for e in kube.events} == {"Scheduled"}
        assert "scheduling-loop" in takers
        assert not [name for name in takers if name.startswith("bind-")]
    finally:
        stop(cluster, source)


def test_binds_of_cycles_admitted_together_go_out_pipelined_in_batches() -> None:
    """While a batch of binds is on the wire the loop places more pods; their binds go out together
    in the next batch, one request per pod still, each answered and finished on its own."""
    kube = FakeKube()
    kube.hold_binds = threading.Event()
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(30))  # depth 4
    try:
        wait_until(lambda: cluster.pipeline.admitted == 4 and kube.binds_waiting >= 1)
        kube.hold_binds.set()
        wait_until(lambda: cluster.scheduled == 30)
        wait_until(lambda: len(kube.events) == 30)
        assert sorted(kube.bound) == sorted(f"default/p{i:02d}" for i in range(30))
        assert len(kube.bind_calls) == 30 and sum(kube.bind_batches) == 30
        assert max(kube.bind_batches) > 1  # those queued behind the first batch went together
        assert {e["reason"] for e in kube.events} == {"Scheduled"}
        assert cluster.snapshot_counts()["assumed"] + cluster.scheduler.cache.pod_count >= 30
    finally:
        stop(cluster, source)


def test_a_batch_refused_at_the_gate_is_abandoned_and_requeued_without_failures() -> None:
    """The gate shuts between the loop's last look and the batch's send: every cycle of the batch
    is abandoned (undone, requeued, no FailedScheduling), none is bound."""
    kube = FakeKube()
    fenced: list[str] = []
    cluster, source = build(
        kube, [node_json("n1", cpu="64")], many_pods(3), fence=lambda: fenced[0] if fenced else None
    )
    sending = cluster.pipeline.sending

    def shut_first(requests: int = 1) -> AbstractContextManager[None]:
        fenced.append("lease not renewed")  # closes just before the send
        return sending(requests)

    cluster.pipeline.sending = shut_first  # type: ignore[method-assign]
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    cluster.wait_for_sync(5)
    cluster.start_loop()
    try:
        cluster.set_leading(True)
        wait_until(lambda: cluster.abandoned >= 1)
        wait_until(lambda: cluster.pipeline.admitted == 0)
        time.sleep(0.2)
        assert kube.bind_calls == [] and cluster.scheduled == 0
        assert cluster.snapshot_counts()["assumed"] == 0
        assert not [e for e in kube.events if e["reason"] == "FailedScheduling"]
        assert not kube.patches  # no PodScheduled=False either
        fenced.clear()
        cluster.pipeline.sending = sending  # type: ignore[method-assign]
        cluster._wake.set()
        wait_until(lambda: len(kube.bound) == 3)
    finally:
        stop(cluster, source)


def test_a_cycle_whose_token_is_not_there_yet_runs_whole_on_its_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the burst the bind must wait for the rate limiter: the loop does not wait, the worker
    does, and then runs the whole cycle under the lock (its checks after the wait)."""
    takers = lock_takers(monkeypatch)
    kube = FakeKube()
    kube.limiter = TokenBucket(qps=20, burst=1)
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(6))
    try:
        wait_until(lambda: cluster.scheduled == 6)
        assert len(kube.bound) == 6
        assert [name for name in takers if name.startswith("bind-")]
    finally:
        stop(cluster, source)


def test_losing_leadership_sends_no_bind_beyond_those_on_the_wire() -> None:
    kube = FakeKube()
    kube.hold_binds = threading.Event()
    metrics = SchedulerMetrics()
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(30), metrics)
    try:
        wait_until(lambda: cluster.pipeline.admitted == 4 and kube.binds_waiting >= 1)
        on_wire = kube.binds_waiting  # the first batch; the others wait for the next one
        cluster.set_leading(False)
        kube.hold_binds.set()
        wait_until(lambda: cluster.pipeline.admitted == 0)
        time.sleep(0.3)
        assert len(kube.bound) == on_wire  # those already on the wire, and not one more
        counts = cluster.snapshot_counts()
        assert counts["active"] == 30 - on_wire  # the rest wait, unbound, for the next leader
        assert counts["assumed"] == on_wire  # the bound ones, until their watch events confirm them
        assert cluster.scheduled == on_wire and cluster.abandoned == 4 - on_wire
    finally:
        kube.hold_binds.set()
        stop(cluster, source)


def test_stop_drops_queued_binds_and_returns_within_its_bound() -> None:
    kube = FakeKube()
    kube.hold_binds = threading.Event()
    cluster, source = start(kube, [node_json("n1", cpu="64")], many_pods(30))
    try:
        wait_until(lambda: cluster.pipeline.admitted == 4 and kube.binds_waiting >= 1)
        on_wire = kube.binds_waiting  # the first batch; the others wait for the next one
        threading.Timer(0.2, kube.hold_binds.set).start()  # the requests on the wire answer soon
        for s in source.sources.values():
            s.release.set()
        started = time.monotonic()
        cluster.stop(1.0)
        # Its 1 s, and room for a loaded machine's thread switches (0.5 s was not: CI runs the
        # control planes beside it); the binds it must not send are counted below.
        assert time.monotonic() - started < 3.0
        assert len(kube.bound) == on_wire
        assert cluster.pipeline.admitted == 0
        # Those queued for the next batch are refused at the gate; nothing else had been admitted:
        # the loop waited for room.
        assert cluster.abandoned == 4 - on_wire
    finally:
        kube.hold_binds.set()


def test_a_fence_that_runs_out_stops_popping_and_binding() -> None:
    kube = FakeKube()
    fenced: list[str] = []
    cluster, source = build(
        kube, [node_json("n1", cpu="64")], many_pods(5), fence=lambda: fenced[0] if fenced else None
    )
    fenced.append("lease not renewed for 10.2 s")
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    cluster.wait_for_sync(5)
    cluster.start_loop()
    try:
        cluster.set_leading(True)
        time.sleep(0.3)
        assert kube.bind_calls == [] and cluster.snapshot_counts()["assumed"] == 0
        fenced.clear()
        cluster._wake.set()
        wait_until(lambda: len(kube.bound) == 5)
    finally:
        stop(cluster, source)


# --------------------------------------------------------------------------- the lock


def test_state_lock_hands_over_in_arrival_order() -> None:
    lock = StateLock()
    order: list[int] = []
    lock.acquire()
    threads = []
    for i in range(5):

        def take(i: int = i) -> None:
            with lock:
                order.append(i)

        t = threading.Thread(target=take)
        t.start()
        threads.append(t)
        while len(lock._waiters) < i + 1:  # make arrival order deterministic
            time.sleep(0.001)
    lock.release()
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]


def test_state_lock_released_steps_out_only_for_its_owner() -> None:
    lock = StateLock()
    assert not lock.owned()
    with lock.released():  # not held: nothing to release
        pass
    with lock:
        assert lock.owned()
        with lock.released():
            assert not lock.owned()
            got = threading.Event()

            def take() -> None:
                with lock:
                    got.set()

            t = threading.Thread(target=take)
            t.start()
            assert got.wait(2)  # another thread can take it meanwhile
            t.join()
        assert lock.owned()


def test_releasing_a_lock_held_by_another_thread_is_an_error() -> None:
    lock = StateLock()
    lock.acquire()
    err: list[Exception] = []

    def other() -> None:
        try:
            lock.release()
        except RuntimeError as exc:
            err.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert err and lock.owned()
    lock.release()


@pytest.fixture(autouse=True)
def _no_thread_leaks() -> Iterator[None]:
    before = {t.name for t in threading.enumerate()}
    yield
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        extra = {t.name for t in threading.enumerate() if t.name.startswith("scheduling-loop")} - before
        if not extra:
            return
        time.sleep(0.05)
    raise AssertionError(f"threads left running: {extra}")


def test_informer_changes_go_to_the_loop_in_order_and_back_to_the_informers_once_it_ends() -> None:
    kube = FakeKube()
    cluster, source = start(kube, [node_json("n1")], [])
    applied: list[tuple[int, str, bool]] = []

    def change(n: int) -> Callable[[], None]:
        return lambda: applied.append((n, threading.current_thread().name, cluster._lock.owned()))

    try:
        informer = threading.Thread(target=lambda: [cluster._dispatch(change(n)) for n in range(50)])
        informer.start()
        informer.join(5)
        wait_until(lambda: len(applied) == 50)
        assert [n for n, _, _ in applied] == list(range(50))
        assert {(name, owned) for _, name, owned in applied} == {("scheduling-loop", True)}
    finally:
        stop(cluster, source)
    cluster._dispatch(change(50))  # the loop has ended: applied at once, under the lock, here
    assert applied[-1] == (50, threading.current_thread().name, True)


def test_a_standby_keeps_the_next_cycles_node_table_built() -> None:
    """Not leading, the loop builds the node table from the informers' cache (every housekeeping
    period), so the first cycle after a takeover does not build it for every node; it binds nothing."""
    kube = FakeKube()
    registry = default_registry(entry_points=False)
    source = PerKind(
        {
            "Node": ScriptedListWatch([[list_page([node_json("n1"), node_json("n2")], rv="10")]], []),
            "Pod": ScriptedListWatch([[list_page([pod_json("a", scheduler="kubesched")], rv="10")]], []),
        }
    )
    cluster = LiveCluster(
        decode_config(CONFIG, "test.yaml", registry),
        registry,
        kube,  # type: ignore[arg-type]
        metrics=SchedulerMetrics(),
        options=LiveOptions(bind_depth=4),
        source=source,
    )
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    assert cluster.wait_for_sync(5)
    cache = cluster.scheduler.cache
    assert cache._table is None  # nothing has asked for it yet
    cluster.start_loop()
    try:
        wait_until(lambda: cache._table is not None, timeout=5)
        assert sorted(cache._table.names) == ["n1", "n2"]  # type: ignore[union-attr]
        assert not kube.bind_calls
    finally:
        stop(cluster, source)
