"""A connection to one kube-apiserver: where it is, who we are, and how fast we may talk to it.

lightkube (1.0) reads the kubeconfig or the in-cluster service account and builds the authenticated
TLS client (tokens, rotating token files, client certificates, exec plugins); we do not hand-write
any of that. Everything above it is ours: requests carry raw JSON bytes in and out, so the hot
paths (list/watch streams, binds, events) decode with msgspec straight into the scheduler's lean
structs instead of paying for a general-purpose model layer. Requests
and watches travel over our own HTTP/1.1 connections (`transport`), which cost a fraction of
httpx's CPU per request and per watch event, with lightkube's TLS context and credentials; httpx
carries them only when the environment sets a proxy for the server.

Every request first takes a token from a bucket refilled at `clientConnection.qps` up to `burst`,
as client-go's flowcontrol rate limiter does, so a busy scheduler cannot flood the API server.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx2
import msgspec
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from kubesched import __version__
from kubesched.cluster.kube.transport import ConnectionPool, TransportError
from kubesched.errors import InputError

__all__ = [
    "ApiError",
    "KubeClient",
    "TokenBucket",
    "kubeconfig_path",
    "load_connection",
    "where_from",
]

log = logging.getLogger(__name__)

USER_AGENT = f"kubesched/{__version__}"
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

#: Seconds a non-streaming request may take before it counts as failed.
DEFAULT_TIMEOUT = 30.0
#: Connections kept to the server: watches hold one each, binds run many in parallel.
DEFAULT_MAX_CONNECTIONS = 128


class ApiError(Exception):
    """A request that did not succeed: an HTTP error with the server's Status, or no answer at all.

    `code` is the HTTP status (0 when the request never got an answer: connection refused, reset,
    timed out), `reason` the Status reason (`Conflict`, `NotFound`, `Expired`, ...) and `message`
    the server's own words, which callers quote unchanged.
    """

    def __init__(self, code: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None):
        self.code = code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        super().__init__(f"{code} {reason}: {message}" if code else message)

    @property
    def is_transport(self) -> bool:
        """No HTTP answer: the request may or may not have reached the server."""
        return self.code == 0


class _Status(msgspec.Struct, kw_only=True):
    """The `Status` object the API server sends with an error (and in a watch ERROR event)."""

    code: int = 0
    reason: str = ""
    message: str = ""
    details: dict[str, Any] | None = None


_status_decoder = msgspec.json.Decoder(_Status)


def error_from_body(code: int, body: bytes) -> ApiError:
    """An ApiError from an error response (or a watch ERROR object); tolerates non-JSON bodies."""
    try:
        status = _status_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        text = body.decode("utf-8", "replace").strip()[:500]
        return ApiError(code, "", text or f"HTTP {code}")
    return ApiError(status.code or code, status.reason, status.message, details=status.details)


# --------------------------------------------------------------------------- rate limiting


class TokenBucket:
    """client-go's token bucket: `qps` tokens a second, at most `burst` saved up.

    `acquire()` reserves a token and sleeps until it is due, so concurrent callers queue fairly in
    arrival order (the reservation is made under the lock, the sleep outside it). `qps <= 0` means
    unlimited, as a negative QPS does in client-go. Clock and sleep are injectable for tests.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take one token now (possibly going into debt); returns how many seconds to wait for it."""
        if self.unlimited:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def try_take(self) -> bool:
        """Take one token if one is there now (never going into debt); False: none taken."""
        if self.unlimited:
            return True
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def acquire(self) -> float:
        """Block until a token is ours; returns the seconds spent waiting."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


# --------------------------------------------------------------------------- connection


def kubeconfig_path(kubeconfig: str | None = None) -> str:
    """The kubeconfig file `load_connection` reads (when not in a cluster): the given path, else
    the first of `$KUBECONFIG`, else `~/.kube/config`."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
    return os.path.expanduser(path)


def where_from(kubeconfig: str | None = None) -> str:
    """Where the connection settings came from, for error messages: a kubeconfig or in-cluster."""
    if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "the in-cluster service account"
    return f"kubeconfig {kubeconfig_path(kubeconfig)}"


def load_connection(
    kubeconfig: str | None = None, *, context: str | None = None, master: str | None = None
) -> SingleConfig:
    """Where the API server is and how to authenticate, the way kube-scheduler finds it.

    Order: an explicit kubeconfig path; else the in-cluster service account when
    `KUBERNETES_SERVICE_HOST` is set; else `$KUBECONFIG`, else `~/.kube/config`. A missing or broken
    kubeconfig is an InputError naming the file (the CLI prints it and exits 2). `master` (the
    `--master` flag) replaces the server address; with no kubeconfig at all it is the whole
    connection (no credentials), as client-go's BuildConfigFromFlags makes it.
    """
    if master:
        try:
            given = load_connection(kubeconfig, context=context)
        except InputError:
            if kubeconfig:
                raise
            bare = KubeConfig.from_server(master).get()
            assert bare is not None  # from_server always has its one context
            return bare
        return given._replace(cluster=msgspec.structs.replace(given.cluster, server=master))
    if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            cfg = KubeConfig.from_service_account().get()
        except (ConfigError, KeyError, OSError) as exc:
            raise InputError(f"in-cluster configuration: {exc}", source="service account") from None
        if cfg is None:  # pragma: no cover - from_service_account always has one context
            raise InputError("in-cluster configuration has no context", source="service account")
        return cfg
    path = kubeconfig_path(kubeconfig)
    if not Path(path).is_file():
        raise InputError("kubeconfig not found (pass --kubeconfig, or run in a cluster)", source=path)
    try:
        single = KubeConfig.from_file(path).get(context_name=context)
    except (ConfigError, KeyError, ValueError, TypeError, msgspec.ValidationError) as exc:
        raise InputError(f"invalid kubeconfig: {exc}", source=path) from None
    except Exception as exc:  # YAML errors and the like: still one line naming the file
        raise InputError(f"invalid kubeconfig: {type(exc).__name__}: {exc}", source=path) from None
    if single is None:
        raise InputError("kubeconfig has no current-context", source=path)
    if single.user is None:
        raise InputError(f"context {single.context_name!r} names no user", source=path)
    return single


@dataclass(frozen=True, slots=True)
class Response:
    """A finished request: status code and raw body (decode it with the type you expect)."""

    code: int
    body: bytes

    def decode(self, type_: Any = Any) -> Any:
        return msgspec.json.decode(self.body, type=type_)


class KubeClient:
    """JSON requests and watch streams to one API server over `ConnectionPool` (or httpx2 behind a
    proxy), authenticated as lightkube's config says.

    Thread-safe: binds, events, status patches and informers share it from many threads. Each
    instance has its own token bucket; kube-scheduler gives its event client a separate one so
    events never starve binds, and `LiveCluster` does the same with a second `KubeClient`.
    """

    def __init__(
        self,
        config: SingleConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = DEFAULT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        http2: bool = False,
        name: str = "kubesched",
    ) -> None:
        self.config = config
        self.server = config.cluster.server.rstrip("/")
        self.limiter = TokenBucket(qps, burst)
        self.timeout = timeout
        params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout), http2=http2)
        try:
            kwargs = params.httpx_params(config)
        except (ConfigError, OSError) as exc:
            raise InputError(f"cannot set up the connection to {self.server}: {exc}") from None
        agent = f"{USER_AGENT} ({name})"
        self._httpx_params: dict[str, Any] = {
            **kwargs,
            "limits": httpx2.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            "headers": {"User-Agent": agent, "Accept": JSON},
        }
        self._httpx: httpx2.Client | None = None
        self._httpx_lock = threading.Lock()
        #: Requests and watches go through our own connections, unless a proxy from the environment
        #: applies to the server, which only httpx knows how to use.
        self._pool: ConnectionPool | None = None
        if not http2 and not _proxied(self.server):
            self._pool = ConnectionPool(
                self.server,
                ssl_context=kwargs["verify"],
                headers={"User-Agent": agent, "Accept": JSON},
                timeout=timeout,
                max_idle=max_connections,
            )
        self._auth = _Authorization(kwargs.get("auth"), self.server)

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, *, context: str | None = None, **kwargs: Any
    ) -> KubeClient:
        return cls(load_connection(kubeconfig, context=context), **kwargs)

    @property
    def _http(self) -> httpx2.Client:
        """The httpx client, made on first use: only a proxied server needs it, and building one
        costs start-up time (its transport's imports) that every other client would pay for nothing."""
        with self._httpx_lock:
            if self._httpx is None:
                self._httpx = httpx2.Client(**self._httpx_params)
            return self._httpx

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        with self._httpx_lock:
            if self._httpx is not None:
                self._httpx.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        timeout: float | None = None,
        throttle: bool = True,
    ) -> Response:
        """Send one request; 2xx returns the Response, anything else raises ApiError.

        `throttle=False` skips the rate limiter, for a caller that already took its token from
        `limiter` (the bind pipeline takes it before re-validating the decision it sends).
        """
        if throttle:
            self.limiter.acquire()
        if self._pool is None:
            return self._request_httpx(method, path, params, body, content_type, timeout)
        target = f"{path}?{urlencode(params)}" if params else path
        headers = {"Content-Type": content_type} if body is not None else {}
        authorization = self._auth.header()
        for attempt in range(2):
            if authorization is not None:
                headers["Authorization"] = authorization
            try:
                code, content = self._pool.request(
                    method, target, body=body, headers=headers, timeout=timeout
                )
            except TransportError as exc:
                raise ApiError(0, exc.kind, f"{method} {path}: {exc}") from exc
            if code == 401 and attempt == 0:
                # Rotated credentials (a token file, an exec plugin): fetch them again, as lightkube's
                # auth does on a 401, and try once more with them.
                renewed = self._auth.renew(authorization)
                if renewed is not None and renewed != authorization:
                    authorization = renewed
                    continue
            break
        if code >= 400:
            raise error_from_body(code, content)
        return Response(code, content)

    def _request_httpx(
        self,
        method: str,
        path: str,
        params: Mapping[str, str | int] | None,
        body: bytes | None,
        content_type: str,
        timeout: float | None,
    ) -> Response:
        headers = {"Content-Type": content_type} if body is not None else None
        try:
            resp = self._http.request(
                method,
                path,
                params=params,
                content=body,
                headers=headers,
                timeout=timeout if timeout is not None else httpx2.USE_CLIENT_DEFAULT,
            )
        except httpx2.HTTPError as exc:
            raise ApiError(0, type(exc).__name__, f"{method} {path}: {exc or type(exc).__name__}") from exc
        if resp.status_code >= 400:
            raise error_from_body(resp.status_code, resp.content)
        return Response(resp.status_code, resp.content)

    def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Response:
        return self.request("GET", path, params=params)

    def post(
        self, path: str, obj: Any, params: Mapping[str, str | int] | None = None, *, throttle: bool = True
    ) -> Response:
        return self.request("POST", path, params=params, body=msgspec.json.encode(obj), throttle=throttle)

    def post_many(
        self, requests: Sequence[tuple[str, Any]], *, throttle: bool = True
    ) -> list[Response | ApiError]:
        """POST each (path, object) of `requests`, pipelined on one connection (`transport`); each
        gets its Response or its ApiError (status 0: no answer came). None is sent twice, but one
        without an answer may have arrived: only for requests where that is harmless (an Event
        create under a fixed name; a bind, which a 409 settles when it is tried again).

        Every request takes its rate-limiter token (`throttle=False`: the caller took them). A 401
        sends the rejected ones again, one by one, with credentials fetched afresh (`request` does
        that): the server refused them, so none had taken effect.
        """
        for _ in requests if throttle else ():
            self.limiter.acquire()
        if self._pool is None or len(requests) == 1:
            return [self._post_one(path, obj) for path, obj in requests]
        headers = {"Content-Type": JSON}
        authorization = self._auth.header()
        if authorization is not None:
            headers["Authorization"] = authorization
        batch = [(path, msgspec.json.encode(obj)) for path, obj in requests]
        answers = self._pool.pipelined("POST", batch, headers=headers)
        out: list[Response | ApiError] = []
        for (path, obj), answer in zip(requests, answers, strict=True):
            if isinstance(answer, TransportError):
                out.append(ApiError(0, answer.kind, f"POST {path}: {answer}"))
            elif answer[0] == 401:
                out.append(self._post_one(path, obj))
            elif answer[0] >= 400:
                out.append(error_from_body(*answer))
            else:
                out.append(Response(*answer))
        return out

    def _post_one(self, path: str, obj: Any) -> Response | ApiError:
        try:
            return self.post(path, obj, throttle=False)
        except ApiError as exc:
            return exc

    def put(self, path: str, obj: Any) -> Response:
        return self.request("PUT", path, body=msgspec.json.encode(obj))

    def patch(self, path: str, obj: Any, *, content_type: str = MERGE_PATCH) -> Response:
        return self.request("PATCH", path, body=msgspec.json.encode(obj), content_type=content_type)

    def delete(self, path: str, obj: Any = None) -> Response:
        body = msgspec.json.encode(obj) if obj is not None else None
        return self.request("DELETE", path, body=body)

    @contextlib.contextmanager
    def stream_lines(
        self,
        path: str,
        params: Mapping[str, str | int],
        *,
        read_timeout: float,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[Iterator[bytes]]:
        """A watch: the response body as newline-separated JSON documents, as they arrive.

        `on_open(close)` hands the caller a way to abort the stream from another thread (used on
        shutdown, when the reading thread is blocked in a socket read).
        """
        self.limiter.acquire()
        if self._pool is None:
            with self._stream_httpx(path, params, read_timeout, on_open) as lines:
                yield lines
            return
        headers = {}
        authorization = self._auth.header()
        if authorization is not None:
            headers["Authorization"] = authorization
        try:
            stream = self._pool.stream(
                f"{path}?{urlencode(params)}", headers=headers, read_timeout=read_timeout
            )
        except TransportError as exc:
            raise ApiError(0, exc.kind, f"watch {path}: {exc}") from exc
        with stream:
            try:
                if stream.status >= 400:
                    if stream.status == 401:
                        self._auth.renew(authorization)  # the next watch goes with fresh credentials
                    raise error_from_body(stream.status, stream.read())
                if on_open is not None:
                    on_open(stream.close)
                yield _lines(stream.pieces())
            except TransportError as exc:
                raise ApiError(0, exc.kind, f"watch {path}: {exc}") from exc

    @contextlib.contextmanager
    def _stream_httpx(
        self,
        path: str,
        params: Mapping[str, str | int],
        read_timeout: float,
        on_open: Callable[[Callable[[], None]], None] | None,
    ) -> Iterator[Iterator[bytes]]:
        timeout = httpx2.Timeout(self.timeout, read=read_timeout)
        try:
            with self._http.stream("GET", path, params=params, timeout=timeout) as resp:
                if resp.status_code >= 400:
                    raise error_from_body(resp.status_code, resp.read())
                if on_open is not None:
                    on_open(resp.close)
                yield _lines(resp.iter_raw())
        except httpx2.HTTPError as exc:
            raise ApiError(0, type(exc).__name__, f"watch {path}: {exc or type(exc).__name__}") from exc

    # ------------------------------------------------------------------ discovery

    def served_resources(self, group_version: str) -> set[str] | None:
        """Plural resource names served for `group_version` (`v1`, `apps/v1`); None if not served."""
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        try:
            resp = self.get(path)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        listing = resp.decode(_ResourceList)
        return {r.name for r in listing.resources if "/" not in r.name}


class _Authorization:
    """The Authorization header lightkube's auth for our user puts on a request, kept between
    requests and fetched again after a 401 (a rotated token file, an expired exec-plugin token).

    lightkube's auth objects are httpx auth flows: one is run on a placeholder request to read the
    header it sets, and told of a 401 to get the next one; the flows hold the credential caching.
    """

    def __init__(self, auth: httpx2.Auth | None, server: str) -> None:
        self._auth = auth
        self._server = server
        self._lock = threading.Lock()
        self._value: str | None = None
        self._fetched = False

    def header(self) -> str | None:
        if self._fetched:
            return self._value
        with self._lock:
            if not self._fetched:
                self._value = self._run(unauthorized=False)
                self._fetched = True
            return self._value

    def renew(self, rejected: str | None) -> str | None:
        """The header to use after `rejected` drew a 401; None if the auth has nothing new."""
        with self._lock:
            if self._value != rejected:  # another thread renewed it meanwhile
                return self._value
            renewed = self._run(unauthorized=True)
            if renewed is not None:
                self._value = renewed
            return renewed

    def _run(self, *, unauthorized: bool) -> str | None:
        if self._auth is None:
            return None
        request = httpx2.Request("GET", self._server)
        flow = self._auth.sync_auth_flow(request)
        try:
            sent = next(flow)
            if unauthorized:
                sent = flow.send(httpx2.Response(401, request=sent))
        except StopIteration:
            return None
        except (ConfigError, OSError) as exc:
            raise ApiError(0, "AuthError", f"credentials for {self._server}: {exc}") from None
        return sent.headers.get("Authorization")


def _proxied(server: str) -> bool:
    """Whether the environment names a proxy for `server` (`https_proxy`/`all_proxy` and
    `no_proxy`, either case, as httpx reads them); when in doubt, yes (httpx then does it all)."""
    env = {k.lower(): v for k, v in os.environ.items() if k.lower().endswith("_proxy")}
    url = urlsplit(server)
    if not (env.get(f"{url.scheme}_proxy") or env.get("all_proxy")):
        return False
    host = (url.hostname or "").lower()
    for entry in env.get("no_proxy", "").lower().split(","):
        entry = entry.strip()
        if entry == "*":
            return False
        domain = entry.lstrip("*").lstrip(".")
        if domain and (host == domain or host.endswith(f".{domain}")):
            return False
    return True


class _APIResource(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct):
    resources: list[_APIResource] = []


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Split a byte stream at newlines; a final unterminated piece is yielded too."""
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
