"""Free loopback ports for the servers a test or benchmark starts."""

from __future__ import annotations

import socket

__all__ = ["free_port", "free_ports"]


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the kernel reports free on 127.0.0.1.

    All are held until all are chosen, so none repeats. Between closing them and a server binding
    one, another process may take it; callers that must not fail retry with fresh ports.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One free port on 127.0.0.1 (see `free_ports`)."""
    return free_ports(1)[0]
