"""What the extender's server holds for its callers, bounded: connections, header time, body bytes.

A per-request body limit alone does not bound memory: sixteen unauthenticated connections each
sending a 64 MiB body took the process past 1 GB. So, whoever the caller is:

* **Connections**: at most `max_connections` open at once, and at most `max_connections_per_peer`
  from one address, so no peer can take every slot. A connection waiting for a request (idle
  between requests, or still sending its headers) holds its slot only until someone needs it: a
  new connection over either cap closes the connection of that scope that has waited longest, and
  is itself closed on accept only when every connection of the scope is in the middle of a
  request. So idle or slow connections never lock out a caller, whoever opened them, and waiting
  costs a connection object and a socket (a few KB), so thousands can wait.
* **Header time**: a connection must finish its request line and headers within `header_timeout`
  of opening (or of its previous response); a slow or silent client is disconnected, since uvicorn
  has no such timer of its own. Header size is capped by h11 (`max_header_bytes`).
* **Body bytes in flight**: `InflightBytes` is one budget shared by every request being read or
  decoded; a request that would exceed it is refused with 503 before its body is read (its declared
  length) or as soon as it goes over (chunked), and its bytes are given back when it is done.
* **Body time**: the body must arrive within `body_timeout` (the server answers 408 otherwise).

These are transport concerns, kept apart from authentication and from the verbs.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "ConnectionLimits",
    "ConnectionSlots",
    "InflightBytes",
    "apply_limits",
    "default_max_connections",
    "limited_h11_protocol",
]

#: Request bytes held at once across all requests: two bodies of the largest size (64 MiB) at a time.
#: kube-scheduler sends one request per scheduling cycle, so a real caller never comes near it.
DEFAULT_MAX_INFLIGHT_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Per-server connection bounds (see module docstring)."""

    #: Connections at once (default: 4096, or half the process's file descriptor limit if lower).
    max_connections: int = field(default_factory=lambda: default_max_connections())
    #: Connections from one address (IP) at once (default: a quarter of `max_connections`).
    max_connections_per_peer: int = 0
    #: Seconds from connection (or from the previous response) to complete request headers.
    header_timeout: float = 10.0
    #: Largest request line + headers accepted (h11 answers 400 beyond it).
    max_header_bytes: int = 64 * 1024
    #: Seconds an idle keep-alive connection stays open between requests.
    keep_alive_timeout: float = 5.0

    def __post_init__(self) -> None:
        if self.max_connections_per_peer <= 0:
            object.__setattr__(self, "max_connections_per_peer", max(1, self.max_connections // 4))


def default_max_connections() -> int:
    """4096, or half the soft limit on open files when that is lower: accepting past the limit
    fails, and asyncio then stops accepting anyone for a while."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(1, min(4096, soft // 2))


class InflightBytes:
    """A byte budget shared by the requests of one server (used on the event loop's thread only)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        #: Requests refused because the budget was spent (for metrics and tests).
        self.refused = 0

    def take(self, n: int) -> bool:
        """Reserve `n` bytes; False (and counted) when that would exceed the budget."""
        if self.used + n > self.limit:
            self.refused += 1
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used = max(0, self.used - n)


class ConnectionSlots:
    """The connections of one server: how many each peer holds, and which of them wait for a
    request, longest-waiting first (used on the event loop's thread only)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.total = 0
        self.per_peer: dict[str, int] = {}
        #: Connections waiting for a request, in the order they began to wait (dicts keep it).
        self.waiting: dict[Any, None] = {}
        #: Connections closed to make room for a new one (for tests and metrics).
        self.evicted = 0

    def admit(self, conn: Any, peer: str) -> bool:
        """Give `conn` a slot, closing the longest-waiting connection of a full scope (the peer's,
        then the server's); False when a scope is full of connections in the middle of a request."""
        limits = self.limits
        if self.per_peer.get(peer, 0) >= limits.max_connections_per_peer and not self._evict(peer):
            return False
        if self.total >= limits.max_connections and not self._evict(None):
            return False
        self.total += 1
        self.per_peer[peer] = self.per_peer.get(peer, 0) + 1
        self.waiting[conn] = None
        return True

    def release(self, conn: Any, peer: str) -> None:
        self.total -= 1
        left = self.per_peer[peer] - 1
        if left:
            self.per_peer[peer] = left
        else:
            del self.per_peer[peer]
        self.waiting.pop(conn, None)

    def busy(self, conn: Any) -> None:
        """`conn` is in a request: it keeps its slot until the response is sent."""
        self.waiting.pop(conn, None)

    def wait(self, conn: Any) -> None:
        """`conn` waits for its next request, behind every connection already waiting."""
        self.waiting.pop(conn, None)
        self.waiting[conn] = None

    def _evict(self, peer: str | None) -> bool:
        for conn in self.waiting:
            if peer is None or conn.peer == peer:
                conn.evict()  # releases the slot at once (its connection_lost comes later)
                self.evicted += 1
                return True
        return False


def limited_h11_protocol(
    limits: ConnectionLimits, base: type[H11Protocol] = H11Protocol, slots: ConnectionSlots | None = None
) -> type[H11Protocol]:
    """`base` (uvicorn's h11 protocol or a subclass) with the connection caps and a header timer;
    `slots` (one per server) holds its connections."""
    held = slots if slots is not None else ConnectionSlots(limits)

    class LimitedH11Protocol(base):  # type: ignore[valid-type,misc]
        #: The server's connections (read by tests to know what the server has accepted).
        slots: ClassVar[ConnectionSlots] = held
        _header_timer: asyncio.TimerHandle | None = None
        #: Whether this connection holds a slot (False once refused, evicted or lost).
        _slot = False
        peer = ""

        def connection_made(self, transport: asyncio.Transport) -> None:
            peername = transport.get_extra_info("peername")
            self.peer = str(peername[0]) if isinstance(peername, tuple) and peername else str(peername)
            if not held.admit(self, self.peer):
                transport.abort()  # never registered: connection_lost must not count it either
                self._rejected = True
                return
            self._slot = True
            self._rejected = False
            super().connection_made(transport)
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if getattr(self, "_rejected", False):
                return
            self._give_back()
            self._cancel_header_timer()
            super().connection_lost(exc)

        def evict(self) -> None:
            """Close this waiting connection to make room for a new one."""
            self._give_back()
            self._cancel_header_timer()
            self.transport.close()

        def _give_back(self) -> None:
            if self._slot:
                self._slot = False
                held.release(self, self.peer)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._slot and self.conn.their_state is not h11.IDLE:
                self._cancel_header_timer()  # the request's headers are in
                held.busy(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm_header_timer()  # the next request's headers get the same time
                if self._slot:
                    held.wait(self)

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._header_timer = self.loop.call_later(limits.header_timeout, self._header_timed_out)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self.transport.close()

    return LimitedH11Protocol


def apply_limits(config: uvicorn.Config, limits: ConnectionLimits) -> uvicorn.Config:
    """`config` with `limits` applied: its h11 protocol class (whatever it is: the TLS-aware one of
    `kubesched.serving`, say) gains the cap and the timer; header size and keep-alive are set."""
    base = (
        config.http if isinstance(config.http, type) and issubclass(config.http, H11Protocol) else H11Protocol
    )
    config.http = limited_h11_protocol(limits, base, ConnectionSlots(limits))
    config.h11_max_incomplete_event_size = limits.max_header_bytes
    config.timeout_keep_alive = int(limits.keep_alive_timeout)
    return config
