"""The keep-alive pool against a scripted local server: reuse, a server that closes, every body
framing, TLS with client certificates, timeouts, and answers that are not HTTP at all."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubesched.cluster.kube.client import ApiError, KubeClient, Response, _lines, load_connection
from kubesched.cluster.kube.transport import ConnectionPool, TransportError
from kubesched.harness.pki import TestCA


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int


#: A handler writes its answer (or nothing) to the socket; True keeps the connection open.
Handler = Callable[[Seen, socket.socket], bool]


@dataclass
class Server:
    """Serves each connection on a thread, reading requests and passing them to `handler`."""

    handler: Handler
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    tls_failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock, self.connections), daemon=True).start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        self.open.append(sock)
        try:
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as exc:
                    self.tls_failures.append(str(exc))
                    return
                self.open.append(sock)
            reader = sock.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return
                method, target, _ = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (h := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = h.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", "0")))
                req = Seen(method, target, headers, body, number)
                self.seen.append(req)
                if not self.handler(req, sock):
                    return
        except (OSError, ValueError):
            return
        finally:
            with contextlib.suppress(OSError):
                sock.close()


def answer(body: bytes = b'{"ok":true}', status: str = "200 OK", extra: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def echo(req: Seen, sock: socket.socket) -> bool:
    sock.sendall(
        answer(json.dumps({"method": req.method, "target": req.target, "body": req.body.decode()}).encode())
    )
    return True


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def make(handler: Handler, tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(handler, tls))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_requests_reuse_one_kept_connection(serve: Callable[..., Server]) -> None:
    server = serve(echo)
    pool = ConnectionPool(server.url + "/prefix/", headers={"User-Agent": "t"})
    for i in range(5):
        status, body = pool.request("POST", f"/p?i={i}", body=b"x" * i, headers={"Content-Type": "a/b"})
        assert status == 200 and json.loads(body) == {
            "method": "POST",
            "target": f"/prefix/p?i={i}",
            "body": "x" * i,
        }
    assert pool.opened == 1 and server.connections == 1
    first = server.seen[0].headers
    assert (
        first["host"] == f"127.0.0.1:{server.port}"
        and first["user-agent"] == "t"
        and first["content-type"] == "a/b"
    )
    pool.close()
    with pytest.raises(TransportError) as info:
        pool.request("GET", "/")
    assert info.value.kind == "PoolClosed"


def test_a_connection_the_server_closed_while_idle_is_not_written_to(serve: Callable[..., Server]) -> None:
    def once(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(answer())
        return False  # closes, though the answer did not say so

    server = serve(once)
    pool = ConnectionPool(server.url)
    for _ in range(4):
        assert pool.request("POST", "/bind", body=b"{}")[0] == 200
        time.sleep(0.05)  # the server's FIN arrives while the connection is idle
    assert len(server.seen) == 4 and pool.opened == 4


def test_connection_close_is_honoured(serve: Callable[..., Server]) -> None:
    server = serve(lambda req, sock: sock.sendall(answer(extra="Connection: close\r\n")) or True)
    pool = ConnectionPool(server.url)
    for _ in range(3):
        pool.request("GET", "/")
    assert pool.opened == 3


def test_a_kept_connection_dropped_mid_request_repeats_a_get_but_never_a_post(
    serve: Callable[..., Server],
) -> None:
    answered: set[int] = set()

    def first_answer_then_drop(req: Seen, sock: socket.socket) -> bool:
        if req.connection in answered:
            return False  # reads the request, closes without an answer
        answered.add(req.connection)
        sock.sendall(answer())
        return True

    server = serve(first_answer_then_drop)
    pool = ConnectionPool(server.url)
    pool.request("GET", "/a")
    assert pool.request("GET", "/b")[0] == 200  # dropped on the kept connection, answered on a new one
    assert [s.target for s in server.seen] == ["/a", "/b", "/b"]
    with pytest.raises(TransportError) as info:
        pool.request("POST", "/bind", body=b"{}")
    assert info.value.kind == "ConnectionClosed" and "not sent again" in str(info.value)
    assert [s.target for s in server.seen].count("/bind") == 1


def test_chunked_and_read_to_close_bodies(serve: Callable[..., Server]) -> None:
    def chunked(req: Seen, sock: socket.socket) -> bool:
        if req.target == "/chunked":
            sock.sendall(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5;ext=1\r\nhello\r\n1\r\n \r\n"
                + b"%x\r\n" % 70000
                + b"w" * 70000
                + b"\r\n0\r\nTrailer: x\r\n\r\n"
            )
            return True
        sock.sendall(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
        return False

    server = serve(chunked)
    pool = ConnectionPool(server.url)
    assert pool.request("GET", "/chunked") == (200, b"hello " + b"w" * 70000)
    assert pool.request("GET", "/chunked")[0] == 200 and pool.opened == 1
    assert pool.request("GET", "/eof") == (200, b"until the end")
    assert (
        pool.request("GET", "/chunked")[0] == 200 and pool.opened == 2
    )  # the read-to-close one was not kept


def test_interim_answers_and_bodiless_statuses(serve: Callable[..., Server]) -> None:
    def interim(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
        return True

    pool = ConnectionPool(serve(interim).url)
    assert pool.request("DELETE", "/x") == (204, b"")
    assert pool.request("DELETE", "/x") == (204, b"") and pool.opened == 1


#: How long the slow servers below keep a request waiting. The bounds are half of it: what they
#: test is that the client does not wait for the server, not how fast a loaded machine runs it.
SLOW_SERVER_SECONDS = 30.0


def test_a_server_that_never_answers_costs_the_timeout_not_more(serve: Callable[..., Server]) -> None:
    done = threading.Event()
    pool = ConnectionPool(serve(lambda req, sock: done.wait(SLOW_SERVER_SECONDS) and False).url, timeout=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(TransportError) as info:
            pool.request("GET", "/")
        assert info.value.kind == "Timeout" and time.monotonic() - started < SLOW_SERVER_SECONDS / 2
    finally:
        done.set()


def test_a_server_that_trickles_bytes_costs_the_timeout_not_more(serve: Callable[..., Server]) -> None:
    done = threading.Event()

    def trickle(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        deadline = time.monotonic() + SLOW_SERVER_SECONDS
        while time.monotonic() < deadline and not done.wait(0.05):
            sock.sendall(b"x")  # each byte well within the timeout: only a deadline ends the read
        return False

    pool = ConnectionPool(serve(trickle).url)
    started = time.monotonic()
    try:
        with pytest.raises(TransportError) as info:
            pool.request("GET", "/", timeout=0.4)
        assert info.value.kind == "Timeout" and time.monotonic() - started < SLOW_SERVER_SECONDS / 2
    finally:
        done.set()


@pytest.mark.parametrize(
    ("raw", "kind", "words"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "ProtocolError", "not an HTTP/1.x answer"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", "ProtocolError", "longer than"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n", "ProtocolError", "is over"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nshort", "ConnectionClosed", "7 bytes short"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "ProtocolError", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "ProtocolError", "bad chunk size"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            "ProtocolError",
            "longer than its",
        ),
        (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", "ProtocolError", "malformed header"),
        (b"HTTP/1.1 200 OK\r\nA: b\r\n", "ProtocolError", "ended inside its headers"),
        (b"", "ConnectionClosed", "without answering"),
    ],
)
def test_answers_that_are_not_http_are_clear_errors(
    serve: Callable[..., Server], raw: bytes, kind: str, words: str
) -> None:
    server = serve(lambda req, sock: sock.sendall(raw) or False)
    pool = ConnectionPool(server.url, timeout=5, max_body=1 << 20)
    with pytest.raises(TransportError) as info:
        pool.request("GET", "/")
    assert info.value.kind == kind and words in str(info.value)


def test_nothing_listening_is_a_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(TransportError) as info:
        ConnectionPool(f"http://127.0.0.1:{port}").request("GET", "/")
    assert info.value.kind == "ConnectError"


def _tls_server_context(ca: TestCA, tmp_path: Path) -> ssl.SSLContext:
    cert, key = ca.server("apiserver", "127.0.0.1")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(ca.ca_file)
    return ctx


def test_tls_with_a_client_certificate(serve: Callable[..., Server], tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    server = serve(echo, _tls_server_context(ca, tmp_path))
    ctx = ssl.create_default_context(cafile=str(ca.ca_file))
    ctx.load_cert_chain(*ca.client("kubesched", "system:masters"))
    pool = ConnectionPool(server.url, ssl_context=ctx)
    assert pool.request("GET", "/a")[0] == 200 and pool.request("GET", "/b")[0] == 200
    assert pool.opened == 1

    stranger = ssl.create_default_context()  # does not trust the server's CA
    with pytest.raises(TransportError) as info:
        ConnectionPool(server.url, ssl_context=stranger).request("GET", "/")
    assert info.value.kind == "TLSError" and "certificate verify failed" in str(info.value)

    anonymous = ssl.create_default_context(cafile=str(ca.ca_file))  # trusts it, but has no client cert
    with pytest.raises(TransportError) as info:
        ConnectionPool(server.url, ssl_context=anonymous, timeout=5).request("GET", "/")
    assert info.value.kind in ("TLSError", "ConnectionClosed")


def _kubeconfig(path: Path, server: str, user: dict[str, str]) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_kube_client_renews_a_rotated_token_after_a_401(serve: Callable[..., Server], tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    valid = {"Bearer old"}

    def check(req: Seen, sock: socket.socket) -> bool:
        if req.headers.get("authorization") in valid:
            sock.sendall(answer())
        else:
            sock.sendall(
                answer(b'{"kind":"Status","code":401,"reason":"Unauthorized","message":"no"}', "401 No")
            )
        return True

    server = serve(check)
    client = KubeClient(
        load_connection(str(_kubeconfig(tmp_path / "kc", server.url, {"tokenFile": str(token)})))
    )
    assert client.get("/api", {"x": "a b"}).code == 200
    token.write_text("new\n")
    valid.clear()
    valid.add("Bearer new")
    assert client.post("/api/v1/x", {"a": 1}).code == 200
    assert [s.headers["authorization"] for s in server.seen] == ["Bearer old", "Bearer old", "Bearer new"]
    assert server.seen[0].target == "/api?x=a+b" and server.connections == 1
    valid.clear()  # no token works now: the 401 is the answer
    with pytest.raises(ApiError) as info:
        client.get("/api")
    assert (info.value.code, info.value.reason) == (401, "Unauthorized")
    client.close()


def test_pipelined_requests_share_one_connection_and_each_gets_its_own_answer(
    serve: Callable[..., Server],
) -> None:
    server = serve(echo)
    pool = ConnectionPool(server.url)
    answers = pool.pipelined(
        "POST", [(f"/e{i}", b"x" * i) for i in range(5)], headers={"Content-Type": "a/b"}
    )
    targets = [json.loads(a[1])["target"] for a in answers if not isinstance(a, TransportError)]
    assert targets == [f"/e{i}" for i in range(5)] and server.connections == 1
    assert [s.body for s in server.seen] == [b"x" * i for i in range(5)]
    assert pool.request("GET", "/after")[0] == 200 and pool.opened == 1  # kept for the next request


def test_pipelined_requests_left_unanswered_are_transport_errors(serve: Callable[..., Server]) -> None:
    server = serve(lambda req, sock: sock.sendall(answer(extra="Connection: close\r\n")) or False)
    pool = ConnectionPool(server.url)
    first, *rest = pool.pipelined("POST", [("/a", b"{}"), ("/b", b"{}"), ("/c", b"{}")])
    assert first == (200, b'{"ok":true}')
    assert [a.kind for a in rest if isinstance(a, TransportError)] == ["ConnectionClosed"] * 2
    assert pool.opened == 1 and [s.target for s in server.seen] == ["/a"]


def test_kube_client_post_many_maps_each_answer(serve: Callable[..., Server], tmp_path: Path) -> None:
    def by_target(req: Seen, sock: socket.socket) -> bool:
        if req.target.endswith("/dup"):
            status = b'{"kind":"Status","code":409,"reason":"AlreadyExists","message":"exists"}'
            sock.sendall(answer(status, "409 Conflict"))
        else:
            sock.sendall(answer(req.body, "201 Created"))
        return True

    server = serve(by_target)
    client = KubeClient(load_connection(str(_kubeconfig(tmp_path / "kc", server.url, {"token": "t"}))))
    new, dup = client.post_many([("/api/v1/new", {"a": 1}), ("/api/v1/dup", {"b": 2})])
    assert isinstance(new, Response) and new.code == 201 and new.decode() == {"a": 1}
    assert isinstance(dup, ApiError) and (dup.code, dup.reason) == (409, "AlreadyExists")
    assert {s.headers["authorization"] for s in server.seen} == {"Bearer t"} and server.connections == 1
    client.close()


def test_kube_client_reports_a_transport_failure_as_status_zero(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    kc = _kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}", {"token": "t"})
    with KubeClient(load_connection(str(kc))) as client, pytest.raises(ApiError) as info:
        client.get("/api")
    assert info.value.is_transport and info.value.reason == "ConnectError" and "GET /api" in str(info.value)


def test_a_stream_yields_chunks_as_they_arrive_and_close_ends_a_blocked_read(
    serve: Callable[..., Server],
) -> None:
    sent_second = threading.Event()

    def watch(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        sock.sendall(chunk(b'{"a":1}\n'))
        time.sleep(0.2)
        sock.sendall(chunk(b'{"b":2}\n{"c":') + chunk(b"3}\n\n"))  # a line across two chunks
        sent_second.set()
        time.sleep(30)  # then nothing: the reader blocks until closed
        return False

    pool = ConnectionPool(serve(watch).url)
    stream = pool.stream("/w?watch=true", read_timeout=60)
    assert stream.status == 200
    lines = _lines(stream.pieces())
    assert next(lines) == b'{"a":1}'
    assert sent_second.wait(5) and [next(lines), next(lines)] == [b'{"b":2}', b'{"c":3}']
    threading.Timer(0.2, stream.close).start()
    started = time.monotonic()
    assert list(lines) == []  # the blocked read ends quietly once closed
    assert time.monotonic() - started < 15  # not the server's 30 s, nor the read timeout


def test_a_stream_that_goes_quiet_past_its_read_timeout_fails(serve: Callable[..., Server]) -> None:
    def quiet(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        time.sleep(5)
        return False

    with ConnectionPool(serve(quiet).url).stream("/w", read_timeout=0.3) as stream:
        with pytest.raises(TransportError) as info:
            list(stream.pieces())
        assert info.value.kind == "Timeout"


def test_kube_client_watches_over_the_pool_and_reads_error_statuses(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    def watch(req: Seen, sock: socket.socket) -> bool:
        if "watch" not in req.target:  # a LIST
            sock.sendall(answer())
            return True
        if "resourceVersion=1" in req.target:
            body = b'{"kind":"Status","code":410,"reason":"Expired","message":"too old"}'
            sock.sendall(answer(body, "410 Gone"))
            return True
        sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        sock.sendall(chunk(b'{"type":"ADDED","object":{}}\n') + b"0\r\n\r\n")
        return True

    server = serve(watch)
    kc = _kubeconfig(tmp_path / "kc", server.url, {"token": "t"})
    with KubeClient(load_connection(str(kc))) as client:
        client.get("/api/v1/pods")
        closers: list[Callable[[], None]] = []
        with client.stream_lines(
            "/api/v1/pods", {"watch": "true"}, read_timeout=5, on_open=closers.append
        ) as lines:
            assert list(lines) == [b'{"type":"ADDED","object":{}}']
        assert len(closers) == 1 and server.connections == 1  # the watch went out on the LIST's connection
        with (
            pytest.raises(ApiError) as info,
            client.stream_lines("/api/v1/pods", {"watch": "1", "resourceVersion": "1"}, read_timeout=5),
        ):
            pass
        assert (info.value.code, info.value.reason) == (410, "Expired")
    assert all(s.headers["authorization"] == "Bearer t" for s in server.seen)


def test_httpx_is_built_only_for_a_server_behind_a_proxy(
    serve: Callable[..., Server], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ok(req: Seen, sock: socket.socket) -> bool:
        sock.sendall(answer())
        return True

    proxy = serve(ok)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    with KubeClient(
        load_connection(str(_kubeconfig(tmp_path / "direct", proxy.url, {"token": "t"})))
    ) as direct:
        assert direct.get("/api").code == 200
        assert direct._httpx is None  # our own connections: httpx never built
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    kc = _kubeconfig(tmp_path / "proxied", "http://kube.invalid:6443", {"token": "t"})
    with KubeClient(load_connection(str(kc))) as proxied:
        assert proxied._httpx is None
        assert proxied.get("/api").code == 200
        assert proxied._httpx is not None
    assert proxy.seen[-1].target == "http://kube.invalid:6443/api"  # sent to the proxy, for the server
