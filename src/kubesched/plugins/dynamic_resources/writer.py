"""ResourceClaimWriter: how the plugin writes allocations to the cluster, offered by the Handle.

Separate because it is a contract with the outside (the live client and the in-memory cluster both
implement it), not part of the plugin's decisions.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, ResourceClaim, ResourceClaimConsumerReference

__all__ = ["ResourceClaimWriter"]


@runtime_checkable
class ResourceClaimWriter(Protocol):
    """Writes allocations to the cluster; offered by the Handle (API calls live, the in-memory cluster
    in the simulator). Each call raises with a message on failure (the pod's binding then fails)."""

    def write_claim_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        """Add the finalizer, set `status.allocation` (unless None: already allocated) and add the pod
        (or `consumer`: the pod's PodGroup, for a group's claim) to `status.reservedFor`; return the
        claim as stored. Raises when an allocation is given and the claim has one already."""
        ...

    def remove_claim_reservation(self, claim: ResourceClaim, uid: str) -> None:
        """Remove the consumer with `uid` from `status.reservedFor`: a pod (Unreserve after a failed
        binding), or a PodGroup (its PodGroupPostFilter)."""
        ...

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        """Clear `status.allocation`, `reservedFor` and `devices` (PostFilter); no write, so no
        event, when there is nothing to clear (the API server does not store an unchanged object)."""
        ...

    def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Create `claim` under a name generated from its `generateName`; return it as stored."""
        ...

    def delete_claim(self, claim: ResourceClaim) -> None:
        """Remove the delete-protection finalizer and delete the claim."""
        ...

    def write_extended_resource_claim_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        """Set `pod.status.extendedResourceClaimStatus`."""
        ...

    def pause(self, seconds: float) -> None:
        """Let the cluster move on (live: sleep without holding the scheduler's lock)."""
        ...
