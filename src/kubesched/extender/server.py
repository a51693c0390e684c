"""The extender's HTTP side: a Starlette app served by uvicorn.

Endpoints: the four verbs (POST, paths configurable), `/healthz`, `/readyz`, `/metrics` and
`/openapi.json`. What a caller sees on failure:

* 400 and one line of text for a body that is not JSON or not the expected shape (the line names
  the field: `ExtenderArgs.NodeNames[2]: expected str, got int`), whatever is wrong with it: invalid
  UTF-8, nesting deeper than the decoder goes, numbers out of range, wrong types, invalid quantities
  in the pod or nodes. Decoding is one step and evaluating another; anything raised while decoding
  is the body's fault, so it is a 400, never a 500. The server goes on serving;
* 401 when authentication is on (a client CA, a token, or both) and the request has neither a
  verified client certificate nor the token: for the verbs, `/metrics` and `/openapi.json` alike;
  only the probes `/healthz` and `/readyz` are public (kube-scheduler cannot send a token: its
  extender config has no such field, so it authenticates with a client certificate);
* 413 for a body over `max_body_bytes`, checked before and while reading it; 503 when the bodies
  being read or decoded at once would exceed `max_inflight_bytes`; 408 when the body does not
  arrive within `body_timeout` (connections, header time: see `limits`); each of these closes the
  connection;
* 500 for a plugin error in prioritize or preempt, 503 while the node cache is not synced (filter
  reports both in its `Error` field instead, which is how kube-scheduler expects filter to fail).

The verbs are evaluated on the event loop's thread, under the cluster state's lock: they are short
(a few milliseconds for 5,000 nodes) and CPU-bound, so a thread hop would only add latency. Only
bind, which waits on the API server, runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
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
    NodeNamesMemo,
    WireError,
    decode_binding_args,
    decode_extender_args_raw,
    decode_preemption_args,
    encode,
)
from kubesched.errors import InputError
from kubesched.extender.engine import EngineError, ExtenderEngine, NotReady
from kubesched.extender.limits import (
    DEFAULT_MAX_INFLIGHT_BYTES,
    ConnectionLimits,
    InflightBytes,
    apply_limits,
)
from kubesched.extender.openapi import DEFAULT_PATHS, openapi_document
from kubesched.serving.asgi import RequestAuth
from kubesched.serving.authn import CredentialsAuthenticator
from kubesched.serving.authz import AllowAuthenticated
from kubesched.serving.certs import load_pair
from kubesched.serving.server import BackgroundServer, server_config
from kubesched.serving.tls import server_context

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BackgroundServer", "ExtenderMetrics", "ExtenderServer", "ServerOptions"]

log = logging.getLogger(__name__)

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # kube components have none

#: 64 MiB: a NodeList of 5,000 real nodes (10-20 KB each with their image lists) still fits.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
#: Seconds a request body may take to arrive once its headers are in.
DEFAULT_BODY_TIMEOUT = 30.0
VERBS = ("filter", "prioritize", "preempt", "bind")
#: Served without authentication: kubelet's probes carry no credentials.
PUBLIC_PATHS = ("/healthz", "/readyz")
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
    #: When set, callers may authenticate with `Authorization: Bearer <token>`.
    token: str | None = None
    #: Callers may authenticate with a client certificate the TLS layer verified (mutual TLS).
    client_certificates: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: Request bytes read or being decoded at once, across all requests (see `limits`).
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES
    body_timeout: float = DEFAULT_BODY_TIMEOUT


class _Refused(Exception):
    """A body not read to the end: answered with `status` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_CLOSE = {"Connection": "close"}


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
        self.inflight = InflightBytes(self.options.max_inflight_bytes)
        self.node_names = NodeNamesMemo()
        routes = [
            Route(path, self._endpoint(verb), methods=["POST"]) for verb, path in self.options.paths.items()
        ]
        routes += [
            Route("/healthz", self._healthz, methods=["GET"]),
            Route("/readyz", self._readyz, methods=["GET"]),
            Route("/metrics", self._metrics, methods=["GET"]),
            Route("/openapi.json", self._openapi, methods=["GET"]),
        ]
        self.app: Any = Starlette(routes=routes)
        if self.authenticates:
            self.app = RequestAuth(
                self.app,
                CredentialsAuthenticator(
                    token=self.options.token, accept_certificates=self.options.client_certificates
                ),
                AllowAuthenticated(),
                public_paths=PUBLIC_PATHS,
            )

    @property
    def authenticates(self) -> bool:
        """Whether callers must authenticate (every path but the probes)."""
        return bool(self.options.token) or self.options.client_certificates

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

    async def _read_body(self, request: Request, held: list[int]) -> bytearray:
        """The body, within the size, in-flight and time limits; bytes taken from the shared budget
        are added to `held[0]` for the caller to give back. Invalid UTF-8 is caught as it arrives.

        The body is read into one buffer (allocated up front when its length is declared) and
        decoded from it in place: no second copy of a large body is ever made.
        """
        opts = self.options
        limit = opts.max_body_bytes
        declared = request.headers.get("content-length")
        length = int(declared) if declared is not None and declared.isdigit() else None
        if length is not None:
            if length > limit:
                raise _Refused(413, f"request body larger than {limit} bytes")
            if not self.inflight.take(length):
                raise _Refused(503, "too many request bytes in flight; retry later")
            held[0] += length
        utf8 = codecs.getincrementaldecoder("utf-8")()
        buf = bytearray(length) if length is not None else bytearray()
        size = start = 0
        try:
            async with asyncio.timeout(opts.body_timeout):
                async for chunk in request.stream():
                    start, size = size, size + len(chunk)
                    if size > limit:
                        raise _Refused(413, f"request body larger than {limit} bytes")
                    if size > held[0]:  # chunked, or longer than declared: take as it comes
                        if not self.inflight.take(size - held[0]):
                            raise _Refused(503, "too many request bytes in flight; retry later")
                        held[0] = size
                    utf8.decode(chunk)
                    if length is not None and size <= length:
                        buf[start:size] = chunk
                    else:
                        buf += chunk
                utf8.decode(b"", final=True)
        except TimeoutError:
            raise _Refused(408, f"request body not received within {opts.body_timeout:g} s") from None
        except UnicodeDecodeError as exc:
            raise WireError(f"request body: invalid UTF-8 at byte {start + exc.start}") from None
        if length is not None and size < length:
            raise WireError(f"request body: {size} bytes received of the {length} declared")
        return buf

    async def _serve(self, verb: str, request: Request) -> Response:
        held = [0]
        try:
            return await self._serve_body(verb, request, held)
        finally:
            self.inflight.give(held[0])

    async def _serve_body(self, verb: str, request: Request, held: list[int]) -> Response:
        try:
            body = await self._read_body(request, held)
            args = _decode(verb, body, self.node_names)
        except _Refused as exc:
            return _text(exc.status, str(exc), _CLOSE)
        except WireError as exc:
            return _text(400, str(exc))
        except RecursionError:
            return _text(400, f"{_ARGS[verb]}: JSON nested too deeply")
        except Exception as exc:  # whatever the decoder raised, the body caused it
            return _text(400, f"{_ARGS[verb]}: {type(exc).__name__}: {exc}")
        try:
            if verb == "bind":
                payload = encode(await run_in_threadpool(self.engine.bind, args))
            else:
                payload = self._evaluate(verb, args)
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

    def _evaluate(self, verb: str, args: Any) -> bytes:
        engine = self.engine
        with engine.state.lock:
            if verb == "preempt":
                return encode(engine.preempt(args))
            if verb == "filter":
                return encode(engine.filter(*args))
            return encode(engine.prioritize(args[0]))


#: The request type of each verb, as named in its 400 messages.
_ARGS = {
    "filter": "ExtenderArgs",
    "prioritize": "ExtenderArgs",
    "preempt": "ExtenderPreemptionArgs",
    "bind": "ExtenderBindingArgs",
}


def _decode(verb: str, body: bytes | bytearray, names: NodeNamesMemo | None = None) -> Any:
    """The verb's request, decoded and checked (the pod's and nodes' quantities included)."""
    if verb == "bind":
        return decode_binding_args(body)
    if verb == "preempt":
        return decode_preemption_args(body)
    return decode_extender_args_raw(body, names)


def uvicorn_config(
    app: Any,
    host: str,
    port: int,
    *,
    cert_file: str | None = None,
    key_file: str | None = None,
    client_ca_file: str | None = None,
    log_level: str = "warning",
    limits: ConnectionLimits | None = None,
) -> uvicorn.Config:
    """uvicorn settings for the extender: TLS when a certificate is given, client certificates
    requested (not required: probes carry none) when a client CA is given. With a client CA, serve an
    `ExtenderServer` whose options set `client_certificates`, which makes them required elsewhere.
    The connection limits (see `limits`) always apply."""
    context = None
    if cert_file and key_file:
        ca_pem = None
        if client_ca_file:
            try:
                ca_pem = Path(client_ca_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise InputError(
                    f"cannot read: {exc.strerror or exc}", source=f"--client-ca-file {client_ca_file}"
                ) from None
        context = server_context(load_pair(cert_file, key_file), client_ca_pem=ca_pem)
    config = server_config(app, host, port, ssl_context=context, log_level=log_level)
    return apply_limits(config, limits or ConnectionLimits())
