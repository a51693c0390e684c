"""A listening socket taken before its server starts, with the standard library alone.

`kubesched run` takes its ports first, so a port in use ends it at once (exit 2) as before, while
the server that will answer on them (uvicorn, Starlette, the certificate) is imported and built
later, once the informers' LISTs are on the wire. A connection that arrives in between waits in the
socket's backlog and is answered once the server runs.
"""

from __future__ import annotations

import socket

__all__ = ["listen"]

#: uvicorn's default backlog.
BACKLOG = 2048


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) and listening; OSError naming the address if it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=BACKLOG)
    except OSError:
        raise OSError(f"cannot serve on {host}:{port} (address in use or not available)") from None
