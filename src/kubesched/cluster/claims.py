"""ResourceClaims in the simulator: what kube-controller-manager's resourceclaim controller and the API
server do with them, so a run sees what a cluster would.

* `instantiate_template_claims`: for a pod entry `resourceClaimTemplateName`, the controller creates
  a claim `<pod>-<entry>-<suffix>` from the template (owned by the pod, annotated with the entry
  name) and records it in `pod.status.resourceClaimStatuses`. With DRAWorkloadResourceClaims, an
  entry that matches one of its PodGroup's claims gets the group's claim instead.
* `instantiate_group_claims`: the same for a PodGroup's template entries (`<group>-<entry>-<suffix>`,
  owned by the PodGroup, recorded in `podGroup.status.resourceClaimStatuses`).
* `ClaimStore`: claims by `namespace/name`; the scheduler's writes (finalizer, allocation,
  reservedFor) and the controller's clean-up when a pod goes away (drop the reservation; an
  unreserved claim is deallocated, and a pod's generated claim is deleted).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import msgspec

from kubesched.api.group_claims import matching_group_claim, pod_consumer
from kubesched.api.meta import ObjectMeta, controller_reference, is_controlled_by
from kubesched.api.objects import Pod, PodResourceClaimStatus
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocatedDeviceStatus,
    AllocationResult,
    Condition,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
    ResourceClaimTemplate,
)
from kubesched.api.scheduling_groups import V1BETA1, PodGroup, PodGroupResourceClaimStatus

__all__ = [
    "POD_CLAIM_NAME_ANNOTATION",
    "ClaimConflict",
    "ClaimStore",
    "instantiate_group_claims",
    "instantiate_template_claims",
]

#: Set by the resourceclaim controller on claims it generates: the pod's entry name.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ClaimConflict(Exception):
    """The claim changed under the writer (allocated elsewhere, deleted)."""


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def _from_template(
    templates: Mapping[str, ResourceClaimTemplate],
    template_name: str,
    entry: str,
    owner: ObjectMeta,
    kind: str,
) -> ResourceClaim | None:
    """The claim the controller creates for `owner`'s entry (a Pod's or a PodGroup's) from its
    template: `<owner>-<entry>-<suffix>`, owned by it. None while the template does not exist (the
    controller waits for it, and the pods for their claim)."""
    namespace = owner.namespace or "default"
    template = templates.get(f"{namespace}/{template_name}")
    if template is None:
        return None
    claim_name = f"{f'{owner.name}-{entry}'[:57]}-{_suffix(owner.uid + entry)}"
    meta = template.spec.metadata
    api_version = "v1" if kind == "Pod" else V1BETA1
    return ResourceClaim(
        metadata=ObjectMeta(
            name=claim_name,
            namespace=namespace,
            uid=f"claim-{_suffix(claim_name)}-{hashlib.sha256(claim_name.encode()).hexdigest()[:12]}",
            labels=dict(meta.labels),
            annotations={**meta.annotations, POD_CLAIM_NAME_ANNOTATION: entry},
            owner_references=[controller_reference(api_version, kind, owner.name, owner.uid)],
        ),
        spec=template.spec.spec,
    )


def instantiate_template_claims(
    pod: Pod, templates: Mapping[str, ResourceClaimTemplate], group: PodGroup | None = None
) -> tuple[Pod, list[ResourceClaim]]:
    """The pod with `resourceClaimStatuses` filled, and the claims the controller would create.

    `group`: the pod's PodGroup when DRAWorkloadResourceClaims is on. An entry matching one of its
    claims resolves to the group's claim once that is made (until then the pod waits for it)."""
    known = {s.name for s in pod.status.resource_claim_statuses}
    statuses = list(pod.status.resource_claim_statuses)
    created: list[ResourceClaim] = []
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_template_name
        if not name or entry.name in known:
            continue
        if group is not None and matching_group_claim(entry, group) is not None:
            made = {s.name: s.resource_claim_name for s in group.status.resource_claim_statuses}
            if entry.name in made:
                statuses.append(PodResourceClaimStatus(name=entry.name, resource_claim_name=made[entry.name]))
            continue
        claim = _from_template(templates, name, entry.name, pod.metadata, "Pod")
        if claim is None:
            continue
        created.append(claim)
        statuses.append(PodResourceClaimStatus(name=entry.name, resource_claim_name=claim.metadata.name))
    if len(statuses) == len(pod.status.resource_claim_statuses):
        return pod, []
    status = msgspec.structs.replace(pod.status, resource_claim_statuses=statuses)
    return msgspec.structs.replace(pod, status=status), created


def instantiate_group_claims(
    group: PodGroup, templates: Mapping[str, ResourceClaimTemplate]
) -> tuple[PodGroup, list[ResourceClaim]]:
    """The PodGroup with `resourceClaimStatuses` filled, and the claims the controller would create
    for its template entries (DRAWorkloadResourceClaims on)."""
    known = {s.name for s in group.status.resource_claim_statuses}
    statuses = list(group.status.resource_claim_statuses)
    created: list[ResourceClaim] = []
    for entry in group.spec.resource_claims:
        name = entry.resource_claim_template_name
        if not name or entry.name in known:
            continue
        claim = _from_template(templates, name, entry.name, group.metadata, "PodGroup")
        if claim is None:
            continue
        created.append(claim)
        statuses.append(PodGroupResourceClaimStatus(name=entry.name, resource_claim_name=claim.metadata.name))
    if not created:
        return group, []
    status = msgspec.structs.replace(group.status, resource_claim_statuses=statuses)
    return msgspec.structs.replace(group, status=status), created


def _simulated_driver_statuses(allocation: AllocationResult) -> list[AllocatedDeviceStatus]:
    """The simulator's drivers prepare devices at once: every binding condition is met."""
    return [
        AllocatedDeviceStatus(
            driver=r.driver,
            pool=r.pool,
            device=r.device,
            share_id=r.share_id,
            conditions=[Condition(type=c, status="True", reason="Simulated") for c in r.binding_conditions],
        )
        for r in allocation.devices.results
        if r.binding_conditions
    ]


def _binding_pending(status: ResourceClaimStatus) -> bool:
    """Some device's binding conditions are not all True, and none of its failure conditions is."""
    assert status.allocation is not None
    devices = {(d.driver, d.pool, d.device): d for d in status.devices}
    pending = False
    for r in status.allocation.devices.results:
        if not r.binding_conditions:
            continue
        found = devices.get((r.driver, r.pool, r.device))
        true = {c.type for c in found.conditions if c.status == "True"} if found is not None else set()
        if true.intersection(r.binding_failure_conditions):
            return False  # failed: left as it is (the scheduler deallocates it)
        pending = pending or not true.issuperset(r.binding_conditions)
    return pending


class ClaimStore:
    """Claims by key, with the writes the scheduler and the controller make."""

    def __init__(self, claims: Iterable[ResourceClaim] = ()) -> None:
        self._claims: dict[str, ResourceClaim] = {}
        self._list: list[ResourceClaim] | None = None
        for claim in claims:
            self.put(self._with_uid(claim))

    @staticmethod
    def _with_uid(claim: ResourceClaim) -> ResourceClaim:
        if claim.metadata.uid and claim.metadata.namespace:
            return claim
        meta = msgspec.structs.replace(
            claim.metadata,
            namespace=claim.metadata.namespace or "default",
            uid=claim.metadata.uid or f"claim-{hashlib.sha256(claim.key.encode()).hexdigest()[:16]}",
        )
        return msgspec.structs.replace(claim, metadata=meta)

    def put(self, claim: ResourceClaim) -> None:
        self._claims[claim.key] = claim
        self._list = None

    def get(self, key: str) -> ResourceClaim | None:
        return self._claims.get(key)

    def create(self, claim: ResourceClaim) -> ResourceClaim:
        """Store a new claim named from its `generateName` (as the API server names it)."""
        meta = claim.metadata
        seed = f"{meta.namespace}/{meta.generate_name}{len(self._claims)}"
        name = f"{meta.generate_name}{_suffix(seed)}"
        while f"{meta.namespace}/{name}" in self._claims:
            seed += "+"
            name = f"{meta.generate_name}{_suffix(seed)}"
        stored = msgspec.structs.replace(
            claim,
            metadata=msgspec.structs.replace(
                meta,
                name=name,
                uid=f"claim-{hashlib.sha256(f'{meta.namespace}/{name}'.encode()).hexdigest()[:16]}",
            ),
            status=ResourceClaimStatus(),
        )
        self.put(stored)
        return stored

    def delete(self, key: str) -> ResourceClaim | None:
        self._list = None
        return self._claims.pop(key, None)

    def all(self) -> list[ResourceClaim]:
        """All claims; the same list object while nothing changed."""
        if self._list is None:
            self._list = list(self._claims.values())
        return self._list

    # ------------------------------------------------------------------ scheduler writes
    def write_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        current = self._claims.get(claim.key)
        if current is None or current.metadata.uid != claim.metadata.uid:
            raise ClaimConflict(f"claim {claim.key} got deleted in the meantime")
        status = current.status
        if allocation is not None:
            if status.allocation is not None:
                # Upstream's bindClaim: also when another member of the pod's group wrote the
                # allocation they shared first (this pod's PreBind fails; it binds on its retry).
                raise ClaimConflict(f"claim {claim.key} got allocated elsewhere in the meantime")
            status = msgspec.structs.replace(
                status, allocation=allocation, devices=_simulated_driver_statuses(allocation)
            )
        elif status.allocation is None:
            raise ClaimConflict(f"claim {claim.key} got deallocated in the meantime")
        elif _binding_pending(status):
            # Allocated before the run, still waiting: the simulator's driver prepares it now.
            status = msgspec.structs.replace(status, devices=_simulated_driver_statuses(status.allocation))
        ref = consumer if consumer is not None else pod_consumer(pod)
        if not any(r.uid == ref.uid for r in status.reserved_for):
            status = msgspec.structs.replace(status, reserved_for=[*status.reserved_for, ref])
        meta = current.metadata
        if DELETE_PROTECTION_FINALIZER not in meta.finalizers:
            meta = msgspec.structs.replace(meta, finalizers=[*meta.finalizers, DELETE_PROTECTION_FINALIZER])
        stored = msgspec.structs.replace(current, metadata=meta, status=status)
        self.put(stored)
        return stored

    def remove_reservation(self, claim: ResourceClaim, uid: str) -> ResourceClaim | None:
        current = self._claims.get(claim.key)
        if current is None:
            return None
        kept = [r for r in current.status.reserved_for if r.uid != uid]
        if len(kept) == len(current.status.reserved_for):
            return current
        stored = msgspec.structs.replace(
            current, status=msgspec.structs.replace(current.status, reserved_for=kept)
        )
        self.put(stored)
        return stored

    def deallocate(self, claim: ResourceClaim) -> ResourceClaim | None:
        """The claim with its allocation cleared; the claim as it is when there is nothing to clear
        (the API server keeps an unchanged object as it is: no new version, no event)."""
        current = self._claims.get(claim.key)
        if current is None:
            return None
        if current.status.allocation is None and not current.status.reserved_for:
            return current
        meta = msgspec.structs.replace(
            current.metadata,
            finalizers=[f for f in current.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER],
        )
        stored = msgspec.structs.replace(current, metadata=meta, status=ResourceClaimStatus())
        self.put(stored)
        return stored

    # ------------------------------------------------------------------ controller
    def pod_gone(self, pod: Pod) -> list[tuple[ResourceClaim, ResourceClaim | None]]:
        """What the resourceclaim controller does when `pod` is deleted: (old, new-or-None) per claim."""
        changed: list[tuple[ResourceClaim, ResourceClaim | None]] = []
        for claim in list(self._claims.values()):
            if claim.metadata.namespace != pod.metadata.namespace:
                continue
            owned = is_controlled_by(claim.metadata, pod.metadata.uid)
            reserved = any(r.uid == pod.metadata.uid for r in claim.status.reserved_for)
            if not owned and not reserved:
                continue
            if owned:
                self.delete(claim.key)
                changed.append((claim, None))
                continue
            after = self.remove_reservation(claim, pod.metadata.uid)
            if after is not None and not after.status.reserved_for and after.status.allocation is not None:
                after = self.deallocate(after)
            changed.append((claim, after))
        return changed
