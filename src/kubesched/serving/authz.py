"""May they: always-allowed paths, always-allowed groups, then a SubjectAccessReview.

Upstream's delegating authorizer for kube-scheduler is the union, in this order, of
`--authorization-always-allow-paths` (default `/healthz,/readyz,/livez`; a trailing `*` matches a
prefix), the group `system:masters`, and a SubjectAccessReview to the API server for the
non-resource URL with the request's lowercased HTTP method as verb (`get` for a GET of `/metrics`,
what RBAC's `nonResourceURLs` rules name). With no API server configured only the first two apply.
Allowed and denied answers are cached for 10 s each, as upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.cluster.kube.client import ApiError
from kubesched.errors import InputError
from kubesched.serving.authn import ANONYMOUS, Reviewer, User
from kubesched.serving.cache import TTLCache

__all__ = ["AllowAuthenticated", "Decision", "DelegatingAuthorizer", "PathMatcher"]

log = logging.getLogger(__name__)

SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class PathMatcher:
    """Upstream's path authorizer: exact paths, or prefixes written with a trailing `*`."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for path in paths:
            if "*" in path.rstrip("*") or path.count("*") > 1:
                raise InputError(
                    f"{path!r}: only a trailing * is allowed", source="--authorization-always-allow-paths"
                )
            if path.endswith("*"):
                self.prefixes.append(path[:-1])
            else:
                self.exact.add(path)

    def matches(self, path: str) -> bool:
        return path in self.exact or any(path.startswith(p) for p in self.prefixes)


class _SARStatus(msgspec.Struct, omit_defaults=True):
    allowed: bool = False
    denied: bool = False
    reason: str = ""
    evaluationError: str = ""  # noqa: N815 - the API's field name


class _SAR(msgspec.Struct, omit_defaults=True):
    status: _SARStatus | None = None


class DelegatingAuthorizer:
    """Always-allowed paths and groups, then a (cached) SubjectAccessReview."""

    def __init__(
        self,
        reviewer: Reviewer | None,
        *,
        always_allow_paths: Sequence[str] = ("/healthz", "/readyz", "/livez"),
        always_allow_groups: Sequence[str] = ("system:masters",),
        allow_ttl: float = 10.0,
        deny_ttl: float = 10.0,
    ) -> None:
        self.reviewer = reviewer
        self.paths = PathMatcher(always_allow_paths)
        self.groups = frozenset(always_allow_groups)
        self.allow_ttl = allow_ttl
        self.deny_ttl = deny_ttl
        self.cache: TTLCache[tuple[str, str, str, tuple[str, ...]], Decision] = TTLCache()

    def authorize(self, user: User, verb: str, path: str) -> Decision:
        if self.paths.matches(path):
            return Decision(True, "always allowed path")
        if self.groups.intersection(user.groups):
            return Decision(True, "always allowed group")
        if self.reviewer is None:
            return Decision(False, "no API server configured to authorize the request")
        key = (verb, path, user.name, user.groups)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            answer = msgspec.convert(self.reviewer.review(SUBJECT_ACCESS_REVIEWS, body), _SAR)
        except (ApiError, msgspec.ValidationError) as exc:
            log.warning("SubjectAccessReview for %s %s by %s failed: %s", verb, path, user.name, exc)
            return Decision(False, "authorization failed; see the server log")
        status = answer.status or _SARStatus()
        decision = Decision(status.allowed and not status.denied, status.reason)
        self.cache.put(key, decision, self.allow_ttl if decision.allowed else self.deny_ttl)
        return decision


class AllowAuthenticated:
    """Everyone who authenticated may do everything: for a server whose every caller is trusted once
    known (the extender, whose callers are the scheduler and its operators)."""

    def authorize(self, user: User, verb: str, path: str) -> Decision:
        return Decision(user.name != ANONYMOUS.name, "" if user.name != ANONYMOUS.name else "anonymous")
