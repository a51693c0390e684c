"""uvicorn on a daemon thread, plain HTTP or TLS, with the request-auth-aware protocol.

`start()` returns once the socket listens (or raises OSError naming the address), so a caller can
log the real port when it asked for port 0. One class serves `kubesched run`'s health and metrics
endpoints, the extender in tests and benchmarks, and anything else that needs a background server.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from typing import Any

import uvicorn

from kubesched.serving.asgi import TLSAwareH11Protocol

__all__ = ["BackgroundServer", "server_config"]


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    log_level: str = "warning",
    **uvicorn_options: Any,
) -> uvicorn.Config:
    """uvicorn settings: h11 with the client-certificate-aware protocol, TLS from `ssl_context`."""
    kwargs: dict[str, Any] = dict(uvicorn_options)
    if ssl_context is not None:
        # uvicorn builds its context in the factory; ours is already built (cert in memory, client CA).
        kwargs["ssl_context_factory"] = lambda config, default: ssl_context
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http=TLSAwareH11Protocol,
        ws="none",  # nothing served here speaks WebSocket; "auto" would import a library for it
        loop="asyncio",
        **kwargs,
    )
    # After uvicorn set up its loggers (in Config): a failed bind is reported once, by our caller.
    logging.getLogger("uvicorn.error").addFilter(_not_a_bind_error)
    return config


def _not_a_bind_error(record: logging.LogRecord) -> bool:
    """Drop uvicorn's own line for an address in use: the command says it, naming its flag."""
    return "error while attempting to bind" not in record.getMessage()


class BackgroundServer:
    """uvicorn on a daemon thread: `start()` returns once it listens; `stop()` lets requests finish."""

    def __init__(self, config: uvicorn.Config) -> None:
        self.config = config
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self.host = config.host
        self.port = config.port

    @property
    def scheme(self) -> str:
        return "https" if self.config.is_ssl else "http"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self, timeout: float = 10.0, *, sock: socket.socket | None = None) -> BackgroundServer:
        """Serve; raises OSError if the address is taken or not available. `sock`: serve on this
        socket, already listening (`kubesched.serving.sockets.listen`), instead of binding one."""
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                self.server.run(sockets=[sock] if sock is not None else None)
            except BaseException as exc:  # SystemExit from uvicorn when the bind fails
                failure.append(exc)

        self._thread = threading.Thread(target=serve, name=f"http-{self.config.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if failure or not self._thread.is_alive():
                raise OSError(
                    f"cannot serve on {self.host}:{self.config.port} (address in use or not available)"
                )
            if time.monotonic() > deadline:
                raise OSError(f"server did not start on {self.host}:{self.config.port}")
            time.sleep(0.01)
        sockets = [s for srv in self.server.servers for s in srv.sockets]
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
