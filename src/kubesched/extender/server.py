"""The extender's HTTP side: a Starlette app served by uvicorn.

Endpoints: the four verbs (POST, paths configurable), `/healthz`, `/readyz`, `/metrics` and
`/openapi.json`. What a caller sees on failure:

* 400 and one line of text for a body that is not JSON or not the expected shape (the line names
  the field: `ExtenderArgs.NodeNames[2]: expected str, got int`); the server goes on serving;
* 401 when a bearer token is configured and the request lacks it (kube-scheduler cannot send one:
  its extender config has no such field, so with kube-scheduler use mutual TLS instead);
* 413 for a body over `max_body_bytes`, checked before and while reading it;
* 500 for a plugin error in prioritize or preempt, 503 while the node cache is not synced (filter
  reports both in its `Error` field instead, which is how kube-scheduler expects filter to fail).

The verbs are evaluated on the event loop's thread, under the cluster state's lock: they are short
(a few milliseconds for 5,000 nodes) and CPU-bound, so a thread hop would only add latency. Only
bind, which waits on the API server, runs on a worker thread.
"""

from __future__ import annotations

import hmac
import logging
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import prometheus_client
import uvicorn
from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from kubesched.api.extender_v1 import (
    WireError,
    decode_binding_args,
    decode_extender_args_raw,
    decode_preemption_args,
    encode,
)
from kubesched.extender.engine import EngineError, ExtenderEngine, NotReady
from kubesched.extender.openapi import DEFAULT_PATHS, openapi_document

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BackgroundServer", "ExtenderMetrics", "ExtenderServer", "ServerOptions"]

log = logging.getLogger(__name__)

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # kube components have none

#: 64 MiB: a NodeList of 5,000 real nodes (10-20 KB each with their image lists) still fits.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
VERBS = ("filter", "prioritize", "preempt", "bind")
JSON_TYPE = "application/json"


class ExtenderMetrics:
    """Requests and latency per verb, in a registry of their own (two servers in one test process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "kubesched_extender_requests",
            "Extender requests by verb and HTTP status code.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kubesched_extender_request_duration_seconds",
            "Time from request received to response ready, by verb.",
            ["verb"],
            buckets=[0.0001 * 2**i for i in range(16)],
            registry=self.registry,
        )

    def observe(self, verb: str, code: int, seconds: float) -> None:
        self.requests.labels(verb, str(code)).inc()
        self.latency.labels(verb).observe(seconds)

    def render(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """What the server serves and accepts."""

    #: verb -> URL path; a verb left out is not served (404).
    paths: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PATHS))
    #: When set, verbs require `Authorization: Bearer <token>`.
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


class _TooLarge(Exception):
    pass


def _text(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    line = " ".join(message.split())  # always one line, whatever the error text held
    return PlainTextResponse(line + "\n", status_code=status, headers=dict(headers or {}))


class ExtenderServer:
    """The ASGI app for one engine; `app` is what uvicorn serves."""

    def __init__(
        self,
        engine: ExtenderEngine,
        options: ServerOptions | None = None,
        metrics: ExtenderMetrics | None = None,
    ) -> None:
        self.engine = engine
        self.options = options or ServerOptions()
        self.metrics = metrics or ExtenderMetrics()
        unknown = set(self.options.paths) - set(VERBS)
        if unknown:
            raise ValueError(f"unknown verbs: {sorted(unknown)}")
        self.openapi = openapi_document(self.options.paths)
        routes = [
            Route(path, self._endpoint(verb), methods=["POST"]) for verb, path in self.options.paths.items()
        ]
        routes += [
            Route("/healthz", self._healthz, methods=["GET"]),
            Route("/readyz", self._readyz, methods=["GET"]),
            Route("/metrics", self._metrics, methods=["GET"]),
            Route("/openapi.json", self._openapi, methods=["GET"]),
        ]
        self.app = Starlette(routes=routes)

    # ------------------------------------------------------------------ plain endpoints

    async def _healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def _readyz(self, request: Request) -> Response:
        state = self.engine.state
        with state.lock:
            problem = state.not_ready() if state.has_node_cache else None
        if problem:
            return _text(500, f"not ready: {problem}")
        return PlainTextResponse("ok")

    async def _metrics(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=prometheus_client.CONTENT_TYPE_LATEST)

    async def _openapi(self, request: Request) -> Response:
        return JSONResponse(self.openapi)

    # ------------------------------------------------------------------ verbs

    def _endpoint(self, verb: str) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            response = await self._serve(verb, request)
            self.metrics.observe(verb, response.status_code, time.perf_counter() - started)
            return response

        return endpoint

    def _authorized(self, request: Request) -> bool:
        token = self.options.token
        if not token:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    async def _read_body(self, request: Request) -> bytes:
        limit = self.options.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    async def _serve(self, verb: str, request: Request) -> Response:
        if not self._authorized(request):
            return _text(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
        try:
            body = await self._read_body(request)
        except _TooLarge:
            return _text(413, f"request body larger than {self.options.max_body_bytes} bytes")
        try:
            if verb == "bind":
                bind_args = decode_binding_args(body)
                payload = encode(await run_in_threadpool(self.engine.bind, bind_args))
            else:
                payload = self._evaluate(verb, body)
        except WireError as exc:
            return _text(400, str(exc))
        except NotReady as exc:
            return _text(503, str(exc))
        except EngineError as exc:
            return _text(500, f"{verb}: {exc}")
        except Exception as exc:  # a bug must cost one request, never the server
            log.exception("%s failed", verb)
            return _text(500, f"{verb}: internal error: {type(exc).__name__}: {exc}")
        return Response(payload, media_type=JSON_TYPE)

    def _evaluate(self, verb: str, body: bytes) -> bytes:
        engine = self.engine
        if verb == "preempt":
            preempt_args = decode_preemption_args(body)
            with engine.state.lock:
                return encode(engine.preempt(preempt_args))
        args, raws = decode_extender_args_raw(body)
        with engine.state.lock:
            if verb == "filter":
                return encode(engine.filter(args, raws))
            return encode(engine.prioritize(args))


def uvicorn_config(
    app: Any,
    host: str,
    port: int,
    *,
    cert_file: str | None = None,
    key_file: str | None = None,
    client_ca_file: str | None = None,
    log_level: str = "warning",
) -> uvicorn.Config:
    """uvicorn settings for the extender: TLS when a certificate is given, mutual TLS with a client CA."""
    kwargs: dict[str, Any] = {}
    if cert_file:
        kwargs.update(ssl_certfile=cert_file, ssl_keyfile=key_file)
        if client_ca_file:
            kwargs.update(ssl_ca_certs=client_ca_file, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        **kwargs,
    )


class BackgroundServer:
    """uvicorn on a daemon thread, for tests and benchmarks: `start()` returns once it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        self.config = config
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self.port = config.port

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                self.server.run()
            except BaseException as exc:  # SystemExit when the port is taken
                failure.append(exc)

        self._thread = threading.Thread(target=serve, name="extender-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if failure or not self._thread.is_alive():
                raise OSError(f"cannot serve on {self.config.host}:{self.config.port}")
            if time.monotonic() > deadline:
                raise OSError(f"server did not start on {self.config.host}:{self.config.port}")
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
