"""DynamicResources' cluster events and queueing hints: which changes may let a rejected pod fit.

Separate because the hints are the plugin's contract with the scheduling queue, read against
v1.37.2's `EventsToRegister` and its `isSchedulableAfter*` functions in
`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go` on their own. They need only
the claims the plugin sees (the claim ledger, already updated by the event when a hint runs, as
upstream's assume cache is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from kubesched.plugins.dynamic_resources.claims import may_resolve_to, named_claim_keys, resolve_pod_claims

__all__ = ["ClaimHints"]


class ClaimHints:
    """The registrations and the two hints, over the claims by `namespace/name`."""

    def __init__(self, claims: Callable[[], Mapping[str, ResourceClaim]], accept_group: bool = False) -> None:
        self._claims = claims
        #: DRAWorkloadResourceClaims: a pod's claim may be its PodGroup's.
        self._accept_group = accept_group

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's five rows, in its order; no Pod deletion (a deleted pod's claims are
        deallocated or deleted by the resourceclaim controller, and that claim event queues)."""
        return [
            # Node labels may decide a slice's or an allocation's node selector; new capacity.
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE),
                self.after_claim_change,
                HintIndex(named_claim_keys, self.claim_change_keys),
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.after_target_pod_update,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream `isSchedulableAfterClaimChange`: a deallocation (or the deletion of an allocated
        claim) may free devices for any pod whose claims all exist, with or without claims of its
        own; otherwise only the creation of one of the pod's claims, or a change of its status."""
        if new is None:
            if not isinstance(old, ResourceClaim):
                return QueueingHint.QUEUE  # final state unknown: play safe
            # Deleted: it freed devices only if it still held an allocation.
            return QueueingHint.QUEUE if old.status.allocation is not None else QueueingHint.SKIP
        if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
            return QueueingHint.QUEUE
        claims = self._claims()
        deallocated = old is not None and old.status.allocation is not None and new.status.allocation is None
        if not deallocated and not may_resolve_to(pod, claims, new.metadata.uid):
            # Upstream resolves the pod's claims first, then skips either way: they do not resolve,
            # or none of them is this claim. Every other pending pod takes this exit at each claim
            # event, so it must stay cheap.
            return QueueingHint.SKIP
        resolved = resolve_pod_claims(pod, claims, self._accept_group)
        if isinstance(resolved, str):
            return QueueingHint.SKIP  # still missing a claim: PreEnqueue would stop it again
        if deallocated:
            return QueueingHint.QUEUE
        if not any(ref.claim.metadata.uid == new.metadata.uid for ref in resolved):
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        # The same status: a finalizer or a label changed, nothing the pod waits for.
        return QueueingHint.SKIP if old.status == new.status else QueueingHint.QUEUE

    @staticmethod
    def claim_change_keys(old: Any, new: Any) -> tuple[str, ...] | None:
        """The pods `after_claim_change` can queue, by the claim keys they name: the changed
        claim's own, unless the change may free devices or is not a plain claim change (then any
        pod). Exact while no two claims share a UID, as the API server guarantees."""
        if not isinstance(new, ResourceClaim) or not isinstance(old, ResourceClaim | None):
            return None
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return None
        return (f"{new.metadata.namespace}/{new.metadata.name}",)

    def after_target_pod_update(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream `isSchedulableAfterTargetPodUpdate`: the controller recorded a generated claim in
        the pod's status; queue once every claim of the updated pod exists."""
        if not isinstance(new, Pod):
            return QueueingHint.QUEUE
        if isinstance(resolve_pod_claims(new, self._claims(), self._accept_group), str):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
