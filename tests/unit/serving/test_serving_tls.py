"""Real TLS connections to a served app: client certificates authenticate, health paths stay open,
and refusals are the Status objects upstream sends. No API server is configured here, so tokens
cannot be reviewed; TokenReview and SubjectAccessReview are tested against the real API server in
tests/integration/test_secure_serving.py."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from kubesched.harness.pki import TestCA
from kubesched.serving.asgi import USER_KEY, RequestAuth
from kubesched.serving.authn import DelegatingAuthenticator
from kubesched.serving.authz import DelegatingAuthorizer
from kubesched.serving.certs import self_signed_pair
from kubesched.serving.server import BackgroundServer, server_config
from kubesched.serving.tls import server_context


async def whoami(request: Request) -> PlainTextResponse:
    user = request.scope.get(USER_KEY)
    return PlainTextResponse(f"{user.name} {','.join(user.groups)}" if user else "no user")


APP = Starlette(routes=[Route("/healthz", whoami), Route("/metrics", whoami)])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BackgroundServer, TestCA, Path]]:
    tmp = tmp_path_factory.mktemp("tls")
    ca = TestCA(tmp)
    pair = self_signed_pair(["127.0.0.1"])
    server_ca = tmp / "server-chain.crt"
    server_ca.write_bytes(pair.cert_pem)
    context = server_context(pair, client_ca_pem=ca.ca_file.read_text())
    app = RequestAuth(APP, DelegatingAuthenticator(None), DelegatingAuthorizer(None))
    with BackgroundServer(server_config(app, "127.0.0.1", 0, ssl_context=context)) as server:
        yield server, ca, server_ca


def get(url: str, context: ssl.SSLContext, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def client_context(server_ca: Path, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(server_ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def test_the_self_signed_certificate_verifies_for_the_loopback_address(served) -> None:  # type: ignore[no-untyped-def]
    server, _, server_ca = served
    assert server.url.startswith("https://127.0.0.1:")
    assert get(f"{server.url}/healthz", client_context(server_ca)) == (
        200,
        "system:anonymous system:unauthenticated",
    )


def test_plain_http_to_the_secure_port_gets_no_answer(served) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = served
    url = f"http://127.0.0.1:{server.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    assert status != 200


def test_anonymous_metrics_is_forbidden_with_upstreams_status_body(served) -> None:  # type: ignore[no-untyped-def]
    server, _, server_ca = served
    code, body = get(f"{server.url}/metrics", client_context(server_ca))
    assert code == 403
    status = json.loads(body)
    assert status["kind"] == "Status" and status["reason"] == "Forbidden" and status["code"] == 403
    assert status["message"].startswith('forbidden: User "system:anonymous" cannot get path "/metrics"')


def test_a_client_certificate_signed_by_the_client_ca_authenticates(served) -> None:  # type: ignore[no-untyped-def]
    server, ca, server_ca = served
    reader = ca.client("metrics-reader", "monitoring")
    code, body = get(f"{server.url}/healthz", client_context(server_ca, reader))
    assert (code, body) == (200, "metrics-reader monitoring,system:authenticated")
    # Authenticated but, with no API server to ask, not authorized for /metrics ...
    assert get(f"{server.url}/metrics", client_context(server_ca, reader))[0] == 403
    # ... unless in system:masters, which upstream always allows.
    admin = ca.client("admin", "system:masters")
    assert get(f"{server.url}/metrics", client_context(server_ca, admin)) == (
        200,
        "admin system:masters,system:authenticated",
    )


def test_a_certificate_from_another_ca_is_refused(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server, _, server_ca = served
    stranger = TestCA(tmp_path, "other-ca").client("admin", "system:masters")
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        get(f"{server.url}/metrics", client_context(server_ca, stranger))


def test_a_bad_token_is_401_even_on_an_always_allowed_path(served) -> None:  # type: ignore[no-untyped-def]
    server, _, server_ca = served
    code, body = get(f"{server.url}/healthz", client_context(server_ca), {"Authorization": "Bearer nope"})
    assert code == 401
    assert json.loads(body)["reason"] == "Unauthorized"
