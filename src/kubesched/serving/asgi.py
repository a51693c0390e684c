"""Authentication and authorization in front of an ASGI app, as upstream's handler chain runs them.

`RequestAuth` authenticates every request (a bad token is a 401 even on `/healthz`, as upstream),
then authorizes it; only then does the app see it. Refusals are Kubernetes `Status` objects, the
bodies kube-scheduler sends: `401 Unauthorized`, and `403 forbidden: User "x" cannot get path "/y"`.
Paths listed as public skip both steps (the extender's probes, which kubelet calls without
credentials). The reviews may wait on the API server, so they run on a worker thread.

The client certificate comes from the TLS connection: `TLSAwareH11Protocol` puts the verified peer
certificate into each request's scope as `kubesched.client_certificate`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, MutableMapping
from typing import Any, Protocol

from anyio import to_thread
from uvicorn.protocols.http.h11_impl import H11Protocol

from kubesched.serving.authn import Authenticator, Unauthenticated, User

__all__ = ["CLIENT_CERT_KEY", "USER_KEY", "Authorizer", "RequestAuth", "TLSAwareH11Protocol"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Scope keys: the verified client certificate (as `ssl` decodes it) and the authenticated User.
CLIENT_CERT_KEY = "kubesched.client_certificate"
USER_KEY = "kubesched.user"


class Authorizer(Protocol):
    def authorize(self, user: User, verb: str, path: str) -> Any:
        """An object with `allowed: bool` and `reason: str` (see authz.Decision)."""
        ...


class TLSAwareH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, passing the connection's verified client certificate to the app.

    Over TLS, asyncio calls `connection_made` after the handshake, so the peer certificate is known
    then; `getpeercert()` is empty unless the certificate verified against the client CA.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cert = transport.get_extra_info("peercert")
        if cert:
            inner: ASGIApp = self.app

            async def with_certificate(scope: Scope, receive: Receive, send: Send) -> None:
                scope[CLIENT_CERT_KEY] = cert
                await inner(scope, receive, send)

            self.app = with_certificate


def status_body(code: int, reason: str, message: str) -> bytes:
    """A Kubernetes `Status` object, what upstream components answer a refused request with."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return json.dumps(status).encode() + b"\n"


async def _refuse(send: Send, code: int, reason: str, message: str, headers: Mapping[str, str]) -> None:
    body = status_body(code, reason, message)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": code, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class RequestAuth:
    """ASGI middleware: authenticate, authorize, then call `app` (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        authorizer: Authorizer,
        *,
        public_paths: Collection[str] = (),
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.public_paths = frozenset(public_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        try:
            user = await to_thread.run_sync(
                self.authenticator.authenticate, headers, scope.get(CLIENT_CERT_KEY)
            )
        except Unauthenticated as exc:
            log.debug("401 for %s %s: %s", scope["method"], scope["path"], exc)
            await _refuse(
                send, 401, "Unauthorized", "Unauthorized", {"WWW-Authenticate": 'Bearer realm="kubesched"'}
            )
            return
        verb = str(scope["method"]).lower()
        path = str(scope["path"])
        decision = await to_thread.run_sync(self.authorizer.authorize, user, verb, path)
        if not decision.allowed:
            message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
            if decision.reason:
                message += f": {decision.reason}"
            await _refuse(send, 403, "Forbidden", message, {})
            return
        scope[USER_KEY] = user
        await self.app(scope, receive, send)
