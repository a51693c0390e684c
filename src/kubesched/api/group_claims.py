"""ResourceClaims shared by the pods of a PodGroup (DRAWorkloadResourceClaims): which claim a pod's
entry stands for, and to whom the claim is reserved.

A PodGroup's `spec.resourceClaims` names claims its pods may share. A pod's entry of
`spec.resourceClaims` stands for the group's claim when it has the same name and names the same
ResourceClaim or ResourceClaimTemplate; such a claim is reserved for the PodGroup (one `reservedFor`
entry `{apiGroup: scheduling.k8s.io, resource: podgroups}`) rather than for each pod. A claim made
from a group's template is owned by the PodGroup, and the resourceclaim controller points the pods'
`status.resourceClaimStatuses` at it.

Kept in `api/` because the simulated controllers, the clusters and DynamicResources all ask these
questions (upstream: `k8s.io/dynamic-resource-allocation/resourceclaim`).
"""

from __future__ import annotations

from typing import Final

from kubesched.api.meta import controller_of
from kubesched.api.objects import Pod, PodResourceClaim
from kubesched.api.resource import ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.scheduling_groups import SCHEDULING_GROUP, PodGroup, PodGroupResourceClaim

__all__ = [
    "GROUP_CLAIMS",
    "POD_GROUPS_RESOURCE",
    "group_claim_name",
    "group_consumer",
    "is_for_pod_group",
    "is_reserved_for_pod",
    "matching_group_claim",
    "owned_by_pods_group",
    "pod_consumer",
]

#: The feature gate that turns group claims on (scheduler and resourceclaim controller).
GROUP_CLAIMS: Final = "DRAWorkloadResourceClaims"
#: The `resource` of a PodGroup's `reservedFor` entry.
POD_GROUPS_RESOURCE: Final = "podgroups"


def matching_group_claim(entry: PodResourceClaim, group: PodGroup) -> PodGroupResourceClaim | None:
    """The group's claim the pod's entry stands for: same name, same claim or template."""
    for shared in group.spec.resource_claims:
        if (
            shared.name == entry.name
            and shared.resource_claim_name == entry.resource_claim_name
            and shared.resource_claim_template_name == entry.resource_claim_template_name
        ):
            return shared
    return None


def group_consumer(group: PodGroup) -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(
        api_group=SCHEDULING_GROUP,
        resource=POD_GROUPS_RESOURCE,
        name=group.metadata.name,
        uid=group.metadata.uid,
    )


def pod_consumer(pod: Pod) -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)


def group_claim_name(group: PodGroup, shared: PodGroupResourceClaim) -> tuple[str | None, bool] | str:
    """(claim name, made from a template) for one of the group's claims; None: the controller
    decided no claim is needed. A string: the template's claim is not made yet (the reason)."""
    if shared.resource_claim_name:
        return shared.resource_claim_name, False
    for status in group.status.resource_claim_statuses:
        if status.name == shared.name:
            return status.resource_claim_name, True
    namespace = group.metadata.namespace or "default"
    return f"PodGroup {namespace}/{group.metadata.name}: ResourceClaim not created yet"


def owned_by_pods_group(pod: Pod, claim: ResourceClaim) -> bool:
    """The claim's controller is the PodGroup the pod belongs to (by name and API group)."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return False
    ref = controller_of(claim.metadata)
    return (
        ref is not None
        and ref.kind == "PodGroup"
        and ref.name == group.pod_group_name
        and ref.api_version.startswith(SCHEDULING_GROUP + "/")
    )


def is_for_pod_group(group: PodGroup, claim: ResourceClaim) -> bool:
    """The claim was made for this PodGroup (same namespace, controlled by it)."""
    ref = controller_of(claim.metadata)
    same_namespace = (claim.metadata.namespace or "default") == (group.metadata.namespace or "default")
    return same_namespace and ref is not None and ref.uid == group.metadata.uid


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim, accept_group: bool) -> bool:
    """The claim is reserved for the pod, or (`accept_group`) for the PodGroup it belongs to."""
    group = pod.spec.scheduling_group
    group_name = group.pod_group_name if group is not None else None
    for ref in claim.status.reserved_for:
        if ref.uid == pod.metadata.uid:
            return True
        if (
            accept_group
            and group_name
            and ref.api_group == SCHEDULING_GROUP
            and ref.resource == POD_GROUPS_RESOURCE
            and ref.name == group_name
        ):
            return True
    return False
