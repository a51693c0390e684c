"""Hostile callers: every malformed body is a one-line 400 (never a 500), and the server bounds what
it holds for callers (connections, header time, body time, request bytes in flight). The limits are
checked over real loopback sockets, since they live below the ASGI app."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from extender_helpers import engine, node_json, objects, pod_json, serve_in_thread, server
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from kubesched.extender.limits import ConnectionLimits, ConnectionSlots
from kubesched.extender.server import BackgroundServer, ExtenderServer, uvicorn_config
from kubesched.extender.state import ClusterState

VERBS = ("filter", "prioritize", "preempt", "bind")
POD = pod_json("p", cpu="1")


def client() -> TestClient:
    state = ClusterState.from_objects(objects([node_json("n1")], []))
    return TestClient(server(engine(state)).app, raise_server_exceptions=False)


def with_pod(**spec: Any) -> bytes:
    return json.dumps({"Pod": {**POD, "spec": {**POD["spec"], **spec}}, "NodeNames": ["n1"]}).encode()


MALFORMED: dict[str, tuple[bytes, str]] = {
    "deep arrays": (b'{"Pod":' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
    "deep objects": (b'{"Pod":{"metadata":{"labels":' + b'{"a":' * 3000 + b"1" + b"}" * 3003, "too deeply"),
    "deep in a raw field": (b'{"NodeNames":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    "invalid UTF-8 in a key": (b'{"P\xffod": 1}', "invalid UTF-8 at byte 3"),
    "invalid UTF-8 in an ignored value": (b'{"x": "\xc3\x28", "Pod": null}', "invalid UTF-8 at byte 7"),
    "truncated UTF-8 at the end": (b'{"x": "\xe2\x82', "invalid UTF-8"),
    "int32 out of range": (with_pod(priority=10**40), "expected int <= 2147483647"),
    "negative host port out of range": (
        with_pod(containers=[{"name": "c", "ports": [{"containerPort": 1, "hostPort": -(2**40)}]}]),
        "hostPort",
    ),
    "a quantity of 5000 digits": (
        with_pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "9" * 5000}}}]),
        "out of range",
    ),
    "an invalid quantity": (
        with_pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]),
        'Pod.spec.containers[0].resources.requests.cpu: invalid quantity "lots"',
    ),
    "a negative quantity": (
        with_pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]),
        "must be greater than or equal to 0",
    ),
    "wrong type at the top": (b"[1, 2]", "expected object, got array"),
    "wrong type of Pod": (json.dumps({"Pod": 5}).encode(), "expected object"),
    "not JSON": (b"\x00\x01garbage", "invalid JSON"),
    "empty": (b"", ""),
    "NaN": (b'{"Pod": NaN}', "invalid JSON"),
}


#: Cases about the Pod: bind reads no Pod (it answers that PodName and Node are required instead).
ABOUT_THE_POD = {
    "int32 out of range",
    "negative host port out of range",
    "a quantity of 5000 digits",
    "an invalid quantity",
    "a negative quantity",
    "wrong type of Pod",
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_every_malformed_body_is_a_one_line_400(verb: str, case: str) -> None:
    body, expected = MALFORMED[case]
    resp = client().post(f"/{verb}", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    text = resp.text.strip()
    assert "\n" not in text
    if verb == "bind" and case in ABOUT_THE_POD:
        expected = "PodName and Node are required"
    assert expected in text, text


@settings(max_examples=150)
@given(
    verb=st.sampled_from(VERBS),
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "Pod",
                        "Nodes",
                        "NodeNames",
                        "items",
                        "spec",
                        "metadata",
                        "containers",
                        "resources",
                        "requests",
                        "cpu",
                        "priority",
                        "PodName",
                        "Node",
                        "NodeNameToVictims",
                        "Pods",
                        "NumPDBViolations",
                        "name",
                    ]
                )
                | st.text(max_size=4),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    ),
)
def test_no_json_value_makes_the_server_answer_500(verb: str, value: Any) -> None:
    resp = client().post(f"/{verb}", content=json.dumps(value).encode())
    assert resp.status_code in (200, 400, 503), (resp.status_code, resp.text)
    if resp.status_code != 200:
        assert "\n" not in resp.text.strip()


@settings(max_examples=100)
@given(verb=st.sampled_from(VERBS), body=st.binary(max_size=64))
def test_no_byte_string_makes_the_server_answer_500(verb: str, body: bytes) -> None:
    resp = client().post(f"/{verb}", content=body)
    assert resp.status_code in (200, 400, 503), (resp.status_code, resp.text)


# --------------------------------------------------------------------------- limits, over sockets


@contextmanager
def serving(
    limits: ConnectionLimits | None = None, **options: Any
) -> Iterator[tuple[BackgroundServer, ExtenderServer]]:
    extender = server(engine(ClusterState.from_objects(objects([node_json("n1")], []))), **options)
    srv = BackgroundServer(uvicorn_config(extender.app, "127.0.0.1", 0, limits=limits))
    with srv:
        yield srv, extender


@contextmanager
def running(limits: ConnectionLimits | None = None, **options: Any) -> Iterator[BackgroundServer]:
    with serving(limits, **options) as (srv, _):
        yield srv


def holding(extender: ExtenderServer, n: int) -> None:
    """Wait until the server holds `n` request bytes in flight (it reads on its own thread)."""
    deadline = time.monotonic() + 30
    while extender.inflight.used != n:
        assert time.monotonic() < deadline, f"{extender.inflight.used} bytes in flight, never {n}"
        time.sleep(0.01)


def settled(srv: BackgroundServer, what: str, ready: Callable[[ConnectionSlots], bool]) -> None:
    """Wait until the server's connections are as `ready` says: it accepts and reads on its own
    thread, and a fixed pause was not enough for that on a loaded machine."""
    slots: ConnectionSlots = srv.config.http.slots  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while not ready(slots):
        assert time.monotonic() < deadline, f"the server never had {what}: {slots.total} connections"
        time.sleep(0.01)


def connect(srv: BackgroundServer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    return s


def closed_by_server(s: socket.socket, within: float) -> bool:
    """True if the server closes (or resets) the connection within `within` seconds."""
    s.settimeout(within)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def request(srv: BackgroundServer, body: bytes, path: str = "/filter") -> tuple[int, str]:
    with connect(srv) as s:
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        s.sendall(head.encode() + body)
        return parse_response(s)


def parse_response(s: socket.socket) -> tuple[int, str]:
    data = b""
    s.settimeout(10)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload.decode(errors="replace")


def connect_from(srv: BackgroundServer, source: str) -> socket.socket:
    """A connection from another loopback address: another peer, as the server sees it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((source, 0))
    s.connect(("127.0.0.1", srv.port))
    return s


def mid_request(s: socket.socket) -> socket.socket:
    """`s` with its request headers sent and its body still to come: busy, not waiting."""
    s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    return s


FILTER = json.dumps({"Pod": POD, "NodeNames": ["n1"]}).encode()


def test_idle_connections_make_room_for_a_caller_oldest_first() -> None:
    with running(ConnectionLimits(max_connections=3, max_connections_per_peer=3)) as srv:
        held = [connect(srv) for _ in range(3)]
        settled(srv, "3 waiting connections", lambda c: len(c.waiting) == 3)
        code, _ = request(srv, FILTER)  # a fourth connection: the longest-waiting one makes room
        assert code == 200
        assert closed_by_server(held[0], 10.0)
        assert not closed_by_server(held[2], 0.3)
        for s in held:
            s.close()


def test_a_caller_is_refused_only_when_every_slot_is_in_a_request() -> None:
    with running(ConnectionLimits(max_connections=3, max_connections_per_peer=3, header_timeout=30)) as srv:
        busy = [mid_request(connect(srv)) for _ in range(3)]
        settled(srv, "3 connections in a request", lambda c: c.total == 3 and not c.waiting)
        extra = connect(srv)
        assert closed_by_server(extra, 10.0)
        busy.pop().close()
        settled(srv, "2 connections", lambda c: c.total == 2)
        code, _ = request(srv, FILTER)
        assert code == 200
        for s in busy:
            s.close()


def test_one_peer_cannot_take_every_slot() -> None:
    limits = ConnectionLimits(max_connections=4, max_connections_per_peer=2, header_timeout=30)
    with running(limits) as srv:
        busy = [mid_request(connect_from(srv, "127.0.0.2")) for _ in range(2)]
        settled(srv, "2 connections in a request", lambda c: c.total == 2 and not c.waiting)
        third = connect_from(srv, "127.0.0.2")
        assert closed_by_server(third, 10.0)  # its peer holds its share, all of it in requests
        code, _ = request(srv, FILTER)  # another peer still gets served
        assert code == 200
        for s in busy:
            s.close()


def test_slow_headers_do_not_hold_a_slot_against_a_caller() -> None:
    with running(ConnectionLimits(max_connections=2, max_connections_per_peer=2, header_timeout=30)) as srv:
        slow = [connect(srv) for _ in range(2)]
        for s in slow:
            s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        settled(srv, "2 waiting connections", lambda c: len(c.waiting) == 2)
        code, _ = request(srv, FILTER)
        assert code == 200
        assert closed_by_server(slow[0], 10.0)
        for s in slow:
            s.close()


def test_more_idle_connections_than_slots_never_starve_an_authenticated_caller() -> None:
    """Issue 20's case: 200 idle connections against 128 slots made every other caller wait up to
    10 s. A caller with the token is served at once; one without it is answered 401, not hung."""
    limits = ConnectionLimits(max_connections=128, max_connections_per_peer=128, header_timeout=30)
    with running(limits, token="secret") as srv:
        idle = [connect(srv) for _ in range(200)]
        settled(srv, "200 connections accepted", lambda c: c.total == 128 and c.evicted == 72)
        started = time.monotonic()
        with connect(srv) as s:
            head = (
                f"POST /filter HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n"
                f"Content-Length: {len(FILTER)}\r\nConnection: close\r\n\r\n"
            )
            s.sendall(head.encode() + FILTER)
            code, text = parse_response(s)
        assert code == 200 and '"NodeNames":["n1"]' in text.replace(" ", "")
        # Starved, it would wait for an idle connection's 30 s header timeout; a third of that
        # tells the two apart on a loaded machine too.
        assert time.monotonic() - started < limits.header_timeout / 3
        assert request(srv, FILTER)[0] == 401
        open_idle = sum(not closed_by_server(c, 0.01) for c in idle[-100:])
        assert open_idle >= 90  # the newest idle connections keep their slots
        for c in idle:
            c.close()


def test_default_limits_follow_the_open_file_limit() -> None:
    limits = ConnectionLimits()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    expected = 4096 if soft == resource.RLIM_INFINITY else max(1, min(4096, soft // 2))
    assert limits.max_connections == expected
    assert limits.max_connections_per_peer == max(1, limits.max_connections // 4)
    assert ConnectionLimits(max_connections=10).max_connections_per_peer == 2


def test_a_client_that_never_finishes_its_headers_is_disconnected() -> None:
    with running(ConnectionLimits(header_timeout=0.5)) as srv:
        slow = connect(srv)
        slow.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\n")  # ... and nothing more
        started = time.monotonic()
        assert closed_by_server(slow, 20.0)
        # Half the default header timeout (10 s): its own 0.5 s applied, not the default.
        assert time.monotonic() - started < ConnectionLimits().header_timeout / 2
        silent = connect(srv)  # sends nothing at all
        assert closed_by_server(silent, 20.0)


def test_a_body_that_does_not_arrive_in_time_gets_408() -> None:
    with running(body_timeout=0.5) as srv, connect(srv) as s:
        s.sendall(b'POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"Pod":')
        started = time.monotonic()
        code, text = parse_response(s)
        assert code == 408 and "not received within 0.5 s" in text
        assert time.monotonic() - started < 5.0  # the default body timeout is 30 s


def test_request_bytes_in_flight_share_one_budget() -> None:
    body = json.dumps({"Pod": POD, "NodeNames": ["n1"]}).encode()
    with serving(max_inflight_bytes=2000, max_body_bytes=1500) as (srv, extender):
        hog = connect(srv)
        hog.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1400\r\n\r\n{")  # holds 1400
        holding(extender, 1400)
        code, text = request(srv, body.ljust(700))
        assert code == 503 and "in flight" in text
        hog.close()
        holding(extender, 0)
        code, _ = request(srv, body.ljust(700))
        assert code == 200


def test_chunked_bodies_count_against_the_budget_as_they_arrive() -> None:
    with serving(max_inflight_bytes=1000, max_body_bytes=1000) as (srv, extender):
        hog = connect(srv)
        hog.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n{")
        holding(extender, 900)
        with connect(srv) as s:
            s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            s.sendall(b"c8\r\n" + b" " * 200 + b"\r\n")
            code, text = parse_response(s)
        assert code == 503 and "in flight" in text
        hog.close()


def test_serve_in_thread_applies_the_default_limits() -> None:
    config = serve_in_thread(server().app).config
    assert config.timeout_keep_alive == ConnectionLimits().keep_alive_timeout
    assert config.h11_max_incomplete_event_size == ConnectionLimits().max_header_bytes
