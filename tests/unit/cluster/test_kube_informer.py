"""Informer: list then watch, bookmarks, resume, relist on 410 Gone, reconnect backoff, decode errors.

Driven by scripted wire bytes (kube_fakes.ScriptedListWatch); each test runs the informer loop on a
thread and stops it once the script is used up.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec
import pytest
from kube_fakes import (
    ScriptedListWatch,
    bookmark,
    event_line,
    gone,
    list_page,
    pod_json,
)

from kubesched.api.objects import Pod
from kubesched.cluster.kube.client import ApiError
from kubesched.cluster.kube.informer import KINDS, Backoff, Informer, ObjectDecoder, object_key

PODS = KINDS["Pod"]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_add(self, obj: Any) -> None:
        self.calls.append(("add", f"{object_key(obj)}@{obj.metadata.resource_version}"))

    def on_update(self, old: Any, new: Any) -> None:
        self.calls.append(("update", f"{object_key(new)}@{new.metadata.resource_version}"))

    def on_delete(self, obj: Any) -> None:
        self.calls.append(("delete", f"{object_key(obj)}@{obj.metadata.resource_version}"))


def run_until_idle(informer: Informer, source: ScriptedListWatch) -> None:
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    assert source.idle.wait(5), "the informer never reached the end of its script"
    informer.stop()
    source.release.set()
    thread.join(5)
    assert not thread.is_alive()


def make(source: ScriptedListWatch, **kwargs: Any) -> tuple[Informer, Recorder]:
    rec = Recorder()
    sleeps: list[float] = []

    def fake_sleep(seconds: float) -> bool:
        sleeps.append(seconds)
        return False

    informer = Informer(PODS, source, rec, sleep=fake_sleep, **kwargs)
    informer.sleeps = sleeps  # type: ignore[attr-defined]
    return informer, rec


def test_list_then_watch_delivers_adds_updates_deletes_and_resumes_from_the_last_version() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([pod_json("a", rv="10")], rv="10")]],
        watches=[
            [
                event_line("ADDED", pod_json("b", rv="11")),
                event_line("MODIFIED", pod_json("a", rv="12")),
                event_line("DELETED", pod_json("b", rv="13")),
            ],
        ],
    )
    informer, rec = make(source)
    run_until_idle(informer, source)
    assert rec.calls == [
        ("add", "default/a@10"),
        ("add", "default/b@11"),
        ("update", "default/a@12"),
        ("delete", "default/b@13"),
    ]
    # First watch from the list's version, the next (after the server closed it) from the last event.
    assert source.watch_calls == ["10", "13"]
    assert informer.has_synced
    assert [p.metadata.name for p in informer.objects()] == ["a"]
    assert isinstance(informer.get("default/a"), Pod)


def test_paginated_list_follows_continue_tokens() -> None:
    source = ScriptedListWatch(
        lists=[
            [
                list_page([pod_json("a")], rv="", cont="1"),
                list_page([pod_json("b")], rv="7"),
            ]
        ],
        watches=[],
    )
    informer, rec = make(source)
    run_until_idle(informer, source)
    assert source.list_calls == ["", "1"]
    assert [c[1] for c in rec.calls] == ["default/a@1", "default/b@1"]
    assert source.watch_calls == ["7"]


def test_bookmark_moves_the_resume_version_without_delivering_anything() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([], rv="5")]],
        watches=[[bookmark("42")]],
    )
    informer, rec = make(source)
    run_until_idle(informer, source)
    assert rec.calls == []
    assert source.watch_calls == ["5", "42"]
    assert informer.resource_version == "42"


def test_watch_error_410_relists_and_synthesizes_deletes_for_objects_gone_meanwhile() -> None:
    source = ScriptedListWatch(
        lists=[
            [list_page([pod_json("a", rv="1"), pod_json("b", rv="1"), pod_json("c", rv="1")], rv="5")],
            # After the expiry: b changed, c was deleted and d created while we were not watching.
            [list_page([pod_json("a", rv="1"), pod_json("b", rv="8"), pod_json("d", rv="9")], rv="9")],
        ],
        watches=[[gone()]],
    )
    informer, rec = make(source)
    run_until_idle(informer, source)
    assert rec.calls[3:] == [
        ("update", "default/b@8"),
        ("add", "default/d@9"),
        ("delete", "default/c@1"),
    ]
    assert informer.relists_after_expiry == 1
    assert source.watch_calls == ["5", "9"]
    assert informer.sleeps == []  # type: ignore[attr-defined]  # a relist after 410 does not back off


def test_http_410_on_watch_open_relists_too() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([], rv="5")], [list_page([], rv="20")]],
        watches=[ApiError(410, "Expired", "too old resource version")],
    )
    informer, _ = make(source)
    run_until_idle(informer, source)
    assert len(source.list_calls) == 2 and source.watch_calls == ["5", "20"]
    # The first LIST may come from the server's watch cache; the relist reads consistently.
    assert source.list_versions == ["0", ""]


def test_recreated_object_with_the_same_name_is_a_delete_and_an_add() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([pod_json("a", rv="1", uid="u1")], rv="1")]],
        watches=[[event_line("MODIFIED", pod_json("a", rv="2", uid="u2"))]],
    )
    informer, rec = make(source)
    run_until_idle(informer, source)
    assert rec.calls == [("add", "default/a@1"), ("delete", "default/a@1"), ("add", "default/a@2")]


def test_connection_failures_back_off_exponentially_then_resume_from_the_same_version() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([], rv="5")]],
        watches=[
            ApiError(0, "ConnectError", "connection refused"),
            ApiError(0, "ConnectError", "connection refused"),
            ApiError(500, "InternalError", "etcd timeout"),
        ],
    )
    informer, _ = make(source, backoff=Backoff(initial=1.0, maximum=3.0, jitter=0.0))
    run_until_idle(informer, source)
    assert informer.sleeps == [1.0, 2.0, 3.0]  # type: ignore[attr-defined]
    assert source.watch_calls == ["5", "5", "5", "5"]
    assert len(source.list_calls) == 1


def test_watch_error_other_than_410_is_retried_without_relisting() -> None:
    source = ScriptedListWatch(
        lists=[[list_page([], rv="5")]],
        watches=[[event_line("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError",
                                      "message": "boom"})]],
    )  # fmt: skip
    informer, _ = make(source, backoff=Backoff(initial=0.5, jitter=0.0))
    run_until_idle(informer, source)
    assert len(source.list_calls) == 1 and informer.sleeps == [0.5]  # type: ignore[attr-defined]


def test_an_object_that_cannot_be_decoded_is_reported_and_skipped() -> None:
    bad = pod_json("bad", rv="3")
    bad["spec"]["containers"] = "not a list"
    errors: list[tuple[bytes, Exception]] = []
    source = ScriptedListWatch(
        lists=[[list_page([pod_json("a", rv="1"), bad], rv="3")]],
        watches=[[event_line("ADDED", bad), event_line("ADDED", pod_json("b", rv="4"))]],
    )
    informer, rec = make(source, on_decode_error=lambda raw, exc: errors.append((raw, exc)))
    run_until_idle(informer, source)
    assert [c[1] for c in rec.calls] == ["default/a@1", "default/b@4"]
    assert len(errors) == 2 and b'"bad"' in errors[0][0]
    assert "spec.containers" in str(errors[0][1])
    assert informer.decode_errors == 2


def test_dispatch_wraps_every_batch() -> None:
    batches: list[int] = []

    def dispatch(fn: Any) -> None:
        batches.append(1)
        fn()

    source = ScriptedListWatch(
        lists=[[list_page([pod_json("a"), pod_json("b")], rv="2")]],
        watches=[[event_line("ADDED", pod_json("c", rv="3"))]],
    )
    informer, rec = make(source, dispatch=dispatch)
    run_until_idle(informer, source)
    assert len(rec.calls) == 3 and len(batches) == 2  # one batch for the list, one for the event


def test_handler_exceptions_do_not_stop_the_informer() -> None:
    class Boom(Recorder):
        def on_add(self, obj: Any) -> None:
            super().on_add(obj)
            raise RuntimeError("handler bug")

    source = ScriptedListWatch(
        lists=[[list_page([pod_json("a"), pod_json("b")], rv="2")]],
        watches=[],
    )
    rec = Boom()
    informer = Informer(PODS, source, rec)
    run_until_idle(informer, source)
    assert len(rec.calls) == 2 and informer.has_synced


def test_decoder_tolerates_nulls_the_server_may_send() -> None:
    doc = pod_json("a")
    doc["metadata"]["labels"] = None
    doc["spec"]["tolerations"] = None
    pod = ObjectDecoder(Pod).decode(msgspec.json.encode(doc))
    assert pod.metadata.labels == {} and pod.spec.tolerations == []


def test_backoff_grows_to_its_cap_and_resets() -> None:
    b = Backoff(initial=0.8, maximum=30.0, jitter=0.0)
    assert [b.next() for _ in range(8)] == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])
    b.reset()
    assert b.next() == pytest.approx(0.8)


def test_resource_kind_paths() -> None:
    assert KINDS["Pod"].path == "/api/v1/pods"
    assert KINDS["ReplicaSet"].path == "/apis/apps/v1/replicasets"
    assert KINDS["CSINode"].group_version == "storage.k8s.io/v1"
    assert "status.phase!=Succeeded" in KINDS["Pod"].field_selector
