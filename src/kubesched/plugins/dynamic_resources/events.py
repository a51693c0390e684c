"""DynamicResources' cluster events and queueing hints: which changes may let a rejected pod fit.

Separate because the hints are the plugin's contract with the scheduling queue, read against
upstream's `EventsToRegister` on their own, and they need none of the plugin's state.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource

__all__ = ["events_to_register"]


def events_to_register() -> list[ClusterEventWithHint]:
    """The cluster events that may make a pod DynamicResources rejected schedulable."""
    return [
        ClusterEventWithHint(
            ClusterEvent(
                Resource.NODE,
                ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
            )
        ),
        ClusterEventWithHint(
            ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE),
            _claim_hint,
        ),
        ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
        ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)),
        ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)),
    ]


def _claim_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A pod waits for its own claims; any claim being deallocated may free devices for it."""
    if not pod.spec.resource_claims:
        return QueueingHint.SKIP
    if (
        isinstance(old, ResourceClaim)
        and old.status.allocation is not None
        and (new is None or (isinstance(new, ResourceClaim) and new.status.allocation is None))
    ):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if _own_claim(pod, new if new is not None else old) else QueueingHint.SKIP


def _own_claim(pod: Pod, claim: Any) -> bool:
    if not isinstance(claim, ResourceClaim) or claim.metadata.namespace != pod.metadata.namespace:
        return False
    names = {c.resource_claim_name for c in pod.spec.resource_claims if c.resource_claim_name}
    names |= {s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name}
    return claim.metadata.name in names or any(
        r.uid == pod.metadata.uid for r in claim.metadata.owner_references
    )
