"""DynamicResources in a pod-group cycle: allocations its members share, and claims reserved for
the PodGroup (upstream's `podGroupStateData` and `podResourceClaimBindings`).

A claim one member's Reserve allocated stays pending until PreBind writes it. A later member of the
same cycle that uses the same claim reuses that pending allocation (the claim then counts as
allocated, on the nodes its allocation allows) instead of waiting for it, as a pod outside the cycle
must. With DRAWorkloadResourceClaims on, a pod's entry that stands for one of its PodGroup's claims
is reserved for the PodGroup (one `reservedFor` entry for the whole group) rather than for the pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubesched.api.group_claims import group_consumer, matching_group_claim
from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaimConsumerReference
from kubesched.api.scheduling_groups import PodGroup
from kubesched.framework.cycle_state import CycleState, PodGroupCycleState, pod_group_cycle
from kubesched.plugins.dynamic_resources.claims import ClaimRef
from kubesched.plugins.dynamic_resources.state import PreFilterState

__all__ = ["GroupClaimState", "claim_consumers", "cycle_claim_state", "group_claim_state"]

_KEY = "DynamicResources"


@dataclass(slots=True)
class GroupClaimState:
    """What DynamicResources keeps for one pod-group cycle."""

    #: claim uid -> uids of the members sharing its allocation, pending since a Reserve of this cycle
    pending: dict[str, set[str]] = field(default_factory=dict)
    #: member pod key -> its PreFilter state (the last placement's), for the PodGroupPostFilter:
    #: every member whose PreFilter ran, with claims or not (upstream's podsStateData)
    pods: dict[str, PreFilterState] = field(default_factory=dict)


def cycle_claim_state(cycle: PodGroupCycleState) -> GroupClaimState | None:
    """What the plugin kept in a pod-group cycle (None: no member's PreFilter ran)."""
    found = cycle.data.get(_KEY)
    return found if isinstance(found, GroupClaimState) else None


def group_claim_state(state: CycleState, *, create: bool = False) -> GroupClaimState | None:
    """The cycle's state when `state` is a member's in a pod-group cycle (made on first use with
    `create`: PreFilter); None for a pod scheduled alone, or binding."""
    cycle = pod_group_cycle(state)
    if cycle is None:
        return None
    found = cycle.data.get(_KEY)
    if isinstance(found, GroupClaimState):
        return found
    if not create:
        return None
    made = GroupClaimState()
    cycle.data[_KEY] = made
    return made


def claim_consumers(
    pod: Pod, refs: Sequence[ClaimRef], group: PodGroup | None
) -> dict[str, ResourceClaimConsumerReference]:
    """Claim uid -> the PodGroup, for each of the pod's claims that stands for one of its group's
    claims (same entry name, same claim or template); the others are reserved for the pod."""
    if group is None or not group.spec.resource_claims:
        return {}
    entries = {e.name: e for e in pod.spec.resource_claims}
    out: dict[str, ResourceClaimConsumerReference] = {}
    for ref in refs:
        entry = entries.get(ref.pod_claim_name)
        if entry is not None and matching_group_claim(entry, group) is not None:
            out[ref.claim.metadata.uid or ref.claim.key] = group_consumer(group)
    return out
