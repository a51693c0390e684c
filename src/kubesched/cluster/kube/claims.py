"""DynamicResources' writes in live mode: what upstream's scheduler sends for a ResourceClaim.

PreBind, per claim the pod uses (upstream `bindClaim`):

1. if the claim lacks the finalizer `resource.kubernetes.io/delete-protection`, `PUT` the claim with it
   added (so the claim cannot vanish while devices are allocated);
2. `PUT .../status` with `status.allocation` set (for a claim still unallocated; with
   `allocationTimestamp`, as v1.37.2 writes it) and the pod appended to
   `status.reservedFor` as `{resource: pods, name, uid}`.

Both carry the resourceVersion just read; a 409 Conflict re-reads and tries again, unless the claim
meanwhile got allocated differently (`claim <ns>/<name> got allocated elsewhere in the meantime`) or
deleted (`... got deleted in the meantime`), which fail the binding. The raw JSON is edited, not
the lean structs, so fields kubesched does not model survive. Unreserve removes the pod from
`reservedFor`; PostFilter clears a claim's allocation. Every call blocks (the caller lets go of its
state lock).
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.api.group_claims import pod_consumer
from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from kubesched.cluster.kube.client import ApiError, KubeClient

__all__ = ["ApiClaimWriter", "ClaimWriteError"]

#: Attempts at a write that keeps meeting 409 Conflict (another writer between our read and write).
MAX_CONFLICT_RETRIES = 5


class ClaimWriteError(Exception):
    """The claim cannot be written as the scheduler decided (changed, deleted, refused)."""


def _path(namespace: str, name: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiClaimWriter:
    def __init__(self, client: KubeClient, *, now: Callable[[], float]) -> None:
        self._client = client
        self._now = now

    # ------------------------------------------------------------------ reads
    def _read(self, claim: ResourceClaim) -> dict[str, Any]:
        try:
            raw: dict[str, Any] = self._client.get(
                _path(claim.metadata.namespace, claim.metadata.name)
            ).decode()
        except ApiError as err:
            if err.code == 404:
                raise ClaimWriteError(f"claim {claim.key} got deleted in the meantime") from None
            raise
        if claim.metadata.uid and raw.get("metadata", {}).get("uid") != claim.metadata.uid:
            raise ClaimWriteError(f"claim {claim.key} got deleted in the meantime")
        return raw

    def _retrying(
        self, claim: ResourceClaim, change: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> ResourceClaim:
        """Read, let `change` edit the raw object (None: nothing to write), write; retry on conflict."""
        for _ in range(MAX_CONFLICT_RETRIES):
            raw = self._read(claim)
            try:
                written = change(raw)
            except ApiError as err:
                if err.code == 409:
                    continue
                raise
            return msgspec.convert(written if written is not None else raw, ResourceClaim)
        raise ClaimWriteError(f"claim {claim.key}: too many conflicting updates")

    # ------------------------------------------------------------------ writes
    def write_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        path = _path(claim.metadata.namespace, claim.metadata.name)
        wanted = msgspec.to_builtins(allocation) if allocation is not None else None

        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            status = raw.setdefault("status", {})
            current = status.get("allocation")
            if wanted is not None and current is not None:
                # As upstream's bindClaim, even when it is the allocation this pod reused from
                # another member of its group, which wrote it first.
                raise ClaimWriteError(f"claim {claim.key} got allocated elsewhere in the meantime")
            if wanted is None and current is None:
                raise ClaimWriteError(f"claim {claim.key} got deallocated in the meantime")
            meta = raw.setdefault("metadata", {})
            finalizers = meta.setdefault("finalizers", [])
            if DELETE_PROTECTION_FINALIZER not in finalizers:
                finalizers.append(DELETE_PROTECTION_FINALIZER)
                raw = self._client.put(path, raw).decode()
                status = raw.setdefault("status", {})
            reserved = status.setdefault("reservedFor", [])
            changed = False
            if status.get("allocation") is None and wanted is not None:
                status["allocation"] = {**wanted, "allocationTimestamp": _timestamp(self._now())}
                changed = True
            ref = consumer if consumer is not None else pod_consumer(pod)
            if not any(r.get("uid") == ref.uid for r in reserved):
                reserved.append({k: v for k, v in msgspec.to_builtins(ref).items() if v})
                changed = True
            if not changed:
                return raw
            out: dict[str, Any] = self._client.put(f"{path}/status", raw).decode()
            return out

        return self._retrying(claim, change)

    def remove_reservation(self, claim: ResourceClaim, uid: str) -> None:
        path = _path(claim.metadata.namespace, claim.metadata.name)

        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            status = raw.get("status") or {}
            reserved = status.get("reservedFor") or []
            kept = [r for r in reserved if r.get("uid") != uid]
            if len(kept) == len(reserved):
                return None
            status["reservedFor"] = kept
            out: dict[str, Any] = self._client.put(f"{path}/status", raw).decode()
            return out

        with contextlib.suppress(ClaimWriteError):  # deleted meanwhile: nothing left to unreserve
            self._retrying(claim, change)

    def create(self, claim: ResourceClaim) -> ResourceClaim:
        """POST the claim; the API server names it from `generateName`."""
        body: dict[str, Any] = msgspec.to_builtins(claim)
        meta = body.setdefault("metadata", {})
        for key in ("name", "uid", "resourceVersion"):
            meta.pop(key, None)
        body.pop("status", None)
        namespace = claim.metadata.namespace
        try:
            raw = self._client.post(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", body)
        except ApiError as err:
            raise ClaimWriteError(f"create claim for extended resources {claim.key}: {err}") from None
        return msgspec.convert(raw.decode(), ResourceClaim)

    def delete(self, claim: ResourceClaim) -> None:
        """Drop the delete-protection finalizer (PUT, retried on conflict), then DELETE."""
        path = _path(claim.metadata.namespace, claim.metadata.name)

        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            finalizers = raw.get("metadata", {}).get("finalizers") or []
            if DELETE_PROTECTION_FINALIZER not in finalizers:
                return None
            raw["metadata"]["finalizers"] = [f for f in finalizers if f != DELETE_PROTECTION_FINALIZER]
            out: dict[str, Any] = self._client.put(path, raw).decode()
            return out

        try:
            self._retrying(claim, change)
        except ClaimWriteError:
            return  # already gone
        try:
            self._client.delete(path)
        except ApiError as err:
            if err.code != 404:
                raise

    def write_pod_extended_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        """Merge-patch `status.extendedResourceClaimStatus` of the pod."""
        path = f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}/status"
        patch = {"status": {"extendedResourceClaimStatus": msgspec.to_builtins(status)}}
        try:
            self._client.patch(path, patch)
        except ApiError as err:
            raise ClaimWriteError(f"update pod {pod.key} ExtendedResourceClaimStatus: {err}") from None

    def deallocate(self, claim: ResourceClaim) -> None:
        path = _path(claim.metadata.namespace, claim.metadata.name)

        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            status = raw.get("status") or {}
            if not status.get("allocation") and not status.get("reservedFor"):
                return None
            for key in ("allocation", "reservedFor", "devices"):
                status.pop(key, None)
            raw["status"] = status
            out: dict[str, Any] = self._client.put(f"{path}/status", raw).decode()
            return out

        self._retrying(claim, change)
