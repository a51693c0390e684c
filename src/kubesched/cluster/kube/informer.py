"""Informers: keep a local copy of one resource kind in step with the API server.

The shape is client-go's reflector + store, reduced to what a scheduler needs:

1. LIST (paginated, `limit`/`continue`) and deliver the difference to what the store holds: adds,
   updates for changed resourceVersions, and synthetic deletes for objects that vanished while we
   were not watching (this is what makes a relist after `410 Gone` lose nothing);
2. WATCH from the list's resourceVersion with `allowWatchBookmarks=true`, so the resourceVersion
   we resume from stays fresh even when nothing we watch changes;
3. when the server ends the watch (its timeout), watch again from the last resourceVersion seen;
   on `410 Gone`/`Expired` (that version was compacted away) go back to 1; on any other failure
   wait with exponential backoff (0.8 s doubling to 30 s, jittered) and retry.

Objects are decoded straight from the response bytes into the lean msgspec structs of
`kubesched.api.objects`, one item at a time: an object the structs cannot hold is reported through
`on_decode_error` and skipped, never stopping the stream or the other objects.

Handlers run on the informer's thread through `dispatch`, which the caller uses to take its own
lock (LiveCluster's state lock), so handler code never races the scheduling loop.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from kubesched.api import resource as dra
from kubesched.api import scheduling_groups as sg
from kubesched.api.cluster_objects import Namespace, PodDisruptionBudget, PriorityClass, Service
from kubesched.api.controllers import ReplicaSet, ReplicationController, StatefulSet
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Node, Pod
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.cluster.kube.client import ApiError, KubeClient, error_from_body
from kubesched.cluster.kube.initial_lists import NON_TERMINAL_PODS, PAGE_SIZE, list_params

__all__ = [
    "KINDS",
    "Backoff",
    "Handlers",
    "Informer",
    "ListWatch",
    "ObjectDecoder",
    "ResourceKind",
    "WatchExpired",
    "list_objects",
    "object_key",
]

log = logging.getLogger(__name__)

#: The server ends a watch after a random 5-10 minutes (client-go's minWatchTimeout * (1 + rand)).
MIN_WATCH_TIMEOUT = 300


@dataclass(frozen=True, slots=True)
class ResourceKind:
    """One watched kind: where it lives in the API and which lean struct holds it."""

    kind: str
    group: str
    version: str
    plural: str
    type: type[msgspec.Struct]
    #: Server-side filter, e.g. the scheduler's `status.phase!=Succeeded,status.phase!=Failed`.
    field_selector: str = ""
    #: Its key in `KINDS` and `Handle.lister` when `kind` alone is ambiguous ("scheduling.k8s.io/PodGroup").
    listed_as: str = ""
    #: The feature gate without which kube-scheduler does not watch it ("" for none).
    gate: str = ""

    @property
    def key(self) -> str:
        return self.listed_as or self.kind

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The cluster-wide collection: `/api/v1/pods`, `/apis/apps/v1/replicasets`."""
        prefix = "/api" if not self.group else "/apis"
        return f"{prefix}/{self.group_version}/{self.plural}"


#: Every kind the live scheduler watches, by `key`. Pods and Nodes drive scheduling; the others feed
#: `Handle.lister(key)` for plugins (volumes, spreading, disruption budgets, namespaces, priorities,
#: gangs). Kinds the server does not serve (a CRD not installed, an API not enabled) are skipped by
#: `LiveCluster.discover`, and kinds whose `gate` is off are not even discovered.
KINDS: dict[str, ResourceKind] = {
    rk.key: rk
    for rk in (
        ResourceKind("Node", "", "v1", "nodes", Node),
        ResourceKind("Pod", "", "v1", "pods", Pod, NON_TERMINAL_PODS),
        ResourceKind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", PriorityClass),
        ResourceKind("Namespace", "", "v1", "namespaces", Namespace),
        ResourceKind("PersistentVolume", "", "v1", "persistentvolumes", PersistentVolume),
        ResourceKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", PersistentVolumeClaim),
        ResourceKind("StorageClass", "storage.k8s.io", "v1", "storageclasses", StorageClass),
        ResourceKind("CSINode", "storage.k8s.io", "v1", "csinodes", CSINode),
        ResourceKind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", CSIDriver),
        ResourceKind(
            "CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", CSIStorageCapacity
        ),
        ResourceKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", PodDisruptionBudget),
        ResourceKind("Service", "", "v1", "services", Service),
        ResourceKind("ReplicaSet", "apps", "v1", "replicasets", ReplicaSet),
        ResourceKind("StatefulSet", "apps", "v1", "statefulsets", StatefulSet),
        ResourceKind("ReplicationController", "", "v1", "replicationcontrollers", ReplicationController),
        # scheduler-plugins' CRD, for Coscheduling; not the native `scheduling.k8s.io` PodGroup.
        ResourceKind("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", PodGroup),
        # Workload-aware scheduling: kube-scheduler watches PodGroups with GenericWorkload on and
        # CompositePodGroups with CompositePodGroup on; Workloads are read for explain and what-ifs.
        *(
            ResourceKind(
                kind, "scheduling.k8s.io", version, plural, type_, listed_as=key, gate=sg.GATE_OF[key]
            )
            for kind, version, plural, type_, key in (
                ("PodGroup", "v1beta1", "podgroups", sg.PodGroup, sg.POD_GROUP_KEY),
                ("Workload", "v1beta1", "workloads", sg.Workload, sg.WORKLOAD_KEY),
                (
                    "CompositePodGroup",
                    "v1alpha3",
                    "compositepodgroups",
                    sg.CompositePodGroup,
                    sg.COMPOSITE_POD_GROUP_KEY,
                ),
            )
        ),
        # Dynamic Resource Allocation (DynamicResources).
        ResourceKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", dra.DeviceClass),
        ResourceKind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", dra.ResourceClaim),
        ResourceKind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", dra.ResourceSlice),
        ResourceKind("DeviceTaintRule", "resource.k8s.io", "v1", "devicetaintrules", dra.DeviceTaintRule),
    )
}


class WatchExpired(Exception):
    """The resourceVersion we resume from is gone (HTTP 410 / watch ERROR 410): relist."""


# --------------------------------------------------------------------------- decoding


class _ListMeta(msgspec.Struct, kw_only=True, frozen=True):
    resource_version: str = msgspec.field(default="", name="resourceVersion")
    continue_: str = msgspec.field(default="", name="continue")


class _ListEnvelope(msgspec.Struct, kw_only=True, frozen=True):
    """A list response; items stay raw so each one decodes (or fails) on its own."""

    metadata: _ListMeta = _ListMeta()
    items: list[msgspec.Raw] | None = None


class _WatchEvent(msgspec.Struct, kw_only=True, frozen=True):
    type: str
    object: msgspec.Raw


class _MetaOnly(msgspec.Struct, kw_only=True, frozen=True):
    """What a BOOKMARK carries that we use: the resourceVersion."""

    metadata: ObjectMeta = ObjectMeta()


_list_decoder = msgspec.json.Decoder(_ListEnvelope)
_event_decoder = msgspec.json.Decoder(_WatchEvent)
_meta_decoder = msgspec.json.Decoder(_MetaOnly)


def _drop_nulls(value: Any) -> Any:
    """The API server treats a null field as unset; so do we on the (rare) slow decode path."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


class ObjectDecoder:
    """Bytes of one object -> its lean struct, with a tolerant fallback and a readable error.

    The fast path is one `msgspec.json.Decoder(type).decode`; a ValidationError (for instance a
    null where the struct wants a list) is retried on the generic document without nulls, and a
    second failure raises `msgspec.ValidationError` whose message names the field path.
    """

    def __init__(self, type_: type[msgspec.Struct]) -> None:
        self.type = type_
        self._decoder = msgspec.json.Decoder(type_)

    def decode(self, raw: bytes | msgspec.Raw) -> Any:
        try:
            return self._decoder.decode(raw)
        except msgspec.ValidationError:
            doc = _drop_nulls(msgspec.json.decode(raw))
            return msgspec.convert(doc, self.type)


def object_key(obj: Any) -> str:
    """The store key: `namespace/name`, or `name` for cluster-scoped objects (client-go's key)."""
    meta: ObjectMeta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def identify(raw: bytes | msgspec.Raw) -> _MetaOnly | None:
    """Just the metadata of an object that failed to decode, to say which one it was."""
    try:
        return _meta_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


# --------------------------------------------------------------------------- transport


class ListWatch(Protocol):
    """Where an informer's bytes come from: the API server, or a scripted fake in tests."""

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        """One page of the collection (JSON bytes of a List); `resource_version` "0" lets the server
        answer the first page from its watch cache, "" asks for a consistent read."""
        ...

    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[Iterable[bytes]]:
        """A watch from `resource_version`: the event lines. Raises ApiError (410 -> relist)."""
        ...


class ApiListWatch:
    """ListWatch over a KubeClient. `exact`: a LIST at a resourceVersion asks for that revision
    exactly (`resourceVersionMatch=Exact`), not for one at least as new (a consistent snapshot)."""

    def __init__(self, client: KubeClient, *, exact: bool = False) -> None:
        self.client = client
        self.exact = exact

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        params = list_params(
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            field_selector=kind.field_selector,
            exact=self.exact,
        )
        return self.client.get(kind.path, params).body

    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[Iterable[bytes]]:
        params: dict[str, str | int] = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
        }
        if kind.field_selector:
            params["fieldSelector"] = kind.field_selector
        # The server closes the stream after timeoutSeconds; bookmarks arrive about once a minute, so
        # a read stalled well past both means the connection is dead.
        return self.client.stream_lines(
            kind.path, params, read_timeout=timeout_seconds + 60.0, on_open=on_open
        )


def list_objects(
    source: ListWatch,
    kind: ResourceKind,
    decode: Callable[[msgspec.Raw], Any | None],
    *,
    page_size: int = PAGE_SIZE,
    resource_version: str = "",
) -> tuple[list[Any], str]:
    """LIST every page of `kind`: the objects `decode` returned (None skips one) and the list's
    resourceVersion. A continue token that expired mid-list (compaction) starts the list again.
    `resource_version` goes with the first page only (the continue token carries it after)."""
    items: list[Any] = []
    token = ""
    listed_at = ""
    while True:
        try:
            raw = source.list_page(
                kind, limit=page_size, continue_token=token, resource_version=resource_version
            )
            page = _list_decoder.decode(raw)
        except ApiError as exc:
            if exc.code == 410 and token:
                items, token = [], ""
                continue
            raise
        for raw in page.items or ():
            obj = decode(raw)
            if obj is not None:
                items.append(obj)
        listed_at = page.metadata.resource_version or listed_at
        token = page.metadata.continue_
        if not token:
            return items, listed_at


# --------------------------------------------------------------------------- backoff


class Backoff:
    """Exponential backoff with jitter: 0.8 s, 1.6 s, ... up to 30 s (client-go's reflector values)."""

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._next = initial

    def next(self) -> float:
        """The next delay (jittered up by at most `jitter` times itself), then grow the base delay."""
        base = self._next
        self._next = min(self.maximum, self._next * self.factor)
        return min(self.maximum, base * (1.0 + self.jitter * self._rng.random()))

    def reset(self) -> None:
        self._next = self.initial


# --------------------------------------------------------------------------- informer


class Handlers(Protocol):
    def on_add(self, obj: Any) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


class CallbackHandlers:
    """Handlers made of three functions (add, update(old, new), delete)."""

    def __init__(
        self,
        add: Callable[[Any], None],
        update: Callable[[Any, Any], None],
        delete: Callable[[Any], None],
    ) -> None:
        self.on_add = add
        self.on_update = update
        self.on_delete = delete


def _direct(fn: Callable[[], None]) -> None:
    fn()


class Informer:
    """List+watch one kind into a store and tell `handlers` about every change.

    `run()` loops until `stop()`; `has_synced` turns true once the first full list was delivered.
    `dispatch(fn)` runs every handler batch (the caller takes its lock there); a handler exception
    is logged and does not stop the informer. `on_decode_error(raw, error)` hears of objects that
    could not be decoded.
    """

    def __init__(
        self,
        kind: ResourceKind,
        source: ListWatch,
        handlers: Handlers | None = None,
        *,
        dispatch: Callable[[Callable[[], None]], None] = _direct,
        on_decode_error: Callable[[bytes, Exception], None] | None = None,
        backoff: Backoff | None = None,
        sleep: Callable[[float], bool] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.kind = kind
        self.source = source
        self.handlers = handlers
        self._dispatch = dispatch
        self._on_decode_error = on_decode_error
        self._decoder = ObjectDecoder(kind.type)
        self._backoff = backoff or Backoff()
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait  # returns True when stopped
        self._rng = rng or random.Random()
        self._store: dict[str, Any] = {}
        self._store_lock = threading.Lock()
        self._synced = threading.Event()
        self._close_stream: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        #: The resourceVersion to resume the watch from.
        self.resource_version = ""
        #: Counters for logs, metrics and tests.
        self.lists = 0
        self.relists_after_expiry = 0
        self.decode_errors = 0

    # ------------------------------------------------------------------ lifecycle

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def start(self) -> None:
        """Run in a daemon thread (daemon: a hung socket read must never keep the process alive)."""
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.kind.plural}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        close = self._close_stream
        if close is not None:
            with contextlib.suppress(Exception):  # closing from another thread is best effort
                close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ------------------------------------------------------------------ store

    def objects(self) -> list[Any]:
        """A snapshot of the store (what `Handle.lister(kind)` returns)."""
        with self._store_lock:
            return list(self._store.values())

    def get(self, key: str) -> Any | None:
        with self._store_lock:
            return self._store.get(key)

    def __len__(self) -> int:
        return len(self._store)

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                    self._backoff.reset()
                if self._watch():
                    self._backoff.reset()
            except WatchExpired:
                # Our resourceVersion was compacted away: start over from a fresh list, at once.
                log.info("%s: watch expired at resourceVersion %s; relisting", self.kind.plural,
                         self.resource_version)  # fmt: skip
                self.relists_after_expiry += 1
                need_list = True
            except Exception as exc:
                if self._stop.is_set():
                    return
                delay = self._backoff.next()
                log.warning("%s: %s; retrying in %.1f s", self.kind.plural, exc, delay)
                if self._sleep(delay):
                    return

    def _list(self) -> None:
        """LIST every page, then replace the store, delivering the difference.

        The first LIST asks for resourceVersion "0", which the API server answers from its watch
        cache, as client-go's reflector does for its initial list; a relist (after an error or an
        expired watch) reads consistently, as the reflector does once the version it had is gone.
        """
        first = "0" if self.lists == 0 else ""
        items, resource_version = list_objects(self.source, self.kind, self._decode, resource_version=first)
        self.lists += 1
        self._replace(items)
        self.resource_version = resource_version
        self._synced.set()

    def _replace(self, items: list[Any]) -> None:
        """Make the store hold exactly `items`, telling handlers what changed."""
        fresh: dict[str, Any] = {object_key(obj): obj for obj in items}
        with self._store_lock:
            old_store = self._store
            self._store = dict(fresh)
        changes: list[tuple[str, Any, Any]] = []
        for key, obj in fresh.items():
            old = old_store.get(key)
            if old is None:
                changes.append(("add", None, obj))
            elif old.metadata.uid != obj.metadata.uid:
                changes.append(("delete", old, None))  # same name, new object: never an "update"
                changes.append(("add", None, obj))
            elif old.metadata.resource_version != obj.metadata.resource_version:
                changes.append(("update", old, obj))
        for key, old in old_store.items():
            if key not in fresh:
                changes.append(("delete", old, None))  # deleted while we were not watching
        self._deliver(changes)

    def _watch(self) -> bool:
        """One watch request until the server ends it. True if any event arrived."""
        timeout = MIN_WATCH_TIMEOUT + self._rng.randrange(MIN_WATCH_TIMEOUT)
        got_any = False

        def remember_close(close: Callable[[], None]) -> None:
            self._close_stream = close

        try:
            with self.source.watch(
                self.kind,
                resource_version=self.resource_version,
                timeout_seconds=timeout,
                on_open=remember_close,
            ) as lines:
                for line in lines:
                    if self._stop.is_set():
                        return got_any
                    self._handle_line(line)
                    got_any = True
        except ApiError as exc:
            if exc.code == 410:
                raise WatchExpired(str(exc)) from exc
            raise
        finally:
            self._close_stream = None
        return got_any

    def _handle_line(self, line: bytes) -> None:
        try:
            event = _event_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ApiError(0, "BadWatchEvent", f"undecodable watch event: {exc}") from exc
        kind = event.type
        if kind == "BOOKMARK":
            meta = identify(event.object)
            if meta is not None and meta.metadata.resource_version:
                self.resource_version = meta.metadata.resource_version
            return
        if kind == "ERROR":
            err = error_from_body(0, bytes(event.object))
            if err.code == 410 or err.reason in ("Expired", "Gone"):
                raise WatchExpired(err.message)
            raise err
        obj = self._decode(event.object)
        if obj is None:
            meta = identify(event.object)
            if meta is not None and meta.metadata.resource_version:
                self.resource_version = meta.metadata.resource_version
            return
        key = object_key(obj)
        with self._store_lock:
            old = self._store.get(key)
            if kind == "DELETED":
                self._store.pop(key, None)
            else:
                self._store[key] = obj
        if kind == "DELETED":
            self._deliver([("delete", obj, None)])  # the object's final state, as the server sent it
        elif old is None:
            self._deliver([("add", None, obj)])
        elif old.metadata.uid != obj.metadata.uid:
            self._deliver([("delete", old, None), ("add", None, obj)])  # same name, new object
        else:
            self._deliver([("update", old, obj)])
        self.resource_version = obj.metadata.resource_version or self.resource_version

    def _decode(self, raw: bytes | msgspec.Raw) -> Any | None:
        try:
            return self._decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self.decode_errors += 1
            if self._on_decode_error is not None:
                try:
                    self._on_decode_error(bytes(raw), exc)
                except Exception:
                    log.exception("%s: decode error handler failed", self.kind.plural)
            else:
                log.warning("%s: skipping an object that cannot be decoded: %s", self.kind.plural, exc)
            return None

    def _deliver(self, changes: list[tuple[str, Any, Any]]) -> None:
        handlers = self.handlers
        if handlers is None or not changes:
            return

        def batch() -> None:
            for op, old, new in changes:
                try:
                    if op == "add":
                        handlers.on_add(new)
                    elif op == "update":
                        handlers.on_update(old, new)
                    else:
                        handlers.on_delete(old)
                except Exception:
                    log.exception("%s: %s handler failed", self.kind.plural, op)

        self._dispatch(batch)
