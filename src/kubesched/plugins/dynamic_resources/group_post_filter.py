"""DynamicResources' PostFilter work on claims, for one pod and for a failed pod-group cycle.

After a pod found no node, an allocated claim that kept it off some node may be holding devices
for nobody: deallocating it lets the next attempt pick devices anew (`release_pod_claims`, upstream's
deallocateOrDeletePodClaims, also the single-pod PostFilter).

After a pod-group cycle failed, the PodGroupPostFilter (upstream's, v1.37.2) first does that for
every unscheduled member whose PreFilter ran in the cycle. When one of them had nothing to release
and DRAWorkloadResourceClaims is on, it cleans up the PodGroup's claims too (`release_group_claims`),
but only while none of the group's pods is assumed or bound: a claim unavailable on some node and
reserved for nobody or for the group alone is deallocated; otherwise the group's own claim, if
allocated and reserved for it, loses the group's `reservedFor` entry. Whatever it did, the plugin
answers Unschedulable, with a text the pod-group cycle appends to the group's status: DefaultPreemption
runs after it and its text follows, unless it ends the run (victims found, or nothing to preempt).

Each write starts from the claim as PreFilter read it, as upstream's do: a claim written once
already in the same run (one shared by two members, say) is refused as the API server refuses a
stale object (`ClaimWrites`).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.group_claims import group_claim_name, is_for_pod_group, is_reserved_for_pod
from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.node_info import pod_key
from kubesched.framework.pod_groups import PodGroupLookup
from kubesched.framework.status import Code, Status
from kubesched.plugins.dynamic_resources.extended import IN_MEMORY_CLAIM_NAME
from kubesched.plugins.dynamic_resources.group import GroupClaimState
from kubesched.plugins.dynamic_resources.state import PreFilterState
from kubesched.plugins.dynamic_resources.writer import ResourceClaimWriter

__all__ = [
    "CLAIMS_RELEASED",
    "GROUP_CLAIM_DEALLOCATED",
    "GROUP_CLAIM_UNRESERVED",
    "ClaimWrites",
    "release_group_claims",
    "release_members_claims",
    "release_pod_claims",
]

#: The PodGroupPostFilter's answer when it did not stop at a group claim.
CLAIMS_RELEASED = "deallocation and deletion of ResourceClaims completed"
GROUP_CLAIM_DEALLOCATED = "deallocation of PodGroup ResourceClaim completed"
GROUP_CLAIM_UNRESERVED = "ResourceClaim unreserved for PodGroup"


class ClaimWrites:
    """The writer, with upstream's optimistic concurrency: a status update carries the version
    PreFilter read, so a second update of a claim that the first one changed is refused."""

    def __init__(self, writer: ResourceClaimWriter | None) -> None:
        self.writer = writer
        self._changed: set[str] = set()

    def deallocate(self, claim: ResourceClaim) -> Status | None:
        """Clear the claim's allocation and reservations; the error when refused."""
        assert self.writer is not None
        if claim.key in self._changed:
            return Status.as_error(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{claim.metadata.name}": '
                "the object has been modified; please apply your changes to the latest version and try again"
            )
        try:
            self.writer.deallocate_claim(claim)
        except Exception as exc:  # the API refused: the pod is retried later
            return Status.as_error(str(exc))
        if claim.status.allocation is not None or claim.status.reserved_for:
            self._changed.add(claim.key)  # an unchanged object keeps its version
        return None


def release_pod_claims(data: PreFilterState, pod: Pod, writes: ClaimWrites) -> tuple[bool, Status]:
    """Deallocate one claim that kept `pod` off a node and is reserved for nobody else, or delete
    an earlier attempt's extended-resource claim. Whether it found one, and the status to report."""
    writer = writes.writer
    if writer is None:
        return False, Status(Code.UNSCHEDULABLE)
    me = pod.metadata.uid
    for pos in sorted(data.unavailable):
        claim = data.refs[pos].claim
        reserved = [r.uid for r in claim.status.reserved_for]
        if reserved and reserved != [me]:
            continue
        refused = writes.deallocate(claim)
        if refused is not None:
            return True, refused
        return True, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    ext = data.extended
    if ext is not None and ext.claim.metadata.name != IN_MEMORY_CLAIM_NAME:
        # An earlier attempt's extended-resource claim: delete it, the next attempt starts anew.
        try:
            writer.delete_claim(ext.claim)
        except Exception as exc:
            return True, Status.as_error(str(exc))
        return True, Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
    return False, Status(Code.UNSCHEDULABLE)


def release_members_claims(
    group: GroupClaimState, members: list[Pod], writes: ClaimWrites
) -> tuple[bool, Status | None]:
    """`release_pod_claims` for each member whose PreFilter ran in the cycle: whether one of them
    had nothing to release, and the first error."""
    nothing_for_one = False
    for pod in members:
        data = group.pods.get(pod_key(pod))
        if data is None:
            continue
        found, status = release_pod_claims(data, pod, writes)
        if status.code == Code.ERROR:
            return nothing_for_one, status
        nothing_for_one = nothing_for_one or not found
    return nothing_for_one, None


def release_group_claims(
    group: GroupClaimState,
    pod: Pod,
    lookup: PodGroupLookup | None,
    claims: Mapping[str, ResourceClaim],
    writes: ClaimWrites,
) -> Status | None:
    """Deallocate or unreserve one of the PodGroup's claims (see the module's docstring); `pod` is
    one unscheduled member. None: nothing done."""
    ref = pod.spec.scheduling_group
    writer = writes.writer
    if ref is None or not ref.pod_group_name or lookup is None or writer is None:
        return None
    namespace = pod.metadata.namespace or "default"
    state = lookup.pod_group_state(namespace, ref.pod_group_name)
    if state is None or state.scheduled_count() > 0:
        return None  # a scheduled pod may use the claims: they stay
    pod_group = state.pod_group
    group_uid = pod_group.metadata.uid if pod_group is not None else None
    for data in group.pods.values():
        for pos in sorted(data.unavailable):
            claim = data.refs[pos].claim
            reserved = claim.status.reserved_for
            if reserved and not (len(reserved) == 1 and reserved[0].uid == group_uid):
                continue
            refused = writes.deallocate(claim)
            return refused if refused is not None else Status(Code.UNSCHEDULABLE, GROUP_CLAIM_DEALLOCATED)
    if pod_group is None:
        return None
    for shared in pod_group.spec.resource_claims:
        named = group_claim_name(pod_group, shared)
        if isinstance(named, str):
            return Status.as_error(named)
        name, from_template = named
        if name is None:
            continue
        stored = claims.get(f"{namespace}/{name}")
        if stored is None:
            return Status.as_error(f'could not find ResourceClaim "{namespace}/{name}"')
        if from_template and not is_for_pod_group(pod_group, stored):
            continue
        if stored.status.allocation is not None and is_reserved_for_pod(pod, stored, True):
            try:
                writer.remove_claim_reservation(stored, pod_group.metadata.uid)
            except Exception:  # tried again on the group's next failed cycle, as upstream
                continue
            return Status(Code.UNSCHEDULABLE, GROUP_CLAIM_UNRESERVED)
    return None
