"""Scripted stand-ins for the API server, for the live adapter's unit tests.

`ScriptedListWatch` plays back LIST pages and watch streams the way kube-apiserver sends them (JSON
documents, one per line), so informer behaviour (bookmarks, 410 Gone, reconnects, relists) is tested
against wire bytes without a server. `FakeKube` answers the few writes the live port makes (bindings,
events, status patches, leases) from an in-memory model with the server's conflict rules.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from kubesched.cluster.kube.client import ApiError, Response, TokenBucket
from kubesched.cluster.kube.informer import ResourceKind


def pod_json(
    name: str,
    *,
    rv: str = "1",
    uid: str | None = None,
    namespace: str = "default",
    scheduler: str = "default-scheduler",
    node: str = "",
    cpu: str = "100m",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": rv,
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def node_json(
    name: str, *, rv: str = "1", cpu: str = "4", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "resourceVersion": rv,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def list_page(items: list[Any], rv: str, cont: str = "") -> bytes:
    meta: dict[str, str] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return msgspec.json.encode({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items})


def event_line(type_: str, obj: Any) -> bytes:
    return msgspec.json.encode({"type": type_, "object": obj})


def bookmark(rv: str) -> bytes:
    return event_line("BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}})


def gone(message: str = "too old resource version: 5 (100)") -> bytes:
    return event_line(
        "ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                  "reason": "Expired", "code": 410},
    )  # fmt: skip


class ScriptedListWatch:
    """LIST answers and watch streams from scripts; records the requests it got.

    `lists` is a queue of page lists (one entry per LIST, each a list of pages); `watches` a queue of
    watch scripts: a list of lines, or an ApiError to raise on open. When the watch script queue is
    empty the watch blocks until `release` is set (as a quiet real watch would), then ends.
    """

    def __init__(self, lists: list[list[bytes]], watches: list[list[bytes] | ApiError]) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.list_calls: list[str] = []
        self.list_versions: list[str] = []  # the resourceVersion each LIST's first page asked for
        self.watch_calls: list[str] = []
        self.release = threading.Event()
        self.idle = threading.Event()

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        self.list_calls.append(continue_token)
        if not continue_token:
            self.list_versions.append(resource_version)
        pages = self.lists[0]
        index = int(continue_token) if continue_token else 0
        if index == len(pages) - 1:
            self.lists.pop(0)
        return pages[index]

    @contextlib.contextmanager
    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[Iterable[bytes]]:
        self.watch_calls.append(resource_version)
        if not self.watches:
            self.idle.set()
            self.release.wait(5)
            yield iter(())
            return
        script = self.watches.pop(0)
        if isinstance(script, ApiError):
            raise script
        yield iter(script)


class FakeKube:
    """Just enough of an API server for LiveCluster's writes: bindings, Events, status patches."""

    def __init__(self) -> None:
        self.server = "https://fake"
        self.bound: dict[str, str] = {}  # ns/name -> node
        self.bind_calls: list[tuple[str, str]] = []
        self.events: list[dict[str, Any]] = []
        self.patches: list[tuple[str, Any]] = []
        self.deleted: list[str] = []
        self.lock = threading.Lock()
        self.fail_binds_with: ApiError | None = None
        #: When set, each bind waits (unlocked) until this is set: requests held "on the wire".
        self.hold_binds: threading.Event | None = None
        self.binds_waiting = 0
        #: While set, Event and status writes get no answer (an API server restarting).
        self.down = threading.Event()
        #: Writes refused while down, and writes whose answer is still to be lost (done, then refused).
        self.refused = 0
        self.lose_answers = 0
        #: The client's rate limiter, which the bind pipeline takes its tokens from (None: unlimited).
        self.limiter: TokenBucket | None = None
        #: How many requests each pipelined batch (`post_many`) carried: Events, and binds.
        self.batches: list[int] = []
        self.bind_batches: list[int] = []

    def _outage(self, path: str) -> None:
        if self.down.is_set() and not path.endswith("/binding"):
            with self.lock:
                self.refused += 1
            raise ApiError(0, "ConnectError", "connection refused")

    def _lost_answer(self) -> None:
        if self.lose_answers:
            self.lose_answers -= 1
            raise ApiError(0, "ReadError", "connection reset by peer")

    def served_resources(self, group_version: str) -> set[str] | None:
        return {"pods", "nodes"} if group_version == "v1" else None

    def _hold(self, binds: int) -> None:
        """Keep `binds` bind requests "on the wire" while `hold_binds` is set."""
        hold = self.hold_binds
        if hold is None or not binds:
            return
        with self.lock:
            self.binds_waiting += binds
        hold.wait(10)
        with self.lock:
            self.binds_waiting -= binds

    def post(
        self, path: str, obj: Any, params: Any = None, *, throttle: bool = True, held: bool = False
    ) -> Response:
        self._outage(path)
        if not held and path.endswith("/binding"):
            self._hold(1)
        with self.lock:
            if path.endswith("/binding"):
                parts = path.split("/")
                key = f"{parts[4]}/{parts[6]}"
                node = obj["target"]["name"]
                self.bind_calls.append((key, node))
                if self.fail_binds_with is not None:
                    raise self.fail_binds_with
                if key in self.bound:
                    raise ApiError(
                        409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{parts[6]}": pod '
                        f'{parts[6]} is already assigned to node "{self.bound[key]}"',
                    )  # fmt: skip
                self.bound[key] = node
                return Response(201, b"{}")
            if "/events" in path:
                name = obj["metadata"]["name"]
                if any(e["metadata"]["name"] == name for e in self.events):
                    raise ApiError(409, "AlreadyExists", f'events.events.k8s.io "{name}" already exists')
                self.events.append(obj)
                self._lost_answer()
                return Response(201, b"{}")
        raise ApiError(404, "NotFound", path)

    def post_many(
        self, requests: list[tuple[str, Any]], *, throttle: bool = True
    ) -> list[Response | ApiError]:
        """As the client's pipelined POSTs: each request answered, or failed, on its own."""
        binds = sum(path.endswith("/binding") for path, _ in requests)
        (self.bind_batches if binds else self.batches).append(len(requests))
        self._hold(binds)  # the whole batch is on the wire at once
        answers: list[Response | ApiError] = []
        for path, obj in requests:
            try:
                answers.append(self.post(path, obj, held=True))
            except ApiError as exc:
                answers.append(exc)
        return answers

    def patch(self, path: str, obj: Any, *, content_type: str = "") -> Response:
        self._outage(path)
        with self.lock:
            if "/events/" in path and all(
                e["metadata"]["name"] != path.rsplit("/", 1)[1] for e in self.events
            ):
                raise ApiError(404, "NotFound", f"event {path} not found")
            self.patches.append((path, obj))
        return Response(200, b"{}")

    def delete(self, path: str, obj: Any = None) -> Response:
        self._outage(path)
        with self.lock:
            self.deleted.append(path)
        return Response(200, b"{}")
