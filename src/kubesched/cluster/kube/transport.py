"""HTTP/1.1 keep-alive connections to one server, for request/response calls.

Why ours: binds and Events are most of what a live scheduler sends, and the general-purpose client
(httpx) spent 1.6-1.8 ms of CPU on each, about eight times what writing the request and parsing the
answer directly costs. This module only moves bytes; `KubeClient` adds authentication, rate limiting
and the API's error decoding on top, and keeps watches on httpx.

What it does: one request per connection at a time, idle connections kept (most recently used
first) and checked before reuse, so one the server closed in the meantime is dropped rather than
written to; `Content-Length`, chunked and read-to-close bodies; `Connection: close` honoured; one
deadline for the whole exchange (connect, TLS handshake, every read), so a server that trickles bytes
or never answers costs at most `timeout`. A bad answer (not HTTP, an over-long line, a body over
`max_body`) is a `TransportError` naming what was wrong, and that connection is closed.

A request is sent again on a fresh connection only when a kept connection turned out dead and the
request cannot have taken effect: nothing of it was sent, or it is a GET/HEAD/OPTIONS (as Go's
net/http decides; a POST such as a bind is never repeated, since its first copy may have arrived).
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from io import BufferedReader, RawIOBase
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ConnectionPool", "Stream", "TransportError"]

#: Longest status or header line accepted, and most header lines.
MAX_LINE = 64 * 1024
MAX_HEADERS = 128
#: Largest body accepted (lists are paginated, so real answers are far smaller).
DEFAULT_MAX_BODY = 256 * 1024 * 1024
#: Methods that may be sent twice (Go's net/http replays only these after a dead kept connection).
_REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})
_READ_CHUNK = 64 * 1024


class TransportError(Exception):
    """No usable answer: `kind` says which way it failed (`ConnectError`, `Timeout`,
    `ConnectionClosed`, `ProtocolError`, `TLSError`, `PoolClosed`), the message says what happened."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Dead(Exception):
    """A kept connection turned out closed before any of the answer arrived (maybe retried)."""

    def __init__(self, sent: bool, message: str) -> None:
        super().__init__(message)
        self.sent = sent


class _Raw(RawIOBase):
    """A connection's socket under its BufferedReader, reading within the exchange's time.

    Each read the buffer cannot answer sets the socket's timeout first: what is left until
    `deadline`, or `idle` for a stream's body. Parsing what is buffered already (the header lines
    that came in one packet) therefore costs no system call, and every wait on the socket still
    ends by the deadline.
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = 0.0
        self.idle: float | None = None
        self._timeout: float | None = None  # the socket's timeout as last set here

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        timeout = self.idle
        if timeout is None:
            timeout = self.deadline - time.monotonic()
            if timeout <= 0:
                raise TimeoutError
        if timeout != self._timeout:
            self.sock.settimeout(timeout)
            self._timeout = timeout
        return self.sock.recv_into(buffer)

    def timeout_set(self, sock_timeout: float | None) -> None:
        """The socket's timeout was set elsewhere (a send): remember it."""
        self._timeout = sock_timeout


@dataclass(slots=True)
class _Conn:
    sock: socket.socket
    reader: BufferedReader
    raw: _Raw

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.sock.close()


class ConnectionPool:
    """Keep-alive connections to `server` (`https://host:port[/prefix]`); thread-safe.

    `headers` go on every request (User-Agent, Accept); `request` adds its own per call. At most
    `max_idle` connections are kept between requests; more may be open while requests run.
    """

    def __init__(
        self,
        server: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_idle: int = 128,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) server address: {server!r}")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self.tls = url.scheme == "https"
        if self.tls and ssl_context is None:
            ssl_context = ssl.create_default_context()
        self.ssl_context = ssl_context
        self.timeout = timeout
        self.max_idle = max_idle
        self.max_body = max_body
        netloc = url.netloc.rpartition("@")[2]
        fixed = {"Host": netloc, **(headers or {})}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False
        #: Connections opened so far (for tests and logs: reuse keeps it low).
        self.opened = 0

    def close(self) -> None:
        """Close the kept connections; requests still running close theirs when they end."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        """Send one request (`target`: path and query, below the server's prefix) and read the
        whole answer: (status, body). Raises TransportError when there is no usable answer."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        data = self._encode(method, target, body, headers)
        while True:
            conn, kept = self._take(deadline)
            try:
                status, payload, keep = self._exchange(conn, method, data, deadline, kept)
            except _Dead as dead:
                conn.close()
                if dead.sent and method not in _REPLAYABLE:
                    raise TransportError("ConnectionClosed", f"{dead} (not sent again: {method})") from None
                continue  # a kept connection was dead: once more on a new or another kept one
            except BaseException:
                conn.close()
                raise
            if keep:
                self._give_back(conn)
            else:
                conn.close()
            return status, payload

    def pipelined(
        self,
        method: str,
        requests: Sequence[tuple[str, bytes | None]],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> list[tuple[int, bytes] | TransportError]:
        """Send `requests` ((target, body) each, one method and header set for all) on one
        connection back to back (HTTP/1.1 pipelining: the server answers them in order) and read
        every answer, within one deadline for the lot.

        One write and a few reads carry the whole batch, where `request` costs a write, a read and
        a thread's wake-up each. Each request gets its (status, body), or a TransportError when no
        answer came (the connection failed or the server closed it first): such a request may or
        may not have taken effect, so only requests that are safe to repeat belong here.
        """
        if not requests:
            return []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        data = b"".join(self._encode(method, target, body, headers) for target, body in requests)
        answers: list[tuple[int, bytes] | TransportError] = []
        while True:
            conn, kept = self._take(deadline)
            keep = True
            try:
                _send(conn, data, deadline, kept)
                reader = _Reader(conn, deadline, self.max_body)
                for _ in requests:
                    status, payload, keep = reader.response(method, kept and not answers)
                    answers.append((status, payload))
                    if not keep:
                        break
            except _Dead as dead:
                conn.close()
                if not dead.sent:
                    continue  # a kept connection was dead before anything went out: once more
                failure = TransportError("ConnectionClosed", str(dead))
            except (OSError, TransportError) as exc:
                conn.close()
                error = _transport_error(exc, method)
                if not isinstance(error, TransportError):
                    raise error from None
                failure = error
            except BaseException:
                conn.close()
                raise
            else:
                if keep:
                    self._give_back(conn)
                else:
                    conn.close()
                failure = TransportError("ConnectionClosed", "the server closed the connection first")
            answers.extend(failure for _ in range(len(requests) - len(answers)))
            return answers

    def stream(
        self,
        target: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        read_timeout: float,
    ) -> Stream:
        """GET `target` and return once the headers are in (within `timeout`); the body is then read
        as it comes, `read_timeout` allowed between pieces. The connection (a kept one if any: after
        an informer's LIST, its watch goes out on the same one) is the Stream's until it is closed,
        from any thread (that also interrupts a read in progress)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        data = self._encode("GET", target, None, headers)
        while True:
            conn, kept = self._take(deadline)
            try:
                _send(conn, data, deadline, kept)
                reader = _Reader(conn, deadline, self.max_body)
                head = reader.head("GET", kept)
            except _Dead:
                conn.close()
                continue  # a GET may go again: on the next kept connection, or a new one
            except BaseException as exc:
                conn.close()
                raise _transport_error(exc, "GET") from None
            return Stream(conn, reader, head, read_timeout)

    def _encode(
        self, method: str, target: str, body: bytes | None, headers: Mapping[str, str] | None
    ) -> bytes:
        lines = [f"{method} {self.prefix}{target} HTTP/1.1\r\n", self._head]
        if headers:
            lines.extend(f"{k}: {v}\r\n" for k, v in headers.items())
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body) if body else 0}\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        return head + body if body else head

    def _take(self, deadline: float) -> tuple[_Conn, bool]:
        """A kept connection that is still open, or a new one; True when it was kept."""
        while True:
            with self._lock:
                if self._closed:
                    raise TransportError("PoolClosed", "the connection pool is closed")
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(deadline), False
            if _usable(conn):
                return conn, True
            conn.close()

    def _give_back(self, conn: _Conn) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self, deadline: float) -> _Conn:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=_left(deadline))
        except TimeoutError:
            raise TransportError("Timeout", "connect timed out") from None
        except OSError as exc:
            raise TransportError("ConnectError", str(exc)) from None  # "[Errno 111] Connection refused"
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls:
                assert self.ssl_context is not None
                sock.settimeout(_left(deadline))
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except TimeoutError:
            sock.close()
            raise TransportError("Timeout", "TLS handshake timed out") from None
        except ssl.SSLError as exc:
            sock.close()
            raise TransportError("TLSError", f"TLS handshake: {exc}") from None
        except OSError as exc:
            sock.close()
            raise TransportError("ConnectError", f"TLS handshake: {exc}") from None
        self.opened += 1
        raw = _Raw(sock)
        return _Conn(sock, BufferedReader(raw, _READ_CHUNK), raw)

    # ------------------------------------------------------------------ one exchange

    def _exchange(
        self, conn: _Conn, method: str, data: bytes, deadline: float, kept: bool
    ) -> tuple[int, bytes, bool]:
        """Write the request, read the answer: (status, body, connection reusable)."""
        try:
            _send(conn, data, deadline, kept)
            return _Reader(conn, deadline, self.max_body).response(method, kept)
        except OSError as exc:
            raise _transport_error(exc, method) from None


def _send(conn: _Conn, data: bytes, deadline: float, kept: bool) -> None:
    """Write a request; a kept connection the server has closed meanwhile is `_Dead` (go again)."""
    timeout = _left(deadline)
    conn.sock.settimeout(timeout)
    conn.raw.timeout_set(timeout)
    try:
        conn.sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError) as exc:
        if kept:
            raise _Dead(False, f"kept connection closed by the server: {exc}") from None
        raise


class Stream:
    """A response whose body is read as it arrives (see `ConnectionPool.stream`)."""

    def __init__(self, conn: _Conn, reader: _Reader, head: _Head, read_timeout: float) -> None:
        self._conn = conn
        self._reader = reader
        self._head = head
        self.status = head.status
        self._read_timeout = read_timeout
        self._closed = False

    def read(self) -> bytes:
        """The whole body within the request's timeout (an error answer's Status)."""
        try:
            return self._reader.body(self._head)
        except OSError as exc:
            raise _transport_error(exc, "GET") from None

    def pieces(self) -> Iterator[bytes]:
        """The body in pieces as they arrive; ends when the server ends it or `close` is called."""
        self._reader.idle = self._read_timeout
        try:
            yield from self._reader.pieces(self._head)
        except (OSError, TransportError) as exc:
            if self._closed:
                return
            raise _transport_error(exc, "GET") from None

    def close(self) -> None:
        """End the stream; safe from another thread while one reads (that read then ends)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            # On the plain socket: SSLSocket.shutdown would unwrap TLS under a concurrent read.
            socket.socket.shutdown(self._conn.sock, socket.SHUT_RDWR)
        self._conn.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _transport_error(exc: BaseException, method: str) -> BaseException:
    """A TransportError for an OSError during an exchange (anything else passes as it is)."""
    if not isinstance(exc, OSError):
        return exc
    if isinstance(exc, TimeoutError):
        return TransportError("Timeout", f"no complete answer within the timeout ({method})")
    if isinstance(exc, ssl.SSLError):
        return TransportError("TLSError", str(exc))
    return TransportError("ConnectionClosed", f"connection lost: {exc.strerror or exc}")


@dataclass(slots=True)
class _Head:
    """What the status line and headers said: the status, the body's framing, and reuse."""

    status: int
    keep: bool
    chunked: bool = False
    length: int | None = None
    bodiless: bool = False


class _Reader:
    """Parses one HTTP/1.1 response from `reader` within `deadline`; a stream's body is read with
    `idle` seconds allowed between pieces instead (a watch sends when it has something)."""

    __slots__ = ("max_body", "raw", "reader")

    def __init__(self, conn: _Conn, deadline: float, max_body: int) -> None:
        self.reader = conn.reader
        self.raw = conn.raw
        self.raw.deadline = deadline
        self.raw.idle = None
        self.max_body = max_body

    @property
    def idle(self) -> float | None:
        return self.raw.idle

    @idle.setter
    def idle(self, seconds: float | None) -> None:
        self.raw.idle = seconds

    def response(self, method: str, kept: bool) -> tuple[int, bytes, bool]:
        head = self.head(method, kept)
        return head.status, self.body(head), head.keep

    def head(self, method: str, kept: bool) -> _Head:
        """Read up to the body (interim 1xx answers skipped)."""
        while True:
            try:
                line = self._line()
            except ConnectionResetError as exc:
                if kept:
                    raise _Dead(True, f"kept connection closed by the server: {exc}") from None
                raise
            if not line:
                if kept:
                    raise _Dead(True, "kept connection closed by the server before answering")
                raise TransportError("ConnectionClosed", "the server closed the connection without answering")
            version, status = _status_line(line)
            head = _Head(status, keep=version == b"HTTP/1.1")
            for name, value in self._headers():
                if name == b"content-length":
                    head.length = _content_length(value, head.length)
                elif name == b"transfer-encoding":
                    head.chunked = value.lower().endswith(b"chunked")
                elif name == b"connection":
                    tokens = {t.strip() for t in value.lower().split(b",")}
                    if b"close" in tokens:
                        head.keep = False
                    elif b"keep-alive" in tokens and version == b"HTTP/1.0":
                        head.keep = True
            if 100 <= status < 200:
                continue  # an interim answer (100 Continue): the real one follows
            head.bodiless = method == "HEAD" or status in (204, 304)
            if not (head.bodiless or head.chunked or head.length is not None):
                head.keep = False  # the body ends where the connection does
            return head

    def body(self, head: _Head) -> bytes:
        if head.bodiless:
            return b""
        if head.chunked:
            return self._chunked()
        if head.length is not None:
            return self._exactly(head.length)
        return self._to_close()

    def pieces(self, head: _Head) -> Iterator[bytes]:
        """The body as it arrives (a watch): each piece when it is read, no size limit."""
        if head.bodiless:
            return
        if not head.chunked:
            left = head.length
            while left is None or left > 0:
                part = self.reader.read1(_READ_CHUNK if left is None else min(left, _READ_CHUNK))
                if not part:
                    if left:
                        raise TransportError("ConnectionClosed", f"the answer ended {left} bytes short")
                    return
                if left is not None:
                    left -= len(part)
                yield part
            return
        while (size := self._chunk_size()) > 0:
            while size:
                part = self.reader.read1(min(size, _READ_CHUNK))
                if not part:
                    raise TransportError("ConnectionClosed", "the answer ended inside a chunk")
                size -= len(part)
                yield part
            self._chunk_end()
        self._headers()  # trailers, ignored

    def _line(self) -> bytes:
        line = self.reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise TransportError("ProtocolError", f"a line of the answer is longer than {MAX_LINE} bytes")
        return line

    def _headers(self) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return out
            if not line.endswith(b"\n"):
                raise TransportError("ProtocolError", "the answer ended inside its headers")
            if len(out) >= MAX_HEADERS:
                raise TransportError("ProtocolError", f"the answer has more than {MAX_HEADERS} header lines")
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise TransportError("ProtocolError", f"malformed header line {line[:80]!r}")
            out.append((name.lower(), value.strip()))

    def _exactly(self, n: int) -> bytes:
        if n > self.max_body:
            raise TransportError(
                "ProtocolError", f"the answer's body ({n} bytes) is over {self.max_body} bytes"
            )
        parts: list[bytes] = []
        left = n
        while left:
            part = self.reader.read1(min(left, _READ_CHUNK))
            if not part:
                raise TransportError("ConnectionClosed", f"the answer ended {left} bytes short of its length")
            parts.append(part)
            left -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while (size := self._chunk_size()) > 0:
            total += size
            if total > self.max_body:
                raise TransportError("ProtocolError", f"the answer's body is over {self.max_body} bytes")
            parts.append(self._exactly(size))
            self._chunk_end()
        self._headers()  # trailers, ignored
        return b"".join(parts)

    def _chunk_size(self) -> int:
        line = self._line()
        if not line.endswith(b"\n"):
            raise TransportError("ConnectionClosed", "the answer ended inside a chunk header")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise TransportError("ProtocolError", f"bad chunk size {size_text[:40]!r}") from None
        if size < 0:
            raise TransportError("ProtocolError", f"bad chunk size {size_text[:40]!r}")
        return size

    def _chunk_end(self) -> None:
        if self._line() not in (b"\r\n", b"\n"):
            raise TransportError("ProtocolError", "a chunk is longer than its stated size")

    def _to_close(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            part = self.reader.read1(_READ_CHUNK)
            if not part:
                return b"".join(parts)
            total += len(part)
            if total > self.max_body:
                raise TransportError("ProtocolError", f"the answer's body is over {self.max_body} bytes")
            parts.append(part)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _usable(conn: _Conn) -> bool:
    """A kept connection with nothing to read: the server has not closed it (nor sent stray bytes)."""
    poller = select.poll()
    poller.register(conn.sock, select.POLLIN | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)


def _status_line(line: bytes) -> tuple[bytes, int]:
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or not code.isdigit() or rest[3:4] not in (b"", b" ", b"\r", b"\n"):
        raise TransportError("ProtocolError", f"not an HTTP/1.x answer: {line[:80]!r}")
    return version, int(code)


def _content_length(value: bytes, seen: int | None) -> int:
    if not value.isdigit():
        raise TransportError("ProtocolError", f"bad Content-Length {value[:40]!r}")
    n = int(value)
    if seen is not None and seen != n:
        raise TransportError("ProtocolError", "conflicting Content-Length headers")
    return n
