"""What the differential harness waits for before it reads an outcome the schedulers write in the
background: the Event of a pod's last attempt, a deleted pod leaving the binary's cache, and
`kubesched run` started again when the port it was given was taken meanwhile."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kubesched.framework.types import truncate_note
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.differential import cluster, live, upstream, waves
from kubesched.harness.differential.cluster import ScenarioOnCluster
from kubesched.harness.differential.group_scenario import Wave
from kubesched.harness.differential.upstream import UpstreamHarness, UpstreamTimeout, _Log
from kubesched.harness.fake_nodes import ApiClient

UID = "u-1"


class FakeApi:
    """The pod's condition and its FailedScheduling Events as the API server would list them; each
    list of the Events after the `late`-th shows `later` too (an Event written late)."""

    def __init__(self, condition: str, events: list[str], later: list[str], late: int) -> None:
        self.condition = condition
        self.events = events
        self.later = later
        self.late = late
        self.lists = 0

    def get(self, path: str) -> dict[str, Any]:
        cond = {"type": "PodScheduled", "reason": "Unschedulable", "message": self.condition}
        return {"spec": {}, "status": {"conditions": [cond]}}

    def list_all(self, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        self.lists += 1
        notes = self.events + (self.later if self.lists > self.late else [])
        return [
            {
                "note": note,
                "eventTime": f"2026-12-05T16:00:0{i}.000000Z",
                "metadata": {},
                "regarding": {"uid": UID},
            }
            for i, note in enumerate(notes)
        ]


def harness(api: FakeApi) -> ScenarioOnCluster:
    return ScenarioOnCluster(cast(ApiClient, api))


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "POLL_SECONDS", 0.001)
    monkeypatch.setattr(cluster, "PREEMPTING_EVENT_WAIT", 2.0)


def test_the_event_of_the_attempt_the_condition_shows_is_waited_for() -> None:
    """Tried twice: the condition shows the second attempt before its Event is written."""
    api = FakeApi("0/3 nodes: second", ["0/3 nodes: first"], ["0/3 nodes: second"], late=3)
    messages = harness(api)._last_attempt_event("ns", "p", UID, ["0/3 nodes: first"])
    assert messages == ["0/3 nodes: first", "0/3 nodes: second"]
    assert api.lists == 4


def test_a_long_message_is_matched_by_its_truncated_note() -> None:
    long = "0/3 nodes are available: " + "x" * 2000
    api = FakeApi(long, [truncate_note(long)], [], late=0)
    assert harness(api)._last_attempt_event("ns", "p", UID, [truncate_note(long)]) == [truncate_note(long)]
    assert api.lists == 0  # agreed at once: nothing listed again


def test_notes_that_never_match_are_returned_as_they_are_after_the_wait() -> None:
    api = FakeApi("0/3 nodes: what the condition says", ["0/3 nodes: other"], [], late=0)
    assert harness(api)._last_attempt_event("ns", "p", UID, ["0/3 nodes: other"]) == ["0/3 nodes: other"]
    assert api.lists > 1


def upstream_with_log(tmp_path: Path, lines: list[str]) -> tuple[UpstreamHarness, Path]:
    path = tmp_path / "kube-scheduler.log"
    path.write_text("".join(f"{line}\n" for line in lines))
    h = UpstreamHarness.__new__(UpstreamHarness)
    h.log = _Log(path)
    h.log.read()
    h._seen = {msg: {"default/p": h.log.count(msg, "default/p")} for msg in _DELETES}
    return h, path


_DELETES = ("Delete event for unscheduled pod", "Delete event for scheduled pod")


def line(msg: str) -> str:
    return f'I1205 16:00:00.000000   10986 eventhandlers.go:1] "{msg}" pod="default/p"'


@pytest.mark.parametrize("msg", _DELETES)
def test_a_deleted_pod_is_gone_whether_it_was_bound_meanwhile_or_not(tmp_path: Path, msg: str) -> None:
    """A preemptor taken as stalled may be bound before the harness deletes it: the binary then
    logs the deletion of a scheduled pod, which must end the wait as the other line does."""
    h, path = upstream_with_log(tmp_path, [line(msg)])  # an earlier scenario's pod of that name

    def later() -> None:
        with path.open("a") as f:
            f.write(line(msg) + "\n")

    timer = threading.Timer(0.2, later)
    timer.start()
    try:
        h._wait_unscheduled_pod_gone("default/p")
    finally:
        timer.cancel()
    assert sum(h.log.count(m, "default/p") for m in _DELETES) == 2


def test_an_old_deletion_line_does_not_end_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream, "wait_until", partial(cluster.wait_until, timeout=0.3))
    h, _ = upstream_with_log(tmp_path, [line(_DELETES[1])])
    with pytest.raises(UpstreamTimeout, match="deletion of default/p"):
        h._wait_unscheduled_pod_gone("default/p")


class WaveApi:
    """One unbound pod of a wave, its condition, and the FailedScheduling notes written so far."""

    def __init__(self, condition: str, notes: list[str]) -> None:
        self.condition = condition
        self.notes = notes

    def list_all(self, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        if path.endswith("/pods"):
            cond = {"type": "PodScheduled", "reason": "Unschedulable", "message": self.condition}
            return [{"metadata": {"name": "p"}, "spec": {}, "status": {"conditions": [cond]}}]
        return [
            {
                "note": n,
                "eventTime": f"2026-12-05T16:00:0{i}Z",
                "metadata": {},
                "regarding": {"name": "p", "uid": UID},
            }
            for i, n in enumerate(self.notes)
        ]


def test_a_wave_is_not_final_before_the_event_of_the_attempt_its_condition_shows() -> None:
    first, second = "0/3 nodes: first attempt", "0/3 nodes: second attempt"
    api = WaveApi(second, [first])
    _, final = waves._observe(cast(ApiClient, api), Wave(), {"p": UID})
    assert not final
    api.notes.append(second)
    (_, messages, _), final = waves._observe(cast(ApiClient, api), Wave(), {"p": UID})
    assert final and messages == {"p": [first, second]}


def test_a_pod_bound_after_a_failed_attempt_waits_for_that_attempts_event() -> None:
    """Binding turns the condition True: the failure seen in an earlier look is still waited for."""
    api = WaveApi("0/3 nodes: first attempt", [])
    expected: dict[str, set[str]] = {}
    _, final = waves._observe(cast(ApiClient, api), Wave(), {"p": UID}, expected)
    assert not final
    bound = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {}}
    api.list_all = lambda path, params=None: [bound] if path.endswith("/pods") else []  # type: ignore[method-assign]
    _, final = waves._observe(cast(ApiClient, api), Wave(), {"p": UID}, expected)
    assert not final
    _, final = waves._observe(cast(ApiClient, api), Wave(), {"p": UID})  # with nothing seen before
    assert final


class FakeRun:
    """`kubesched run` as ManagedProcess starts it: the first finds its port taken and exits."""

    started: list[list[str]] = []

    def __init__(self, name: str, args: list[str], log_path: Path, *, port: int) -> None:
        self.taken = not FakeRun.started
        FakeRun.started.append(args)

    def alive(self) -> bool:
        return not self.taken

    def log_tail(self) -> str:
        return "kubesched: --insecure-listen: cannot serve on ... (address in use or not available)"

    def stop(self) -> None:
        pass


def test_kubesched_run_is_started_again_on_another_port_when_its_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "ManagedProcess", FakeRun)
    monkeypatch.setattr(live, "http_get", lambda url, context: (200, "ok"))
    FakeRun.started = []
    plane = SimpleNamespace(kubeconfig_path=tmp_path / "kubeconfig")
    h = live.KubeschedLive(cast(ControlPlane, plane), cast(ApiClient, None), tmp_path)
    assert len(FakeRun.started) == 2
    ports = [args[args.index("--insecure-listen") + 1] for args in FakeRun.started]
    assert ports[1] == f"127.0.0.1:{h.port}"
