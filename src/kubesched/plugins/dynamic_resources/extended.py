"""Extended resources backed by DRA (KEP-5004, GA in v1.37): `nvidia.com/gpu: 2` served from ResourceSlices.

A DeviceClass backs the extended resource named in its `spec.extendedResourceName`, and always the
implicit `deviceclass.resource.kubernetes.io/<class>`. On a node whose allocatable lacks such a
resource (no device plugin serves it there), DynamicResources allocates it instead, through one
claim per pod that the scheduler itself creates in PreBind (`<pod>-extended-resources-<suffix>`,
annotated `resource.kubernetes.io/extended-resource-claim: "true"`, owned by the pod), with one
`exactly` request per container and resource (`container-<i>-request-<j>`), and records in
`pod.status.extendedResourceClaimStatus` which request serves which container.

This module is the pure part: which class backs a resource name, and the requests and mappings a
pod needs on a node. NodeResourcesFit uses `backing_classes` to leave those resources to
DynamicResources on nodes that do not advertise them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from kubesched.api.meta import ObjectMeta, controller_reference
from kubesched.api.objects import Container, ContainerExtendedResourceRequest, Pod
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    IMPLICIT_EXTENDED_RESOURCE_PREFIX,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubesched.api.resources import is_scalar_resource

__all__ = [
    "IN_MEMORY_CLAIM_NAME",
    "BackingClasses",
    "backing_classes",
    "find_extended_claim",
    "in_memory_claim",
    "is_dra_extended_resource_name",
    "requests_and_mappings",
    "with_requests",
]

#: The name of the pod's extended-resource claim before PreBind creates it (not a valid name, on
#: purpose: it can never clash with a real claim).
IN_MEMORY_CLAIM_NAME = "<extended-resources>"
_NANO = 10**9


def is_dra_extended_resource_name(name: str) -> bool:
    """An extended resource name (`domain/name` outside `kubernetes.io/`) or an implicit class name."""
    if name.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX):
        return True
    return "/" in name and "kubernetes.io/" not in name and is_scalar_resource(name)


@dataclass(frozen=True, slots=True)
class BackingClasses:
    """Resource name -> the DeviceClass that backs it."""

    by_resource: Mapping[str, DeviceClass]

    def get(self, resource: str) -> DeviceClass | None:
        return self.by_resource.get(resource)

    def __bool__(self) -> bool:
        return bool(self.by_resource)


#: The last list seen (held, so that its id cannot be reused by a new list), its length, the result.
_cache: tuple[Sequence[DeviceClass], int, BackingClasses] | None = None


def backing_classes(classes: Sequence[DeviceClass]) -> BackingClasses:
    """Which class backs which resource. Several classes naming one `extendedResourceName`: the
    newest wins, ties to the lower name (upstream's arbitration). Memoised for the same list (the
    simulator's; a live informer hands out a new list each time)."""
    global _cache
    if _cache is not None and _cache[0] is classes and _cache[1] == len(classes):
        return _cache[2]
    out: dict[str, DeviceClass] = {}
    explicit: dict[str, DeviceClass] = {}
    for cls in classes:
        out[IMPLICIT_EXTENDED_RESOURCE_PREFIX + cls.metadata.name] = cls
        name = cls.spec.extended_resource_name
        if name:
            best = explicit.get(name)
            if best is None or _better(cls, best):
                explicit[name] = cls
    out.update(explicit)
    result = BackingClasses(out)
    _cache = (classes, len(classes), result)
    return result


def _better(a: DeviceClass, b: DeviceClass) -> bool:
    ta, tb = a.metadata.creation_timestamp or "", b.metadata.creation_timestamp or ""
    if ta != tb:
        return ta > tb  # RFC 3339 UTC timestamps order as text
    return a.metadata.name < b.metadata.name


def find_extended_claim(pod: Pod, claims: Sequence[ResourceClaim]) -> ResourceClaim | None:
    """The extended-resource claim an earlier attempt created for `pod`, if any."""
    for claim in claims:
        if claim.metadata.namespace != pod.metadata.namespace:
            continue
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        if any(
            r.controller and r.name == pod.metadata.name and r.uid == pod.metadata.uid
            for r in claim.metadata.owner_references
        ):
            return claim
    return None


def in_memory_claim(pod: Pod) -> ResourceClaim:
    """The claim PreBind will create for `pod` (no requests yet: Filter fills them per node)."""
    return ResourceClaim(
        metadata=ObjectMeta(
            name=IN_MEMORY_CLAIM_NAME,
            namespace=pod.metadata.namespace,
            uid=f"in-memory-{pod.metadata.uid or pod.key}",
            generate_name=f"{pod.metadata.name}-extended-resources-",
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            owner_references=[
                controller_reference(
                    "v1", "Pod", pod.metadata.name, pod.metadata.uid, block_owner_deletion=None
                )
            ],
        )
    )


def _units(value: str | int | float) -> int | None:
    """A whole-number quantity, or None (upstream's `AsInt64` refusing it: no request)."""
    try:
        nanos = quantity_nanos(value)
    except QuantityError:
        return None
    return nanos // _NANO if nanos % _NANO == 0 else None


def _container_request(
    index: int, container: Container, resource: str, class_name: str, reusable: Sequence[DeviceRequest | None]
) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """The request `container` needs for `resource` beyond what `reusable` requests give it."""
    requests = {**container.resources.limits, **container.resources.requests}  # requests default to limits
    if resource not in requests:
        return None, []
    wanted = _units(requests[resource])
    if not wanted:
        return None, []
    mappings: list[ContainerExtendedResourceRequest] = []
    total = 0
    for other in reusable:
        if other is None or other.exactly is None:
            continue
        total += other.exactly.count or 0
        mappings.append(
            ContainerExtendedResourceRequest(
                container_name=container.name, resource_name=resource, request_name=other.name
            )
        )
        if total >= wanted:
            return None, mappings
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=class_name, allocation_mode=ALLOCATION_MODE_EXACT_COUNT, count=wanted - total
        ),
    )
    mappings.append(
        ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource, request_name=name
        )
    )
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Sequence[str], classes: BackingClasses
) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """The claim's requests for `resources` (served by DRA on this node), and which container uses which.

    Containers are indexed over initContainers then containers. Long-lived containers (regular ones
    and sidecars) each get their own request; a plain init container reuses the requests of the
    long-lived containers after it, and the init containers share the largest of their own requests.
    """
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    n_init = len(pod.spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or (c.restart_policy or "") == "Always"]
    short_lived = [i for i in range(n_init) if i not in long_lived]
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(resources):
        cls = classes.get(resource)
        if cls is None:
            continue
        class_name = cls.metadata.name
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, ())
            long_requests[i] = request
            long_mappings.extend(found)
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            request, found = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or _count(largest) < _count(request):
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [
                msgspec.structs.replace(m, request_name=largest.name) if m.request_name in short_names else m
                for m in short_mappings
            ]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def _count(request: DeviceRequest) -> int:
    return (request.exactly.count or 0) if request.exactly is not None else 0


def with_requests(claim: ResourceClaim, requests: list[DeviceRequest]) -> ResourceClaim:
    """The pod's claim for one node: `claim` with these requests."""
    return msgspec.structs.replace(claim, spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests)))
