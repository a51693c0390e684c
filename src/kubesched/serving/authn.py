"""Who is asking: a client certificate, a bearer token reviewed by the API server, or nobody.

The order and outcomes are upstream's delegating authenticator's:

* a client certificate verified against the client CA -> its subject (CN = user, O = groups);
* else `Authorization: Bearer <token>` -> a TokenReview; a token the API server does not accept is
  a 401, never a fallback to anonymous;
* else, with anonymous requests allowed, `system:anonymous` in `system:unauthenticated`.

Answers are cached for `cache_ttl` seconds (10 s upstream) by a hash of the token, never the token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from kubesched.cluster.kube.client import ApiError
from kubesched.serving.cache import TTLCache

__all__ = [
    "ANONYMOUS",
    "Authenticator",
    "CredentialsAuthenticator",
    "DelegatingAuthenticator",
    "Reviewer",
    "TokenReviewer",
    "Unauthenticated",
    "User",
    "user_from_certificate",
]

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


@dataclass(frozen=True, slots=True)
class User:
    """An authenticated identity, as a SubjectAccessReview names it."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))
#: Cached in place of a user for a token the API server rejected.
_REJECTED = User("")


class Unauthenticated(Exception):
    """Credentials were presented and not accepted (401); the message is for the log, not the caller."""


class Reviewer(Protocol):
    """What authentication needs from the API server: POST a review, get the decoded answer."""

    def review(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]: ...


class TokenReviewer:
    """Posts reviews through a `KubeClient` (the `--authentication-kubeconfig` connection)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def review(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self.client.post(path, body).decode()
        return answer


class Authenticator(Protocol):
    def authenticate(self, headers: Mapping[str, str], peer_cert: Mapping[str, Any] | None) -> User: ...


def user_from_certificate(peer_cert: Mapping[str, Any]) -> User | None:
    """CN and O of a verified certificate's subject (the dict `ssl` gives for `getpeercert()`)."""
    cn = ""
    groups: list[str] = []
    for rdn in peer_cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cn = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    if not cn:
        return None
    return User(cn, (*groups, "system:authenticated"))


class _TokenUser(msgspec.Struct, omit_defaults=True):
    username: str = ""
    uid: str = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}


class _TokenReviewStatus(msgspec.Struct, omit_defaults=True):
    authenticated: bool = False
    user: _TokenUser | None = None
    error: str = ""


class _TokenReview(msgspec.Struct, omit_defaults=True):
    status: _TokenReviewStatus | None = None


class DelegatingAuthenticator:
    """Client certificate, then bearer token (TokenReview), then anonymous; see the module docstring."""

    def __init__(
        self,
        reviewer: Reviewer | None,
        *,
        allow_anonymous: bool = True,
        cache_ttl: float = 10.0,
        audiences: Sequence[str] = (),
        cache: TTLCache[str, User] | None = None,
    ) -> None:
        self.reviewer = reviewer
        self.allow_anonymous = allow_anonymous
        self.cache_ttl = cache_ttl
        self.audiences = list(audiences)
        self.cache: TTLCache[str, User] = cache if cache is not None else TTLCache()

    def authenticate(self, headers: Mapping[str, str], peer_cert: Mapping[str, Any] | None) -> User:
        """The caller's identity; raises Unauthenticated (-> 401) for credentials that do not hold."""
        if peer_cert:
            user = user_from_certificate(peer_cert)
            if user is not None:
                return user
        authorization = headers.get("authorization", "")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise Unauthenticated("the Authorization header is not a bearer token")
            return self._review_token(token)
        if self.allow_anonymous:
            return ANONYMOUS
        raise Unauthenticated("no credentials and anonymous requests are not allowed")

    def _review_token(self, token: str) -> User:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self.cache.get(key)
        if cached is _REJECTED:
            raise Unauthenticated("token not authenticated (cached)")
        if cached is not None:
            return cached
        if self.reviewer is None:
            raise Unauthenticated("a bearer token was sent but no API server is configured to review it")
        body: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, **({"audiences": self.audiences} if self.audiences else {})},
        }
        try:
            answer = msgspec.convert(self.reviewer.review(TOKEN_REVIEWS, body), _TokenReview)
        except (ApiError, msgspec.ValidationError) as exc:
            # Not cached: the next request asks again once the API server answers.
            raise Unauthenticated(f"TokenReview failed: {exc}") from None
        status = answer.status
        if status is None or not status.authenticated or status.user is None or not status.user.username:
            reason = status.error if status is not None and status.error else "token not authenticated"
            self.cache.put(key, _REJECTED, self.cache_ttl)  # as upstream: a rejection is cached too
            raise Unauthenticated(reason)
        u = status.user
        user = User(u.username, tuple(u.groups), u.uid, {k: tuple(v) for k, v in u.extra.items()})
        self.cache.put(key, user, self.cache_ttl)
        return user


class CredentialsAuthenticator:
    """For the extender: a client certificate verified by the TLS layer, or one shared bearer token.

    kube-scheduler's extender client can present a client certificate (`tlsConfig.certFile`) but not
    a token, so mutual TLS is how kube-scheduler authenticates; the token serves other callers
    (curl, scripts). No credentials, or a wrong token, is Unauthenticated (401): the extender has
    no anonymous callers except on its public probe paths.
    """

    def __init__(self, *, token: str | None, accept_certificates: bool) -> None:
        self._expected = f"Bearer {token}".encode() if token else None
        self.accept_certificates = accept_certificates

    def authenticate(self, headers: Mapping[str, str], peer_cert: Mapping[str, Any] | None) -> User:
        if self.accept_certificates and peer_cert:
            user = user_from_certificate(peer_cert)
            if user is not None:
                return user
        given = headers.get("authorization", "")
        if self._expected is not None and given and hmac.compare_digest(given.encode(), self._expected):
            return User("token-file", ("system:authenticated",))
        raise Unauthenticated("missing or wrong credentials")
