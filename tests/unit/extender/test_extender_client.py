"""kubesched calling HTTP extenders: the client's protocol semantics and the scheduler hooks.

The extenders are real HTTP servers on 127.0.0.1: a `kubesched extender` app (NodeFilterLabel +
NodeResourcesFit) and small misbehaving apps for the error paths.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np
import pytest
from extender_helpers import engine, node_json, objects, pod_json, serve_in_thread, server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kubesched.api.objects import Pod
from kubesched.config import decode_config
from kubesched.config.types import Extender, ExtenderManagedResource
from kubesched.extender.server import BackgroundServer
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeTable
from kubesched.framework.scoring import ScoreOutcome
from kubesched.framework.types import Diagnosis
from kubesched.harness.ports import free_port
from kubesched.plugins import default_registry
from kubesched.scheduler.extenders import ExtenderError, Extenders, HTTPExtender
from kubesched.simulate.snapshot.run import simulate

NODES = [node_json("n1"), node_json("n2"), node_json("hello", labels={"node": "hello"})]


def table(nodes: list[dict[str, Any]] = NODES, pods: list[dict[str, Any]] = ()) -> NodeTable:  # type: ignore[assignment]
    loaded = objects(nodes, list(pods))
    infos = [NodeInfo(n) for n in loaded.nodes]
    by_name = {i.name: i for i in infos}
    for p in loaded.pods:
        by_name[p.spec.node_name].add_pod(PodInfo(p))
    return NodeTable(infos)


def pod(name: str = "p", **kw: Any) -> Pod:
    return msgspec.convert(pod_json(name, **kw), Pod)


@pytest.fixture(scope="module")
def kubesched_extender() -> Iterator[str]:
    """`kubesched extender` serving NodeFilterLabel + NodeResourcesFit, stateless."""
    with serve_in_thread(server(engine()).app) as srv:
        yield f"http://127.0.0.1:{srv.port}"


class Recorder:
    """A scripted extender: answers each verb from `replies`, records what it was sent."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Any]] = []
        self.replies: dict[str, Any] = {}
        self.delay = 0.0
        #: Set when the test is over: a delayed answer is cut short, so teardown never waits it out.
        self.released = threading.Event()
        self.app = Starlette(routes=[Route("/{verb}", self.handle, methods=["POST"])])

    async def handle(self, request: Request) -> Response:
        import asyncio

        verb = request.path_params["verb"]
        self.requests.append((verb, await request.json()))
        if self.delay:
            deadline = time.monotonic() + self.delay
            while time.monotonic() < deadline and not self.released.is_set():
                await asyncio.sleep(0.05)
        reply = self.replies.get(verb)
        if isinstance(reply, int):
            return Response(status_code=reply)
        if isinstance(reply, bytes):
            return Response(reply, media_type="application/json")
        return JSONResponse(reply)


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder()
    with serve_in_thread(rec.app) as srv:
        yield rec, f"http://127.0.0.1:{srv.port}"
        rec.released.set()


def ext(url: str, **fields: Any) -> HTTPExtender:
    fields = {"filter_verb": "filter", "prioritize_verb": "prioritize", "weight": 1, **fields}
    cfg = Extender(url_prefix=url, **fields)
    return HTTPExtender(cfg)


# --------------------------------------------------------------------------- HTTPExtender


def test_filter_against_kubesched_extender_full_nodes(kubesched_extender: str) -> None:
    result = ext(kubesched_extender).filter(pod(), table().all())
    assert result.passed == ["n1", "n2"]
    assert result.failed_and_unresolvable == {"hello": "node(s) had label node=hello"}


def test_prioritize_against_kubesched_extender(kubesched_extender: str) -> None:
    t = table(pods=[pod_json("busy", cpu="3", node="n2")])
    scores = ext(kubesched_extender).prioritize(pod(), t.all())
    assert set(scores) == {"n1", "n2", "hello"}
    assert all(0 <= s <= 10 for s in scores.values())


def test_node_cache_capable_sends_names_only(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = {"NodeNames": ["n2"], "FailedNodes": {"n1": "no"}, "Error": ""}
    result = ext(url, node_cache_capable=True).filter(pod(), table().all())
    verb, body = rec.requests[0]
    assert verb == "filter" and body["Nodes"] is None and body["NodeNames"] == ["n1", "n2", "hello"]
    assert result.passed == ["n2"] and result.failed == {"n1": "no"}


def test_lowercase_reply_is_understood(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = (
        b'{"nodes": {"items": [{"metadata": {"name": "n1"}}]}, "failednodes": null, "error": ""}'
    )
    assert ext(url).filter(pod(), table().all()).passed == ["n1"]


def test_neither_nodes_nor_names_keeps_no_node(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = {"Nodes": None, "NodeNames": None, "Error": ""}
    assert ext(url, node_cache_capable=True).filter(pod(), table().all()).passed == []


def test_claiming_an_unknown_node_is_an_error(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = {"NodeNames": ["n9"]}
    with pytest.raises(
        ExtenderError, match='claims a filtered node "n9" which is not found in the input node list'
    ):
        ext(url, node_cache_capable=True).filter(pod(), table().all())


def test_non_200_and_error_field(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = 500
    with pytest.raises(ExtenderError, match=rf"failed filter with extender at URL {url}/filter, code 500"):
        ext(url).filter(pod(), table().all())
    rec.replies["filter"] = {"Error": "backend down"}
    with pytest.raises(ExtenderError, match="backend down"):
        ext(url).filter(pod(), table().all())


def test_http_timeout(recorder: tuple[Recorder, str]) -> None:
    """The call gives up after httpTimeout instead of waiting for the answer. The server's delay is
    what must not be waited for, so the bound is half of it: it tests the timeout, not how fast a
    loaded machine runs the call (3.2 s for 0.3 s at load 25 against a 1.5 s bound once)."""
    rec, url = recorder
    rec.delay = 60.0
    rec.replies["filter"] = {"NodeNames": []}
    extender, nodes, p = ext(url, http_timeout="300ms"), table().all(), pod()
    started = time.monotonic()
    with pytest.raises(ExtenderError, match=r"no answer within 0.3s"):
        extender.filter(p, nodes)
    assert time.monotonic() - started < rec.delay / 2


def test_url_prefix_trailing_slash_and_binding_args(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["bind"] = {"Error": ""}
    cfg = Extender(url_prefix=url + "/", bind_verb="bind")
    HTTPExtender(cfg).bind(pod("p", namespace="ns", uid="u1"), "n1")
    assert rec.requests == [("bind", {"PodName": "p", "PodNamespace": "ns", "PodUID": "u1", "Node": "n1"})]


def test_managed_resources_decide_interest() -> None:
    cfg = Extender(
        url_prefix="http://127.0.0.1:1",
        filter_verb="filter",
        managed_resources=[ExtenderManagedResource(name="example.com/gpu")],
    )
    e = HTTPExtender(cfg)
    assert not e.is_interested(pod())
    assert e.is_interested(pod(extra={"example.com/gpu": "1"}))
    limits_only = pod_json("l")
    limits_only["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {"example.com/gpu": "1"}}}]
    assert e.is_interested(msgspec.convert(limits_only, Pod))
    assert ext("http://127.0.0.1:1").is_interested(pod())  # no managedResources: every pod


def test_process_preemption_resolves_uids_and_checks_victims(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    t = table(pods=[pod_json("v1", node="n1", uid="v1"), pod_json("v2", node="n2", uid="v2")])
    e = HTTPExtender(Extender(url_prefix=url, preempt_verb="preempt", node_cache_capable=True))
    victims = {"n1": ([pod("v1", uid="v1")], 0), "n2": ([pod("v2", uid="v2")], 1)}
    rec.replies["preempt"] = {
        "NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "v2"}], "NumPDBViolations": 1}}
    }
    kept = e.process_preemption(pod(), victims, t)
    assert list(kept) == ["n2"] and [p.metadata.uid for p in kept["n2"][0]] == ["v2"] and kept["n2"][1] == 1
    assert rec.requests[0][1]["NodeNameToMetaVictims"]["n1"] == {
        "Pods": [{"UID": "v1"}],
        "NumPDBViolations": 0,
    }
    rec.replies["preempt"] = {"NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": 0}}}
    with pytest.raises(ExtenderError, match='expected at least one victim pod on node "n1"'):
        e.process_preemption(pod(), victims, t)
    rec.replies["preempt"] = {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "zz"}]}}}
    with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: zz\) on node: n1"):
        e.process_preemption(pod(), victims, t)


# --------------------------------------------------------------------------- Extenders (the hooks' logic)


def test_filters_run_in_order_and_ignorable_failures_are_skipped(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["filter"] = {"NodeNames": ["n1"], "FailedNodes": {"n2": "r1", "hello": "r2"},
                             "FailedAndUnresolvableNodes": {"hello": "never"}}  # fmt: skip
    down = f"http://127.0.0.1:{free_port()}"
    exts = Extenders([ext(down, ignorable=True), ext(url, node_cache_capable=True)])
    statuses: dict[str, Any] = {}
    diagnosis = Diagnosis()
    kept, error = exts.run_filters(pod(), table().all(), statuses, diagnosis)
    assert error is None and kept.names == ["n1"]
    assert str(statuses["n2"].code) == "Unschedulable" and statuses["n2"].plugin == "Extender"
    assert str(statuses["hello"].code) == "UnschedulableAndUnresolvable"
    assert statuses["hello"].message() == "never"  # FailedAndUnresolvableNodes wins
    assert "Extender" in diagnosis.unschedulable_plugins
    exts.close()


def test_a_down_extender_that_is_not_ignorable_fails_the_cycle() -> None:
    exts = Extenders([ext(f"http://127.0.0.1:{free_port()}")])
    _, error = exts.run_filters(pod(), table().all(), {}, Diagnosis())
    assert error is not None and str(error.code) == "Error"
    assert "filter with extender at URL" in error.message()


def test_uninterested_extender_is_not_called(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    e = ext(url, managed_resources=[ExtenderManagedResource(name="example.com/gpu")])
    kept, error = Extenders([e]).run_filters(pod(), table().all(), {}, Diagnosis())
    assert error is None and len(kept) == 3 and rec.requests == []


def test_prioritize_adds_score_times_weight_times_ten_and_ignores_errors(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    rec.replies["prioritize"] = [
        {"Host": "n1", "Score": 3},
        {"Host": "n2", "Score": 10},
        {"Host": "zz", "Score": 9},
    ]
    failing = ext(f"http://127.0.0.1:{free_port()}")
    exts = Extenders([ext(url, weight=2), failing])
    nodes = table().all()
    outcome = ScoreOutcome(nodes, np.array([5, 5, 5], dtype=np.int64))
    exts.run_prioritize(pod(), nodes, outcome)
    assert outcome.totals.tolist() == [5 + 3 * 2 * 10, 5 + 10 * 2 * 10, 5]
    assert outcome.by_plugin[f"extender:{url}"].tolist() == [60, 200, 0]
    assert f"extender:{failing.name}" not in outcome.by_plugin
    exts.close()


def test_bind_falls_through_ignorable_binder_then_skips(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["bind"] = {"Error": ""}
    bound: list[tuple[str, str]] = []
    down = HTTPExtender(
        Extender(url_prefix=f"http://127.0.0.1:{free_port()}", bind_verb="bind", ignorable=True)
    )
    up = HTTPExtender(Extender(url_prefix=url, bind_verb="bind"))
    exts = Extenders([down, up], after_bind=lambda p, n: bound.append((p.metadata.name, n)))
    assert exts.bind(pod(), "n1") is None and bound == [("p", "n1")]
    assert Extenders([down]).bind(pod(), "n1").is_skip()  # type: ignore[union-attr]
    rec.replies["bind"] = {"Error": "nope"}
    status = Extenders([up]).bind(pod(), "n1")
    assert status is not None and "nope" in status.message()


# --------------------------------------------------------------------------- simulate end to end


def _config(extenders_yaml: str) -> Any:
    text = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
extenders:
{extenders_yaml}
"""
    return decode_config(text, "sched.yaml", default_registry())


def _cluster(pods: list[dict[str, Any]]) -> Any:
    return objects([node_json("n1"), node_json("n2"), node_json("hello", labels={"node": "hello"})], pods)


def test_simulate_with_extender_filter_prioritize_and_explain(kubesched_extender: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    cfg = _config(
        f"""- urlPrefix: {kubesched_extender}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 3
- urlPrefix: {down}
  filterVerb: filter
  ignorable: true
"""
    )
    report = simulate(_cluster([pod_json(f"p{i}") for i in range(4)]), cfg, default_registry(), explain=True)
    placed = {p.name: p.node for p in report.pods}
    assert all(n in {"n1", "n2"} for n in placed.values()), placed  # never on the labelled node
    first = report.pods[0]
    for scores in first.scores.values():
        contribution = scores.plugins[f"extender:{kubesched_extender}"]
        assert contribution % 30 == 0 and 0 <= contribution <= 300


def test_simulate_failed_scheduling_message_carries_the_extender_reason(kubesched_extender: str) -> None:
    cfg = _config(f"- urlPrefix: {kubesched_extender}\n  filterVerb: filter\n")
    picky = pod_json("picky")
    picky["spec"]["nodeSelector"] = {"node": "hello"}
    report = simulate(_cluster([picky]), cfg, default_registry())
    result = report.pods[0]
    assert result.result == "Unschedulable"
    assert result.message is not None
    assert "1 node(s) had label node=hello" in result.message
    assert "2 node(s) didn't match Pod's node affinity/selector" in result.message


def test_simulate_with_a_down_extender_that_is_not_ignorable_is_an_error() -> None:
    cfg = _config(f"- urlPrefix: http://127.0.0.1:{free_port()}\n  filterVerb: filter\n")
    report = simulate(_cluster([pod_json("p")]), cfg, default_registry())
    assert report.pods[0].result == "Error"
    assert "filter with extender at URL" in (report.pods[0].message or "")


def test_simulate_binds_through_the_bind_extender(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    rec.replies["bind"] = {"Error": ""}
    cfg = _config(f"- urlPrefix: {url}\n  bindVerb: bind\n")
    report = simulate(_cluster([pod_json("p")]), cfg, default_registry())
    assert report.pods[0].result == "Scheduled"
    assert [verb for verb, _ in rec.requests] == ["bind"]
    assert rec.requests[0][1]["Node"] == report.pods[0].node


def test_background_server_serves_on_loopback() -> None:
    srv = BackgroundServer(serve_in_thread(server().app).config).start()
    try:
        assert srv.config.host == "127.0.0.1" and srv.port > 0
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5):
            pass
    finally:
        srv.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", srv.port), timeout=5):
        pass
