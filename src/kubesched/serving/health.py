"""`/healthz`, `/livez`, `/readyz` and `/metrics` of `kubesched run`: a small Starlette app.

Apart from `kubesched.metrics` so that a scheduler builds its metrics without importing the ASGI
stack (Starlette, uvicorn, h11): `run` imports this module once its informers' LISTs are on the
wire, and the imports are done while the API server answers them. `kubesched run` serves the app
as kube-scheduler does, over HTTPS with delegated authentication and authorization
(`kubesched.serving.secure`); `HealthServer.start` serves it as plain HTTP, which the CLI does
only when asked (`--insecure-listen`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping

import prometheus_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from kubesched.metrics import SchedulerMetrics, parse_listen
from kubesched.serving.server import BackgroundServer, server_config

__all__ = ["Check", "HealthServer"]

Check = Callable[[], str | None]
"""A health check: None when fine, else a short reason."""


class HealthServer:
    """`/healthz`, `/livez`, `/readyz` and `/metrics` on a uvicorn thread.

    `live_checks` back `/healthz` and `/livez`; `/readyz` runs those plus `ready_checks`. A failing
    check answers 500 with `[-]name failed: reason` lines, as kube components do with `?verbose`.
    """

    def __init__(
        self,
        listen: str,
        metrics: SchedulerMetrics,
        *,
        live_checks: Mapping[str, Check] | None = None,
        ready_checks: Mapping[str, Check] | None = None,
    ) -> None:
        self.host, self.port = parse_listen(listen)
        self.metrics = metrics
        self.live_checks = dict(live_checks or {})
        self.ready_checks = dict(ready_checks or {})
        self.app = Starlette(
            routes=[
                Route("/healthz", self._live),
                Route("/livez", self._live),
                Route("/readyz", self._ready),
                Route("/metrics", self._metrics),
            ]
        )
        self._server: BackgroundServer | None = None

    # ------------------------------------------------------------------ handlers

    @staticmethod
    def _run_checks(checks: Mapping[str, Check], verbose: bool, what: str) -> Response:
        lines: list[str] = []
        failed = False
        for name, check in checks.items():
            try:
                problem = check()
            except Exception as exc:  # a broken check is a failing check, not a 500 traceback
                problem = f"{type(exc).__name__}: {exc}"
            if problem:
                failed = True
                lines.append(f"[-]{name} failed: {problem}")
            else:
                lines.append(f"[+]{name} ok")
        if failed:
            return PlainTextResponse("\n".join(lines) + f"\n{what} check failed\n", status_code=500)
        if verbose:
            return PlainTextResponse("\n".join(lines) + f"\n{what} check passed\n")
        return PlainTextResponse("ok")

    async def _live(self, request: Request) -> Response:
        return self._run_checks(self.live_checks, "verbose" in request.query_params, "livez")

    async def _ready(self, request: Request) -> Response:
        checks = {**self.live_checks, **self.ready_checks}
        return self._run_checks(checks, "verbose" in request.query_params, "readyz")

    async def _metrics(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=prometheus_client.CONTENT_TYPE_LATEST)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 10.0, *, sock: socket.socket | None = None) -> None:
        """Serve plain HTTP on a daemon thread; returns once listening. OSError if the port is taken.
        `sock`: a socket already listening on the address (`kubesched.serving.sockets.listen`)."""
        server = BackgroundServer(server_config(self.app, self.host, self.port))
        server.start(timeout, sock=sock)
        self._server = server
        self.port = server.port

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.stop(timeout)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"
