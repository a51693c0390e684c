"""VolumeBinding's PreBind writes in live mode: what upstream's scheduler volume binder sends.

Upstream (`pkg/scheduler/framework/plugins/volumebinding/binder.go`, `BindPodVolumes`) does not bind
claims itself; it hands them to the PV controller (kube-controller-manager) and waits:

* **static binding** - `PUT` the chosen PersistentVolume with `spec.claimRef` set to the claim
  (kind, namespace, name, uid, apiVersion, resourceVersion) and, unless the PV was pre-bound to this
  claim, the annotation `pv.kubernetes.io/bound-by-controller: "yes"` (`GetBindVolumeToClaim`). The
  claim itself is not written: the PV controller sees the claimRef and sets the claim's
  `spec.volumeName`, `pv.kubernetes.io/bind-completed` and both `status.phase: Bound`;
* **dynamic provisioning** - `PUT` the claim with `volume.kubernetes.io/selected-node: <node>`; the
  external provisioner creates a PV on that node and the PV controller binds it;
* then **wait**, polling once a second (`checkBindings`), until every claim is fully bound
  (`spec.volumeName` set and `pv.kubernetes.io/bind-completed` present), failing early when the PV's
  claimRef was reset or the selected-node annotation was removed (the provisioner gave up), and
  with a timeout after `bindTimeoutSeconds`. (Upstream also re-checks a provisioned PV's node
  affinity and that the pod still exists; neither is done here.)

Writes are full-object `PUT`s of the object as just read (unknown fields survive: the raw JSON is
edited, not the lean structs), carrying its `resourceVersion`; a 409 Conflict re-reads and tries
again, so a concurrent status write by the PV controller never fails a binding. A PV that has
meanwhile been claimed by another claim fails the binding instead.

The wait reads through a `VolumeReader`: the live scheduler's informer caches (as upstream reads its
assume caches), with the API server as fallback when PVs/PVCs are not watched. A cached object older
than the one we wrote (smaller `resourceVersion`) is not judged yet.

Every call blocks; `LiveCluster` makes them with the state lock let go.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import msgspec

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cluster.kube.client import ApiError, KubeClient

__all__ = [
    "ANN_BOUND_BY_CONTROLLER",
    "ApiVolumeBinder",
    "ApiVolumeReader",
    "InformerVolumeReader",
    "VolumeBindError",
    "VolumeBindTimeout",
    "VolumeReader",
    "claim_ref",
]

#: Set by the PV controller once a claim's binding is complete.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: Set by the scheduler on a claim it wants provisioned for a node (WaitForFirstConsumer).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: Set on a PV the scheduler (or the PV controller) bound, as opposed to one pre-bound by a user.
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: Upstream polls the caches once a second while waiting for the PV controller.
DEFAULT_POLL_INTERVAL = 1.0
#: Read-modify-write rounds before a stream of 409 Conflicts fails the binding.
MAX_CONFLICT_RETRIES = 5


class VolumeBindError(Exception):
    """A binding that cannot complete: the PreBind of the pod fails and the pod is retried."""


class VolumeBindTimeout(VolumeBindError):
    """The PV controller did not report the claim bound within `bindTimeoutSeconds`."""


class VolumeReader(Protocol):
    """Where the wait reads the current PV and PVC (None: it does not exist)."""

    def pv(self, name: str) -> PersistentVolume | None: ...

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...


class _Client(Protocol):
    """The part of `KubeClient` used here (tests pass a fake)."""

    def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Any: ...

    def put(self, path: str, obj: Any) -> Any: ...


def pv_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


def pvc_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"


def claim_ref(pvc: PersistentVolumeClaim) -> dict[str, str]:
    """The ObjectReference upstream puts in `spec.claimRef` (`reference.GetReference(claim)`)."""
    meta = pvc.metadata
    ref = {
        "kind": "PersistentVolumeClaim",
        "namespace": meta.namespace,
        "name": meta.name,
        "apiVersion": "v1",
    }
    if meta.uid:
        ref["uid"] = meta.uid
    if meta.resource_version:
        ref["resourceVersion"] = meta.resource_version
    return ref


def _names_claim(ref: Mapping[str, Any] | None, pvc: PersistentVolumeClaim) -> bool:
    """Upstream's `IsVolumeBoundToClaim`: same namespace/name, and same UID when the ref has one."""
    if not ref:
        return False
    meta = pvc.metadata
    if ref.get("name") != meta.name or (ref.get("namespace") or "") != meta.namespace:
        return False
    return not ref.get("uid") or ref.get("uid") == meta.uid


def _newer_or_same(cached: str, written: str) -> bool:
    """Is the cached object at least as new as what we wrote? Unparsable versions count as newer."""
    try:
        return int(cached) >= int(written)
    except ValueError:
        return True


def _decode(response: Any) -> dict[str, Any]:
    doc = msgspec.json.decode(response.body)
    if not isinstance(doc, dict):
        raise VolumeBindError(f"expected a JSON object, got {type(doc).__name__}")
    return doc


class ApiVolumeReader:
    """Reads PVs and PVCs straight from the API server (always current, one GET per look)."""

    def __init__(self, client: _Client) -> None:
        self.client = client

    def _get(self, path: str, type_: type[Any]) -> Any | None:
        try:
            return msgspec.json.decode(self.client.get(path).body, type=type_)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def pv(self, name: str) -> PersistentVolume | None:
        found: PersistentVolume | None = self._get(pv_path(name), PersistentVolume)
        return found

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        found: PersistentVolumeClaim | None = self._get(pvc_path(namespace, name), PersistentVolumeClaim)
        return found


class _Store(Protocol):
    @property
    def has_synced(self) -> bool: ...

    def get(self, key: str) -> Any | None: ...


class InformerVolumeReader:
    """Reads from the PersistentVolume / PersistentVolumeClaim informers; `fallback` when one is not
    running or not synced yet. `informers` is looked up on every read (LiveCluster fills it late)."""

    def __init__(self, informers: Mapping[str, _Store], fallback: VolumeReader) -> None:
        self.informers = informers
        self.fallback = fallback

    def _store(self, kind: str) -> _Store | None:
        store = self.informers.get(kind)
        return store if store is not None and store.has_synced else None

    def pv(self, name: str) -> PersistentVolume | None:
        store = self._store("PersistentVolume")
        if store is None:
            return self.fallback.pv(name)
        found = store.get(name)
        return found if isinstance(found, PersistentVolume) else None

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        store = self._store("PersistentVolumeClaim")
        if store is None:
            return self.fallback.pvc(namespace, name)
        found = store.get(f"{namespace}/{name}")
        return found if isinstance(found, PersistentVolumeClaim) else None


class ApiVolumeBinder:
    """The `VolumeBinder` of `kubesched.plugins.volume_binding`, over the API server (module docstring).

    `bind_pvc` / `provision_pvc` write, then wait up to `timeout` seconds; both raise
    `VolumeBindError` (`VolumeBindTimeout` on timeout) or `ApiError`.
    """

    def __init__(
        self,
        client: KubeClient | _Client,
        reader: VolumeReader | None = None,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client: _Client = client
        self.reader: VolumeReader = reader if reader is not None else ApiVolumeReader(client)
        self.poll_interval = poll_interval
        self._clock = clock
        self._sleep = sleep

    # ------------------------------------------------------------------ the VolumeBinder protocol

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        """Set the PV's claimRef to `pvc`, then wait until the PV controller has bound the claim."""
        deadline = self._clock() + timeout
        written = self.write_claim_ref(pvc, pv_name)
        self._wait(lambda: self._static_bound(pvc, pv_name, written), pvc, deadline, timeout)

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        """Annotate the claim with the selected node, then wait until it is provisioned and bound."""
        deadline = self._clock() + timeout
        written = self.write_selected_node(pvc, node_name)
        self._wait(lambda: self._provisioned(pvc, node_name, written), pvc, deadline, timeout)

    # ------------------------------------------------------------------ writes

    def write_claim_ref(self, pvc: PersistentVolumeClaim, pv_name: str) -> str:
        """PUT the PV with our claimRef (no write if it already has it); returns its resourceVersion."""
        path = pv_path(pv_name)

        def edit(doc: dict[str, Any]) -> bool:
            meta = doc.setdefault("metadata", {})
            spec = doc.setdefault("spec", {})
            current = spec.get("claimRef")
            if current and current.get("name") and not _names_claim(current, pvc):
                owner = f"{current.get('namespace', '')}/{current.get('name', '')}"
                raise VolumeBindError(f'persistentvolume "{pv_name}" is already claimed by "{owner}"')
            dirty = False
            if not (
                current
                and current.get("name") == pvc.metadata.name
                and current.get("namespace") == pvc.metadata.namespace
                and current.get("uid", "") == pvc.metadata.uid
            ):
                spec["claimRef"] = claim_ref(pvc)
                dirty = True
            annotations = meta.get("annotations") or {}
            if not _names_claim(current, pvc) and ANN_BOUND_BY_CONTROLLER not in annotations:
                meta["annotations"] = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
                dirty = True
            return dirty

        return self._read_modify_write(path, edit, f'persistentvolume "{pv_name}"')

    def write_selected_node(self, pvc: PersistentVolumeClaim, node_name: str) -> str:
        """PUT the claim with `volume.kubernetes.io/selected-node`; returns its resourceVersion."""
        meta = pvc.metadata
        path = pvc_path(meta.namespace, meta.name)

        def edit(doc: dict[str, Any]) -> bool:
            doc_meta = doc.setdefault("metadata", {})
            if meta.uid and doc_meta.get("uid") not in (None, meta.uid):
                raise VolumeBindError(f'persistentvolumeclaim "{meta.name}" was recreated')
            annotations = doc_meta.get("annotations") or {}
            if annotations.get(ANN_SELECTED_NODE) == node_name:
                return False
            doc_meta["annotations"] = {**annotations, ANN_SELECTED_NODE: node_name}
            return True

        return self._read_modify_write(path, edit, f'persistentvolumeclaim "{meta.name}"')

    def _read_modify_write(self, path: str, edit: Callable[[dict[str, Any]], bool], what: str) -> str:
        """GET, `edit` in place (False: nothing to write), PUT with the read resourceVersion; a 409
        re-reads and edits again."""
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                doc = _decode(self.client.get(path))
            except ApiError as exc:
                if exc.code == 404:
                    raise VolumeBindError(f"{what} not found") from exc
                raise
            if not edit(doc):
                return str(doc.get("metadata", {}).get("resourceVersion", ""))
            try:
                saved = _decode(self.client.put(path, doc))
            except ApiError as exc:
                if exc.code == 409:
                    continue
                raise
            return str(saved.get("metadata", {}).get("resourceVersion", ""))
        raise VolumeBindError(f"updating {what}: still conflicting after {MAX_CONFLICT_RETRIES} attempts")

    # ------------------------------------------------------------------ waiting

    def _wait(
        self, done: Callable[[], bool], pvc: PersistentVolumeClaim, deadline: float, timeout: float
    ) -> None:
        while True:
            if done():
                return
            left = deadline - self._clock()
            if left <= 0:
                raise VolumeBindTimeout(
                    f"timed out after {timeout:g}s waiting for persistentvolumeclaim "
                    f'"{pvc.metadata.namespace}/{pvc.metadata.name}" to be bound'
                )
            self._sleep(min(self.poll_interval, left))

    def _current_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        meta = pvc.metadata
        current = self.reader.pvc(meta.namespace, meta.name)
        if current is None:
            raise VolumeBindError(f'persistentvolumeclaim "{meta.name}" not found')
        if meta.uid and current.metadata.uid and current.metadata.uid != meta.uid:
            raise VolumeBindError(f'persistentvolumeclaim "{meta.name}" was recreated')
        return current

    @staticmethod
    def _fully_bound(pvc: PersistentVolumeClaim) -> bool:
        """Upstream's `isPVCFullyBound`."""
        return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations

    def _static_bound(self, pvc: PersistentVolumeClaim, pv_name: str, written: str) -> bool:
        pv = self.reader.pv(pv_name)
        if pv is None:
            raise VolumeBindError(f'persistentvolume "{pv_name}" not found')
        if written and not _newer_or_same(pv.metadata.resource_version, written):
            return False  # the cache has not seen our write yet
        ref = pv.spec.claim_ref
        if not ref or not ref.get("uid"):
            raise VolumeBindError(f'ClaimRef got reset for pv "{pv_name}"')
        if not _names_claim(ref, pvc):
            owner = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
            raise VolumeBindError(f'persistentvolume "{pv_name}" was bound to "{owner}" instead')
        return self._fully_bound(self._current_claim(pvc))

    def _provisioned(self, pvc: PersistentVolumeClaim, node_name: str, written: str) -> bool:
        current = self._current_claim(pvc)
        if written and not _newer_or_same(current.metadata.resource_version, written):
            return False
        if current.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
            # The provisioner removes the annotation to hand the claim back to the scheduler.
            raise VolumeBindError(f'provisioning failed for PVC "{pvc.metadata.name}"')
        return self._fully_bound(current)
