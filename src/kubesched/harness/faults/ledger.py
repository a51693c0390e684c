"""The audit ledger: every `pods/binding` request the API server logged, and which of them took."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = ["Bind", "binds_that_took", "epoch_seconds", "first_bind_after", "read_binds"]


@dataclass(frozen=True)
class Bind:
    """One `pods/binding` request as the API server logged it."""

    user: str
    namespace: str
    pod: str
    node: str
    received: float  # epoch seconds, the server's clock (this machine's)
    code: int


def epoch_seconds(stamp: str) -> float:
    """An RFC 3339 time from the API server (audit log, Lease) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_binds(path: Path, namespace: str) -> list[Bind]:
    """The Binding requests for pods of `namespace`, in the order the server received them."""
    binds: list[Bind] = []
    if not path.exists():
        return binds
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        ref = event.get("objectRef") or {}
        if ref.get("subresource") != "binding" or ref.get("namespace") != namespace:
            continue
        target = ((event.get("requestObject") or {}).get("target") or {}).get("name", "")
        binds.append(
            Bind(
                user=(event.get("user") or {}).get("username", ""),
                namespace=namespace,
                pod=ref.get("name", ""),
                node=target,
                received=epoch_seconds(event["requestReceivedTimestamp"]),
                code=int((event.get("responseStatus") or {}).get("code", 0)),
            )
        )
    binds.sort(key=lambda b: b.received)
    return binds


def binds_that_took(binds: list[Bind], bound_to: dict[str, str]) -> list[Bind]:
    """The Bindings that bound their pod: every 2xx one, and for a pod bound (`bound_to`: pod ->
    node) with no 2xx Binding, its last Binding to that node whatever the answer. A client that dies
    mid-request gets its Binding logged as 504 although the write may already be in etcd; the
    server's answer is not the last word on what happened."""
    took = [b for b in binds if 200 <= b.code < 300]
    answered = {b.pod for b in took}
    unanswered: dict[str, Bind] = {}
    for b in binds:
        if b.pod not in answered and bound_to.get(b.pod) == b.node:
            unanswered[b.pod] = b
    return sorted(took + list(unanswered.values()), key=lambda b: b.received)


def first_bind_after(binds: list[Bind], since: float, *, not_by: str) -> Bind | None:
    """The first Binding another replica than `not_by` sent after `since` (whatever the answer):
    when a standby that took over started binding."""
    return next((b for b in binds if b.received > since and b.user != not_by), None)
