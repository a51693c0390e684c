"""Bind a pod to a node: `POST /api/v1/namespaces/{ns}/pods/{name}/binding`.

The Binding carries the pod's UID, so the API server refuses it (409) if the pod was deleted and
recreated under the same name since we saw it. A 409 saying the pod "is already assigned to node X"
is final: the pod is bound by someone else (another replica, another scheduler, or a request of ours
whose answer was lost), and binding it again can only fail; it is never counted as our success.
`BindConflict` reports which node holds it; nothing here ever retries a bind, so a pod is never
bound twice by kubesched.
"""

from __future__ import annotations

import re

from kubesched.api.objects import Pod
from kubesched.cluster.kube.client import ApiError, KubeClient

__all__ = ["BindConflict", "Binder", "binding_body"]

_ASSIGNED_RE = re.compile(r'is already assigned to node "([^"]*)"')


class BindConflict(ApiError):
    """409: the pod is already bound (to `node`), or it is no longer the pod we scheduled."""

    def __init__(self, error: ApiError, node: str | None) -> None:
        super().__init__(error.code, error.reason, error.message, details=error.details)
        #: The node the pod is bound to, when the server said so.
        self.node = node


def binding_body(pod: Pod, node_name: str) -> dict[str, object]:
    """The v1 Binding upstream's DefaultBinder posts: the pod's name, namespace and UID, and the node."""
    meta: dict[str, str] = {"name": pod.metadata.name, "namespace": pod.metadata.namespace}
    if pod.metadata.uid:
        meta["uid"] = pod.metadata.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def binding_path(pod: Pod) -> str:
    return f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}/binding"


class Binder:
    """Sends Bindings. Blocking; call it from a binding worker, never from the scheduling loop."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def bind(self, pod: Pod, node_name: str, *, throttle: bool = True) -> None:
        """Bind or raise: BindConflict for a 409, ApiError for anything else (status 0: no answer).

        `throttle=False` when the caller already took the rate limiter's token.
        """
        try:
            self.client.post(binding_path(pod), binding_body(pod, node_name), throttle=throttle)
        except ApiError as exc:
            raise _conflict(exc) from exc

    def bind_many(self, binds: list[tuple[Pod, str]]) -> list[ApiError | None]:
        """Bind each (pod, node), pipelined on one connection, their tokens already taken: None for
        each bound, else its error as `bind` raises it. A bind without an answer is not sent again
        (it may have arrived): its error has status 0, as `bind`'s would."""
        answers = self.client.post_many(
            [(binding_path(pod), binding_body(pod, node)) for pod, node in binds], throttle=False
        )
        return [_conflict(a) if isinstance(a, ApiError) else None for a in answers]


def _conflict(exc: ApiError) -> ApiError:
    """A 409 as BindConflict (with the node that holds the pod, if the server said); else as is."""
    if exc.code != 409:
        return exc
    match = _ASSIGNED_RE.search(exc.message)
    conflict = BindConflict(exc, match.group(1) if match else None)
    conflict.__cause__ = exc
    return conflict
