"""The pod's extended-resource claim in a scheduling cycle: whether the pod needs one, and which
claims to allocate on a node once the resources no device plugin serves there are known.

Separate from `extended.py` (pure naming and request building, also used by NodeResourcesFit)
because this is the plugin's per-cycle side of KEP-5004 (upstream: `extendeddynamicresources.go`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.api.objects import ContainerExtendedResourceRequest, Pod
from kubesched.api.quantity import QuantityError
from kubesched.api.resource import DeviceClass, ResourceClaim
from kubesched.api.resources import pod_requests
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.status import Code, Status
from kubesched.plugins.dynamic_resources.extended import (
    BackingClasses,
    backing_classes,
    find_extended_claim,
    in_memory_claim,
    is_dra_extended_resource_name,
    requests_and_mappings,
    with_requests,
)

__all__ = ["ExtendedClaim", "NodeRejected", "claims_on_node", "pod_extended_claim"]


@dataclass(slots=True)
class ExtendedClaim:
    """The pod's extended resources backed by DRA: its claim (in memory, or from an earlier attempt)."""

    claim: ResourceClaim
    #: every extended-resource request of the pod (units), backed or not
    amounts: dict[str, int]
    classes: BackingClasses
    pod: Pod
    #: per set of resources DRA serves on a node: that node's claim and the container mappings
    by_needed: dict[tuple[str, ...], tuple[ResourceClaim, list[ContainerExtendedResourceRequest]]] = field(
        default_factory=dict
    )
    mappings: list[ContainerExtendedResourceRequest] = field(default_factory=list)
    created: ResourceClaim | None = None


class NodeRejected(Exception):
    """A node refused before allocating (extended resources it cannot serve); carries the status."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def pod_extended_claim(
    pod: Pod,
    device_classes: Callable[[], Sequence[DeviceClass]],
    claims: Callable[[], Mapping[str, ResourceClaim]],
) -> ExtendedClaim | None:
    """The pod's extended resources a DeviceClass backs, or None when it requests none.

    Only a name that can be a DRA extended resource can end up backed, so a pod naming none (cpu
    and memory only, the common case) is answered without listing the DeviceClasses."""
    named = {
        r
        for c in (*pod.spec.init_containers, *pod.spec.containers)
        for r in (*c.resources.requests, *c.resources.limits)
        if is_dra_extended_resource_name(r)
    }
    if not named:
        return None
    classes = backing_classes(device_classes())
    if not classes or not any(classes.get(r) is not None for r in named):
        return None  # decided without summing the pod's requests
    try:
        requests = pod_requests(pod)
    except QuantityError:
        return None  # NodeResourcesFit reports the bad quantity
    amounts = {r: q for r, q in requests.items() if q > 0 and is_dra_extended_resource_name(r)}
    if not any(classes.get(r) is not None for r in amounts):
        return None
    claim = find_extended_claim(pod, list(claims().values())) or in_memory_claim(pod)
    return ExtendedClaim(claim, amounts, classes, pod)


def claims_on_node(
    to_allocate: list[ResourceClaim], ext: ExtendedClaim | None, info: NodeInfo
) -> list[ResourceClaim]:
    """The claims to allocate on this node: the user's, plus the extended-resource claim for the
    extended resources no device plugin serves here (upstream `filterExtendedResources`)."""
    if ext is None:
        return to_allocate
    if ext.claim.spec.devices.requests:  # an earlier attempt's claim: PostFilter deletes it
        raise NodeRejected(
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot schedule extended resource claim")
        )
    allocatable = info.allocatable
    needed = []
    for resource in ext.amounts:
        total = allocatable.get(resource, 0)
        if total == 0 and ext.classes.get(resource) is not None:
            needed.append(resource)
        elif resource not in allocatable:
            raise NodeRejected(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot fit resource"))
    if not needed or ext.claim.status.allocation is not None:
        return to_allocate
    key = tuple(sorted(needed))
    found = ext.by_needed.get(key)
    if found is None:
        requests, mappings = requests_and_mappings(ext.pod, key, ext.classes)
        found = ext.by_needed[key] = (with_requests(ext.claim, requests), mappings)
    return [*to_allocate, found[0]]
