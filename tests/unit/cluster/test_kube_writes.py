"""What the live port writes: Event bodies (note truncation, series), status patches, Bindings."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest
from kube_fakes import FakeKube, pod_json

from kubesched.api.objects import Pod
from kubesched.cluster.kube.binder import BindConflict, Binder, binding_body
from kubesched.cluster.kube.client import ApiError
from kubesched.cluster.kube.events import (
    BATCH,
    SENDERS,
    EventRecorder,
    event_body,
    micro_time,
    truncate_note,
)
from kubesched.cluster.kube.status import PodStatusWriter, pod_scheduled_patch
from kubesched.cluster.kube.workers import RETRY_DELAYS, AsyncCalls, passing


def pod(**kwargs: Any) -> Pod:
    doc = pod_json("web-1", **kwargs)
    return msgspec.convert(doc, Pod)


class InlineCalls:
    """AsyncCalls stand-in that runs each call, and each retry, at once."""

    def __init__(self) -> None:
        self.count = 0
        self.delays: list[float] = []  # the pauses retries asked for

    def submit(self, call: Any) -> bool:
        self.count += 1
        call()
        return True

    def submit_later(self, call: Any, delay: float) -> bool:
        self.delays.append(delay)
        call()
        return True


def record_scheduled(rec: EventRecorder, name: str = "web-1") -> None:
    rec.record(pod_of(name), type="Normal", reason="Scheduled", action="Binding",
               note=f"Successfully assigned default/{name} to n1", reporter="kubesched")  # fmt: skip


def pod_of(name: str) -> Pod:
    return msgspec.convert(pod_json(name), Pod)


def wait_for(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# --------------------------------------------------------------------------- events


def test_note_is_cut_to_1024_bytes_with_an_ellipsis() -> None:
    assert truncate_note("short") == "short"
    exact = "x" * 1024
    assert truncate_note(exact) == exact
    cut = truncate_note("y" * 2000)
    assert len(cut.encode()) == 1024 and cut.endswith(" ...") and cut.startswith("y" * 1020)
    # Multi-byte characters are never split.
    wide = truncate_note("é" * 1000)
    assert wide.endswith(" ...") and len(wide.encode()) <= 1024
    wide.encode().decode()


def test_event_body_has_the_upstream_shape() -> None:
    body = event_body(
        pod(),
        type="Warning",
        reason="FailedScheduling",
        action="Scheduling",
        note="z" * 3000,
        reporter="nodelabelfilter",
        instance="nodelabelfilter-host",
        now=1_700_000_000.5,
    )
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert body["reportingController"] == "nodelabelfilter"
    assert body["reportingInstance"] == "nodelabelfilter-host"
    assert body["metadata"]["name"].startswith("web-1.") and body["metadata"]["namespace"] == "default"
    assert body["eventTime"] == "2023-11-14T22:13:20.500000Z"
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "web-1",
        "uid": "uid-default-web-1",
        "resourceVersion": "1",
    }
    assert len(body["note"].encode()) == 1024


def fail_again(rec: EventRecorder, note: str = "0/3 nodes", p: Pod | None = None) -> None:
    rec.record(p or pod(), type="Warning", reason="FailedScheduling", action="Scheduling", note=note,
               reporter="kubesched")  # fmt: skip


def test_repeats_cost_two_requests_and_the_final_count_goes_out_when_the_series_ends() -> None:
    kube = FakeKube()
    now = [1000.0]
    rec = EventRecorder(kube, InlineCalls(), hostname="h", clock=lambda: now[0])  # type: ignore[arg-type]
    for note in ("0/3 nodes", "0/3 nodes", "another note: still the same event", "0/3 nodes"):
        fail_again(rec, note)
        now[0] += 10
    # Created once, patched to count 2 at the second; the other two only counted.
    assert len(kube.events) == 1 and rec.counted == 2
    path, patch = kube.patches[-1]
    assert path.endswith(f"/events/{kube.events[0]['metadata']['name']}")
    assert patch["series"]["count"] == 2 and len(kube.patches) == 1
    rec.upkeep()  # not yet 6 minutes since the last one: nothing to write
    assert len(kube.patches) == 1
    now[0] += 360
    rec.upkeep()
    assert kube.patches[-1][1]["series"]["count"] == 4 and len(kube.patches) == 2
    assert kube.patches[-1][1]["series"]["lastObservedTime"] == micro_time(1030.0)
    fail_again(rec)  # the series ended: a new Event
    assert len(kube.events) == 2


def test_a_new_pod_version_or_another_reason_is_another_event() -> None:
    kube = FakeKube()
    rec = EventRecorder(kube, InlineCalls(), hostname="h")  # type: ignore[arg-type]
    fail_again(rec)
    fail_again(rec, p=msgspec.convert(pod_json("web-1", rv="2"), Pod))
    record_scheduled(rec)
    assert len(kube.events) == 3 and kube.patches == []


def test_long_series_are_refreshed_and_stop_writes_the_counts_left() -> None:
    kube = FakeKube()
    now = [1000.0]
    rec = EventRecorder(kube, InlineCalls(), hostname="h", clock=lambda: now[0])  # type: ignore[arg-type]
    for _ in range(200):  # one failure every 10 s for 2000 s: one series, refreshed once
        fail_again(rec)
        now[0] += 10
        rec.upkeep()
    assert len(kube.events) == 1
    assert [p["series"]["count"] for _, p in kube.patches] == [2, 180]
    rec.stop()
    assert [p["series"]["count"] for _, p in kube.patches] == [2, 180, 200]
    rec.stop()  # nothing more to write
    assert len(kube.patches) == 3


def test_a_series_whose_event_is_gone_creates_it_again_with_its_count() -> None:
    kube = FakeKube()
    rec = EventRecorder(kube, InlineCalls(), hostname="h")  # type: ignore[arg-type]
    fail_again(rec)
    kube.events.clear()  # expired on the server (event TTL)
    fail_again(rec)
    assert len(kube.events) == 1 and kube.events[0]["series"]["count"] == 2 and rec.series_updates == 1


def test_an_event_due_during_an_api_outage_is_sent_when_the_server_is_back() -> None:
    kube = FakeKube()
    kube.down.set()
    calls = AsyncCalls("events", 1)
    calls.start()
    try:
        rec = EventRecorder(kube, calls, hostname="h")  # type: ignore[arg-type]
        record_scheduled(rec)
        wait_for(lambda: calls.waiting == 1)  # failed once, waits off the workers for its retry
        assert kube.refused == 1 and kube.events == []
        kube.down.clear()
        assert calls.drain(10)
        assert [e["reason"] for e in kube.events] == ["Scheduled"] and rec.created == 1
    finally:
        calls.stop(1)


def test_a_burst_of_events_goes_out_in_pipelined_batches() -> None:
    kube = FakeKube()
    calls = AsyncCalls("events", 4)
    rec = EventRecorder(kube, calls, hostname="h")  # type: ignore[arg-type]
    for i in range(250):
        record_scheduled(rec, f"web-{i}")
    # A sender for the first Event, another each time more than a full batch per sender waits.
    assert rec.unsent == 250 and calls.pending == -(-250 // BATCH) < SENDERS
    calls.start()
    try:
        assert calls.drain(10)
        assert len(kube.events) == 250 and rec.created == 250 and rec.unsent == 0
        assert sum(kube.batches) == 250 and max(kube.batches) <= BATCH
        assert len(kube.batches) < 200  # pipelined: fewer writes than Events
    finally:
        calls.stop(1)


def test_a_lingering_sender_sends_a_burst_in_one_batch() -> None:
    kube = FakeKube()
    calls = AsyncCalls("events", 4)
    calls.start()
    try:
        rec = EventRecorder(kube, calls, hostname="h", linger=0.5)  # type: ignore[arg-type]
        for i in range(BATCH - 1):
            record_scheduled(rec, f"web-{i}")
        assert calls.drain(10)
        assert kube.batches == [BATCH - 1] and rec.created == BATCH - 1
    finally:
        calls.stop(1)


def test_a_retried_event_whose_first_answer_was_lost_is_not_created_twice() -> None:
    kube = FakeKube()
    kube.lose_answers = 1  # the create lands, its answer does not: the retry gets AlreadyExists
    calls = InlineCalls()
    rec = EventRecorder(kube, calls, hostname="h")  # type: ignore[arg-type]
    record_scheduled(rec)
    assert len(kube.events) == 1 and rec.created == 1 and calls.delays == [RETRY_DELAYS[0]]


def test_event_retries_are_bounded_and_only_for_passing_failures() -> None:
    kube = FakeKube()
    kube.down.set()
    calls = InlineCalls()
    record_scheduled(EventRecorder(kube, calls, hostname="h"))  # type: ignore[arg-type]
    assert calls.delays == list(RETRY_DELAYS) and kube.refused == len(RETRY_DELAYS) + 1
    assert passing(ApiError(0, "ConnectError", "refused")) and passing(ApiError(503, "", "unavailable"))
    assert passing(ApiError(429, "TooManyRequests", "slow down"))
    assert not passing(ApiError(403, "Forbidden", "no")) and not passing(ApiError(422, "Invalid", "bad"))


def test_micro_time_format() -> None:
    assert micro_time(0.25) == "1970-01-01T00:00:00.250000Z"


# --------------------------------------------------------------------------- status


def test_condition_patch_carries_reason_full_message_and_uid() -> None:
    patch = pod_scheduled_patch(
        pod(), reason="Unschedulable", message="m" * 5000, nominated_node_name=None, now=0.0
    )
    assert patch is not None
    assert patch["metadata"] == {"uid": "uid-default-web-1"}
    (cond,) = patch["status"]["conditions"]
    assert cond["type"] == "PodScheduled" and cond["status"] == "False"
    assert cond["reason"] == "Unschedulable" and len(cond["message"]) == 5000  # never truncated
    assert cond["lastTransitionTime"] == "1970-01-01T00:00:00Z"
    assert "nominatedNodeName" not in patch["status"]


def test_unchanged_condition_is_not_patched_again_and_a_nomination_is() -> None:
    doc = pod_json("web-1")
    doc["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "full"}
    ]
    current = msgspec.convert(doc, Pod)
    same = pod_scheduled_patch(
        current, reason="Unschedulable", message="full", nominated_node_name=None, now=5
    )
    assert same is None
    nominated = pod_scheduled_patch(
        current, reason="Unschedulable", message="full", nominated_node_name="n2", now=5
    )
    assert nominated == {"metadata": {"uid": "uid-default-web-1"}, "status": {"nominatedNodeName": "n2"}}
    changed = pod_scheduled_patch(
        current, reason="Unschedulable", message="new", nominated_node_name=None, now=5
    )
    assert changed is not None
    assert "lastTransitionTime" not in changed["status"]["conditions"][0]  # status did not flip


def test_empty_nomination_clears_it() -> None:
    doc = pod_json("web-1")
    doc["status"]["nominatedNodeName"] = "n1"
    patch = pod_scheduled_patch(
        msgspec.convert(doc, Pod), reason="Unschedulable", message="m", nominated_node_name="", now=0
    )
    assert patch is not None and patch["status"]["nominatedNodeName"] is None


def test_status_writer_patches_the_status_subresource_and_evicts_with_a_uid_precondition() -> None:
    kube = FakeKube()
    writer = PodStatusWriter(kube, InlineCalls(), clock=lambda: 0.0)  # type: ignore[arg-type]
    writer.set_pod_scheduled_condition(
        pod(), reason="SchedulerError", message="boom", nominated_node_name=None
    )
    writer.delete_pod(pod(), reason="PreemptionByScheduler", message="kubesched: preempting")
    paths = [p for p, _ in kube.patches]
    assert paths == ["/api/v1/namespaces/default/pods/web-1/status"] * 2
    assert kube.patches[1][1]["status"]["conditions"][0]["type"] == "DisruptionTarget"
    assert kube.deleted == ["/api/v1/namespaces/default/pods/web-1"]


def test_status_writer_retries_transient_errors_but_not_a_missing_pod() -> None:
    calls: list[int] = []
    inline = InlineCalls()

    class Flaky(FakeKube):
        def patch(self, path: str, obj: Any, *, content_type: str = "") -> Any:
            calls.append(1)
            if len(calls) < 3:
                raise ApiError(0, "ReadTimeout", "timed out")
            return super().patch(path, obj)

    writer = PodStatusWriter(Flaky(), inline)  # type: ignore[arg-type]
    writer.set_nominated_node_name(pod(), "n1")
    assert len(calls) == 3 and inline.delays == list(RETRY_DELAYS[:2])

    class Gone(FakeKube):
        def patch(self, path: str, obj: Any, *, content_type: str = "") -> Any:
            calls.append(1)
            raise ApiError(404, "NotFound", "pods web-1 not found")

    calls.clear()
    PodStatusWriter(Gone(), InlineCalls()).set_nominated_node_name(pod(), "n1")  # type: ignore[arg-type]
    assert len(calls) == 1


class NoCalls:
    """AsyncCalls that must not be used: the write has to go out on the caller's thread."""

    def submit(self, call: Any) -> bool:
        raise AssertionError("submitted to the workers")

    def submit_later(self, call: Any, delay: float) -> bool:
        raise AssertionError("submitted to the workers")


def test_binding_expectation_is_patched_before_returning_and_never_raises() -> None:
    """The nomination must reach the API server before the bind that follows (a late patch would
    set it again on the bound pod); it is only a hint, so a failure does not stop the binding."""
    kube = FakeKube()
    p = pod()
    PodStatusWriter(kube, NoCalls()).expect_binding(p, "n1")  # type: ignore[arg-type]
    assert kube.patches == [
        (
            "/api/v1/namespaces/default/pods/web-1/status",
            {"status": {"nominatedNodeName": "n1"}, "metadata": {"uid": p.metadata.uid}},
        )
    ]

    class Refusing(FakeKube):
        def patch(self, path: str, obj: Any, *, content_type: str = "") -> Any:
            raise ApiError(409, "Conflict", "uid precondition failed")

    class Unreachable(FakeKube):
        def patch(self, path: str, obj: Any, *, content_type: str = "") -> Any:
            raise ConnectionRefusedError("connection refused")

    for client in (Refusing(), Unreachable()):
        PodStatusWriter(client, NoCalls()).expect_binding(p, "n1")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- binder


def test_binding_body_names_the_pod_uid_and_target_node() -> None:
    assert binding_body(pod(), "n7") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "uid-default-web-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n7"},
    }


def test_a_409_already_assigned_is_a_final_conflict_naming_the_node() -> None:
    kube = FakeKube()
    binder = Binder(kube)  # type: ignore[arg-type]
    binder.bind(pod(), "n1")
    with pytest.raises(BindConflict) as info:
        binder.bind(pod(), "n2")
    assert info.value.node == "n1" and info.value.code == 409
    assert kube.bind_calls == [("default/web-1", "n1"), ("default/web-1", "n2")]  # no retry


def test_other_bind_failures_propagate_unchanged() -> None:
    kube = FakeKube()
    kube.fail_binds_with = ApiError(0, "ConnectError", "connection refused")
    with pytest.raises(ApiError) as info:
        Binder(kube).bind(pod(), "n1")  # type: ignore[arg-type]
    assert not isinstance(info.value, BindConflict) and info.value.is_transport


@pytest.mark.parametrize(
    ("fail", "expected", "deleted"),
    [
        pytest.param(None, True, 1, id="evicted"),
        pytest.param(("patch", 404), False, 0, id="gone-before-the-condition"),
        pytest.param(("delete", 404), False, 1, id="gone-before-the-deletion"),
        pytest.param(("delete", 409), False, 1, id="replaced-uid-precondition"),
        pytest.param(("patch", 422), "raise", 0, id="invalid-condition-stops"),
        pytest.param(("delete", 500), "raise", 1, id="server-error-stops"),
    ],
)
def test_evict_now_is_synchronous_and_tells_gone_from_failed(
    fail: tuple[str, int] | None, expected: bool | str, deleted: int
) -> None:
    """Async preemption's eviction (upstream's PreemptPod): DisruptionTarget then deletion, on the
    caller's thread; a victim already gone is not an error, anything else is raised."""

    class Kube(FakeKube):
        def patch(self, path: str, obj: Any, *, content_type: str = "") -> Any:
            super().patch(path, obj)
            if fail is not None and fail[0] == "patch":
                raise ApiError(fail[1], "Failure", "refused")
            return None

        def delete(self, path: str, obj: Any = None) -> Any:
            super().delete(path, obj)
            if fail is not None and fail[0] == "delete":
                raise ApiError(fail[1], "Failure", "refused")
            return None

    kube = Kube()
    writer = PodStatusWriter(kube, NoCalls(), clock=lambda: 0.0)  # type: ignore[arg-type]
    victim = pod(uid="u-1")
    if expected == "raise":
        with pytest.raises(ApiError):
            writer.evict_now(victim, reason="PreemptionByScheduler", message="kubesched: preempting")
    else:
        assert (
            writer.evict_now(victim, reason="PreemptionByScheduler", message="kubesched: preempting")
            is expected
        )
    condition = kube.patches[0][1]["status"]["conditions"][0]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        "DisruptionTarget", "PreemptionByScheduler", "kubesched: preempting"
    )  # fmt: skip
    assert kube.deleted == ["/api/v1/namespaces/default/pods/web-1"] * deleted


def test_a_pod_group_condition_is_a_uid_guarded_patch_of_its_status() -> None:
    from kubesched.api.meta import ObjectMeta
    from kubesched.api.resource import Condition
    from kubesched.api.scheduling_groups import PodGroup

    kube = FakeKube()
    writer = PodStatusWriter(kube, InlineCalls(), clock=lambda: 0.0)  # type: ignore[arg-type]
    group = PodGroup(metadata=ObjectMeta(name="g1", namespace="ml", uid="u-1"))
    condition = Condition(
        type="PodGroupInitiallyScheduled",
        status="False",
        reason="Unschedulable",
        message="minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
        last_transition_time="2026-01-01T00:00:00Z",
        observed_generation=1,
    )
    writer.set_pod_group_condition(group, condition)
    ((path, body),) = kube.patches
    assert path == "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/g1/status"
    assert body == {
        "metadata": {"uid": "u-1"},
        "status": {
            "conditions": [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ]
        },
    }


def test_a_pod_group_condition_without_a_message_clears_the_one_an_earlier_cycle_wrote() -> None:
    """Merged by type on the server, a patch that left the empty message out would keep the failed
    cycle's text under the new True condition (seen live, DRA group set seed 70)."""
    from kubesched.api.meta import ObjectMeta
    from kubesched.api.resource import Condition
    from kubesched.api.scheduling_groups import PodGroup

    kube = FakeKube()
    writer = PodStatusWriter(kube, InlineCalls(), clock=lambda: 0.0)  # type: ignore[arg-type]
    group = PodGroup(metadata=ObjectMeta(name="g1", namespace="ml", uid="u-1"))
    scheduled = Condition(type="PodGroupInitiallyScheduled", status="True", reason="Scheduled")
    writer.set_pod_group_condition(group, scheduled)
    ((_, body),) = kube.patches
    assert body["status"]["conditions"] == [
        {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": ""}
    ]
