"""What the extender's server holds for its callers, bounded: connections, header time, body bytes.

A per-request body limit alone does not bound memory: sixteen unauthenticated connections each
sending a 64 MiB body took the process past 1 GB. So, whoever the caller is:

* **Connections**: at most `max_connections` open at once; one more is closed as soon as it is
  accepted (uvicorn itself would keep it and only answer 503 once a request arrived).
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
from dataclasses import dataclass

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "ConnectionLimits",
    "InflightBytes",
    "apply_limits",
    "limited_h11_protocol",
]

#: Request bytes held at once across all requests: two bodies of the largest size (64 MiB) at a time.
#: kube-scheduler sends one request per scheduling cycle, so a real caller never comes near it.
DEFAULT_MAX_INFLIGHT_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Per-server connection bounds (see module docstring)."""

    max_connections: int = 128
    #: Seconds from connection (or from the previous response) to complete request headers.
    header_timeout: float = 10.0
    #: Largest request line + headers accepted (h11 answers 400 beyond it).
    max_header_bytes: int = 64 * 1024
    #: Seconds an idle keep-alive connection stays open between requests.
    keep_alive_timeout: float = 5.0


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


def limited_h11_protocol(
    limits: ConnectionLimits, base: type[H11Protocol] = H11Protocol
) -> type[H11Protocol]:
    """`base` (uvicorn's h11 protocol or a subclass) with a connection cap and a header timer."""

    class LimitedH11Protocol(base):  # type: ignore[valid-type,misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            if len(self.connections) >= limits.max_connections:
                transport.abort()  # never registered: connection_lost must not count it either
                self._rejected = True
                return
            self._rejected = False
            super().connection_made(transport)
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if getattr(self, "_rejected", False):
                return
            self._cancel_header_timer()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._cancel_header_timer()  # the request's headers are in

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm_header_timer()  # the next request's headers get the same time

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
    config.http = limited_h11_protocol(limits, base)
    config.h11_max_incomplete_event_size = limits.max_header_bytes
    config.timeout_keep_alive = int(limits.keep_alive_timeout)
    return config
