"""Fake Nodes and plain Pods on a real API server, as upstream's scheduler_perf makes them.

A fake Node is a Node object POSTed with its status already filled in (capacity, allocatable, a
``Ready=True`` condition) and the ``kubernetes.io/hostname`` label; no kubelet ever backs it. The API
server keeps status on Node create, and with no node-lifecycle controller running nothing ever marks
it NotReady, so it stays schedulable for the whole run. Pods bound to it stay Pending forever, which is
all scheduling tests need; they are deleted with ``gracePeriodSeconds=0`` because no kubelet would
ever confirm a graceful termination.

The client here is deliberately tiny: JSON over HTTPS with a bearer token, returning plain dicts.
Tests then check exactly what the server sent, independent of kubesched's own decoding (which is the
code under test), and no Kubernetes client package is needed to run them.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import msgspec

if TYPE_CHECKING:
    from kubesched.harness.controlplane import ControlPlane

__all__ = [
    "ApiClient",
    "ApiError",
    "bind_pod",
    "create_fake_nodes",
    "create_namespace",
    "create_node",
    "create_pod",
    "delete_pod",
    "fake_node",
    "get_pod",
    "list_events",
    "list_nodes",
    "list_pods",
    "node_is_ready",
    "pod_manifest",
]

JSON = dict[str, Any]

#: The image scheduler_perf puts in its pods; nothing is ever pulled, but the field must be non-empty.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"


class ApiError(RuntimeError):
    """A non-2xx answer, carrying the HTTP status and the server's ``Status`` object.

    ``reason`` is the Status reason (``AlreadyExists``, ``Conflict``, ``NotFound`` …), which is what
    callers branch on; the message keeps the server's own wording.
    """

    def __init__(self, method: str, path: str, status: int, body: JSON | None, text: str) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body or {}
        self.reason: str = str(self.body.get("reason", ""))
        message = str(self.body.get("message", text[:500]))
        super().__init__(f"{method} {path}: HTTP {status} {self.reason}: {message}")


class ApiClient:
    """JSON over HTTPS to one API server, keep-alive, one connection per thread.

    A connection per thread lets ``create_fake_nodes`` create thousands of nodes from a small thread
    pool without a TLS handshake per request, which on two cores costs more than the request itself.
    """

    def __init__(self, server: str, token: str, ca_file: str | Path, *, timeout: float = 60.0) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme != "https" or url.hostname is None:
            raise ValueError(f"server must be an https:// URL, got {server!r}")
        self.server = server
        self._host = url.hostname
        self._port = url.port or 443
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
        self._context = ssl.create_default_context(cafile=str(ca_file))
        self._timeout = timeout
        self._local = threading.local()
        self._connections: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()

    @classmethod
    def for_control_plane(cls, control_plane: ControlPlane, *, timeout: float = 60.0) -> ApiClient:
        return cls(control_plane.server, control_plane.token, control_plane.ca_file, timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._timeout, context=self._context
            )
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        params: Mapping[str, str | int] | None = None,
    ) -> JSON:
        """Send one request and return the decoded JSON body; raise ``ApiError`` on non-2xx.

        A connection the server closed while idle is reopened and the request sent once more; that is
        safe for the idempotent case, and for a POST the server never saw it (the socket was dead).
        """
        if params:
            path = f"{path}?{urllib.parse.urlencode(params)}"
        payload = msgspec.json.encode(body) if body is not None else None
        status, data = self._send(method, path, payload)
        decoded: Any = None
        if data:
            try:
                decoded = msgspec.json.decode(data)
            except msgspec.DecodeError:
                decoded = None
        if not 200 <= status < 300:
            raise ApiError(method, path, status, decoded if isinstance(decoded, dict) else None,
                           data.decode("utf-8", "replace"))  # fmt: skip
        if not isinstance(decoded, dict):
            raise ApiError(method, path, status, None, f"expected a JSON object, got {data[:200]!r}")
        return decoded

    def _send(self, method: str, path: str, payload: bytes | None) -> tuple[int, bytes]:
        try:
            return self._send_once(method, path, payload)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
            # The server closed an idle keep-alive connection (over TLS: EOF on the next write).
            self._connection().close()  # reconnects on next use
            return self._send_once(method, path, payload)

    def _send_once(self, method: str, path: str, payload: bytes | None) -> tuple[int, bytes]:
        conn = self._connection()
        try:
            conn.request(method, path, body=payload, headers=self._headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except BaseException:
            conn.close()  # a half-used connection must not serve the next request
            raise

    def get(self, path: str, **params: str | int) -> JSON:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Mapping[str, Any]) -> JSON:
        return self.request("POST", path, body)

    def list_all(
        self, path: str, params: Mapping[str, str | int] | None = None, *, page_size: int = 500
    ) -> list[JSON]:
        """Every item of a collection, fetched in pages so a 30k-pod LIST never buffers at once."""
        return list(self.iter_list(path, params, page_size=page_size))

    def iter_list(
        self, path: str, params: Mapping[str, str | int] | None = None, *, page_size: int = 500
    ) -> Iterator[JSON]:
        query: dict[str, str | int] = {**(params or {}), "limit": page_size}
        while True:
            page = self.get(path, **query)
            yield from page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return
            query["continue"] = cont


# --------------------------------------------------------------------------------------------------
# nodes


def fake_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str = "32Gi",
    pods: int = 110,
    extra_resources: Mapping[str, str | int] | None = None,
    allocatable: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
) -> JSON:
    """The manifest of a Ready node with the given capacity (allocatable = capacity unless given).

    ``taints`` are plain dicts (``{"key": …, "value": …, "effect": "NoSchedule"}``), as in YAML.
    """
    capacity = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    capacity.update({k: str(v) for k, v in (extra_resources or {}).items()})
    spec: JSON = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": {k: str(v) for k, v in allocatable.items()} if allocatable else dict(capacity),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "phase": "Running",
        },
    }


def create_node(client: ApiClient, manifest: Mapping[str, Any]) -> JSON:
    """POST one Node; its status is kept (unlike a Pod's)."""
    return client.post("/api/v1/nodes", manifest)


def create_fake_nodes(
    client: ApiClient,
    count: int,
    *,
    prefix: str = "fake-node-",
    start: int = 0,
    zones: Sequence[str] = (),
    concurrency: int = 4,
    **node_kwargs: Any,
) -> list[str]:
    """Create ``count`` fake nodes named ``<prefix>00000``…, returning their names in order.

    With ``zones`` the nodes are spread round-robin over ``topology.kubernetes.io/zone`` values, for
    topology-spread tests. A few concurrent connections keep the apiserver busy without making it
    thrash; 4 is about the sweet spot on two cores.
    """
    names = [f"{prefix}{i:05d}" for i in range(start, start + count)]
    base_labels: Mapping[str, str] = node_kwargs.pop("labels", None) or {}

    def make(index_name: tuple[int, str]) -> None:
        index, name = index_name
        labels = dict(base_labels)
        if zones:
            labels["topology.kubernetes.io/zone"] = zones[index % len(zones)]
        create_node(client, fake_node(name, labels=labels, **node_kwargs))

    if concurrency <= 1 or count <= 1:
        for item in enumerate(names):
            make(item)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="fake-nodes") as pool:
            for _ in pool.map(make, enumerate(names)):
                pass  # re-raises the first failure
    return names


def list_nodes(client: ApiClient, *, label_selector: str | None = None) -> list[JSON]:
    params: dict[str, str | int] = {"labelSelector": label_selector} if label_selector else {}
    return client.list_all("/api/v1/nodes", params)


def node_is_ready(node: Mapping[str, Any]) -> bool:
    """Whether the node's ``Ready`` condition is ``True``."""
    conditions: Iterable[Mapping[str, Any]] = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


# --------------------------------------------------------------------------------------------------
# namespaces, pods, events


def create_namespace(client: ApiClient, name: str) -> JSON:
    """A fresh namespace per test keeps tests apart (no namespace controller would ever delete one)."""
    return client.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )


def pod_manifest(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    scheduler_name: str | None = None,
    node_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    priority_class_name: str | None = None,
    spec_overrides: Mapping[str, Any] | None = None,
) -> JSON:
    """A one-container pause Pod with resource requests, as scheduler_perf's pod template.

    ``node_name`` pre-binds it (the fast way to fill a cluster with running pods, skipping any
    scheduler); ``spec_overrides`` is merged into ``spec`` last, for anything not covered here.
    """
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: JSON = {"name": "pause", "image": PAUSE_IMAGE}
    if requests:
        container["resources"] = {"requests": requests}
    spec: JSON = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    spec.update(spec_overrides or {})
    metadata: JSON = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def create_pod(client: ApiClient, pod: Mapping[str, Any] | str, **manifest_kwargs: Any) -> JSON:
    """Create a Pod from a manifest, or from a name plus ``pod_manifest`` keyword arguments."""
    manifest = pod_manifest(pod, **manifest_kwargs) if isinstance(pod, str) else pod
    namespace = (manifest.get("metadata") or {}).get("namespace") or "default"
    return client.post(f"/api/v1/namespaces/{namespace}/pods", manifest)


def get_pod(client: ApiClient, name: str, namespace: str = "default") -> JSON:
    return client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def list_pods(
    client: ApiClient,
    namespace: str | None = "default",
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> list[JSON]:
    """Pods of one namespace (``None``: all namespaces), paginated."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    params: dict[str, str | int] = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return client.list_all(path, params)


def bind_pod(client: ApiClient, name: str, node_name: str, namespace: str = "default") -> JSON:
    """POST a Binding, exactly as a scheduler binds. Binding an already bound pod raises a 409 ApiError."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    return client.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)


def delete_pod(
    client: ApiClient, name: str, namespace: str = "default", *, grace_period_seconds: int = 0
) -> JSON:
    """Delete at once: a bound pod with a grace period would wait forever for a kubelet."""
    return client.request(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace_period_seconds},
    )


def list_events(
    client: ApiClient,
    namespace: str | None = "default",
    *,
    involved_object: str | None = None,
    reason: str | None = None,
) -> list[JSON]:
    """core/v1 Events (which also show events.k8s.io/v1 ones, e.g. the scheduler's ``Scheduled``)."""
    path = f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"
    selectors = []
    if involved_object:
        selectors.append(f"involvedObject.name={involved_object}")
    if reason:
        selectors.append(f"reason={reason}")
    params: dict[str, str | int] = {"fieldSelector": ",".join(selectors)} if selectors else {}
    return client.list_all(path, params)
