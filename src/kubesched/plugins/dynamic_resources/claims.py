"""A pod's ResourceClaims and the devices claims hold: what DynamicResources reads from the listers.

* `resolve_pod_claims` finds the claims a pod references (by name, or the claim the resourceclaim
  controller generated from a template), with upstream's reasons when one is missing;
  `may_resolve_to` is its cheap superset test for one claim, for hints that run per pending pod.
* `ClaimLedger` keeps the devices in use — from allocated claims the cluster shows, plus the
  allocations this scheduler has decided but the cluster does not show yet — current incrementally:
  claim objects are compared by identity, so a cycle costs one pass over the list, not a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.api.group_claims import owned_by_pods_group
from kubesched.api.meta import is_controlled_by
from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.plugins.dynamic_resources.allocator_types import AllocatedState, DeviceID

__all__ = [
    "ClaimLedger",
    "ClaimRef",
    "claim_index",
    "may_resolve_to",
    "named_claim_keys",
    "resolve_pod_claims",
]


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """One entry of `pod.spec.resourceClaims` resolved to its claim."""

    pod_claim_name: str
    claim: ResourceClaim
    from_template: bool


def claim_index(claims: Iterable[ResourceClaim]) -> dict[str, ResourceClaim]:
    return {f"{c.metadata.namespace}/{c.metadata.name}": c for c in claims}


def resolve_pod_claims(
    pod: Pod, claims: Mapping[str, ResourceClaim], accept_group: bool = False
) -> list[ClaimRef] | str:
    """The pod's claims in spec order, or the reason one is not usable (UnschedulableAndUnresolvable).

    `accept_group` (DRAWorkloadResourceClaims): a claim made from a template may also be owned by
    the pod's PodGroup (the group's claim, shared by its pods)."""
    out: list[ClaimRef] = []
    namespace = pod.metadata.namespace
    statuses = {s.name: s for s in pod.status.resource_claim_statuses}
    for entry in pod.spec.resource_claims:
        from_template = False
        if entry.resource_claim_name:
            name = entry.resource_claim_name
        elif entry.resource_claim_template_name:
            from_template = True
            status = statuses.get(entry.name)
            if status is None:
                return f'pod "{namespace}/{pod.metadata.name}": ResourceClaim not created yet'
            if status.resource_claim_name is None:
                continue  # the controller decided no claim is needed
            name = status.resource_claim_name
        else:
            continue
        claim = claims.get(f"{namespace}/{name}")
        if claim is None:
            return f'could not find ResourceClaim "{namespace}/{name}"'
        if claim.metadata.deletion_timestamp:
            return f'resourceclaim "{name}" is being deleted'
        if from_template and not is_controlled_by(claim.metadata, pod.metadata.uid):
            group = pod.spec.scheduling_group
            if accept_group and group is not None and group.pod_group_name:
                if owned_by_pods_group(pod, claim):
                    out.append(ClaimRef(entry.name, claim, from_template))
                    continue
                return (
                    f"ResourceClaim {namespace}/{name} was not created for Pod "
                    f"{namespace}/{pod.metadata.name} (neither Pod nor PodGroup {group.pod_group_name} "
                    "is the owner)"
                )
            return (
                f"ResourceClaim {namespace}/{name} was not created for Pod {namespace}/{pod.metadata.name} "
                "(Pod is not owner)"
            )
        out.append(ClaimRef(entry.name, claim, from_template))
    return out


def may_resolve_to(pod: Pod, claims: Mapping[str, ResourceClaim], uid: str) -> bool:
    """Could `resolve_pod_claims(pod, claims)` return the claim with this UID? False only when no
    claim the pod names has it; it skips the checks that reject a claim, so True may still be no."""
    for key in named_claim_keys(pod):
        claim = claims.get(key)
        if claim is not None and claim.metadata.uid == uid:
            return True
    return False


def named_claim_keys(pod: Pod) -> list[str]:
    """`namespace/name` of each claim the pod names: directly, or through a template whose
    generated claim its status records."""
    namespace = pod.metadata.namespace
    statuses = pod.status.resource_claim_statuses
    keys: list[str] = []
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_name:
            keys.append(f"{namespace}/{entry.resource_claim_name}")
        elif entry.resource_claim_template_name:
            keys.extend(
                f"{namespace}/{s.resource_claim_name}"
                for s in statuses
                if s.name == entry.name and s.resource_claim_name
            )
    return keys


def _contribution(
    allocation: AllocationResult | None,
) -> tuple[list[DeviceID], dict[DeviceID, dict[str, int]]]:
    """Devices an allocation holds whole, and capacity it consumes of shared devices."""
    exclusive: list[DeviceID] = []
    shared: dict[DeviceID, dict[str, int]] = {}
    if allocation is None:
        return exclusive, shared
    for r in allocation.devices.results:
        if r.admin_access:
            continue  # admin access never marks a device allocated
        device = DeviceID(r.driver, r.pool, r.device)
        if r.share_id:
            acc = shared.setdefault(device, {})
            for name, value in r.consumed_capacity.items():
                try:
                    acc[name] = acc.get(name, 0) + quantity_nanos(value)
                except QuantityError:
                    continue
        else:
            exclusive.append(device)
    return exclusive, shared


@dataclass(slots=True)
class _Entry:
    claim: ResourceClaim | None
    exclusive: list[DeviceID]
    shared: dict[DeviceID, dict[str, int]]


@dataclass(slots=True)
class ClaimLedger:
    """Devices in use, from listed claims and from allocations not (yet) visible in the listers.

    `pending[uid]`: allocations made by Reserve (in flight) or written by PreBind but not yet seen
    through the lister. A pending entry wins over the listed claim until the listed claim itself
    shows an allocation.
    """

    state: AllocatedState = field(default_factory=AllocatedState)
    #: the listed claims by `namespace/name`
    by_key: dict[str, ResourceClaim] = field(default_factory=dict)
    _by_id: dict[int, tuple[str, str, _Entry]] = field(default_factory=dict)
    _uids: dict[str, _Entry] = field(default_factory=dict)
    _last_list: Sequence[ResourceClaim] | None = None
    _event_driven: bool = False
    _pending: dict[str, tuple[str, AllocationResult]] = field(default_factory=dict)
    _pending_entries: dict[str, _Entry] = field(default_factory=dict)
    #: pods beyond the first sharing a pending allocation (a group's members, in one pod-group cycle)
    _sharers: dict[str, int] = field(default_factory=dict)
    _counts: dict[DeviceID, int] = field(default_factory=dict)
    #: bumped on every change to the devices in use
    version: int = 0
    #: (device, +1/-1) changes, for incremental readers (the fast filter's free-device mask)
    log: list[tuple[DeviceID, int]] = field(default_factory=list)
    log_start: int = 0
    #: shared devices whose consumed capacity changed, in order (for the shared-capacity filter)
    shared_log: list[DeviceID] = field(default_factory=list)
    shared_log_start: int = 0

    def sync(self, claims: Sequence[ResourceClaim]) -> None:
        """Catch up with the listed claims. Claims are immutable structs, so only objects not seen
        before (by identity) are read: a cycle costs two set differences, not a pass in Python."""
        if claims is self._last_list or (self._event_driven and self._last_list is not None):
            return  # unchanged, or kept current by `observe` since the first full pass
        current = {id(c): c for c in claims}
        known = self._by_id
        gone = known.keys() - current.keys()
        for new in current.keys() - known.keys():
            claim = current[new]
            uid = claim.metadata.uid or claim.key
            exclusive, shared = _contribution(claim.status.allocation)
            entry = _Entry(claim, exclusive, shared)
            known[new] = (uid, claim.key, entry)
            self._uids[uid] = entry
            self.by_key[claim.key] = claim
            self._apply(entry, +1)
            if claim.status.allocation is not None:
                self._drop_pending(uid)
        for old in gone:
            uid, key, entry = known.pop(old)
            self._apply(entry, -1)
            if self.by_key.get(key) is entry.claim:
                del self.by_key[key]
            if self._uids.get(uid) is entry:  # deleted, not replaced by a newer version
                del self._uids[uid]
                self._drop_pending(uid)
        self._last_list = claims

    @property
    def listing_needed(self) -> bool:
        """False once claim events keep the ledger current: `sync` would ignore the list, and
        listing every claim per cycle costs O(claims) in the lister."""
        return not (self._event_driven and self._last_list is not None)

    def observe(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        """A claim event (add: old None; delete: new None): applied at once, after which listing is
        no longer needed to stay current."""
        self._event_driven = True
        if old is not None:
            found = self._by_id.pop(id(old), None)
            stored = self.by_key.get(old.key) if found is None else None
            if stored is not None and stored.metadata.uid == old.metadata.uid:
                # Not the object delivered before: a live watch's DELETED event carries the final
                # state decoded anew. The claim stored under its key is the one to take out.
                found = self._by_id.pop(id(stored), None)
            if found is not None:
                uid, key, entry = found
                self._apply(entry, -1)
                if self.by_key.get(key) is entry.claim:
                    del self.by_key[key]
                if self._uids.get(uid) is entry and new is None:
                    del self._uids[uid]
                    self._drop_pending(uid)
        if new is not None and id(new) not in self._by_id:
            uid = new.metadata.uid or new.key
            exclusive, shared = _contribution(new.status.allocation)
            entry = _Entry(new, exclusive, shared)
            self._by_id[id(new)] = (uid, new.key, entry)
            self._uids[uid] = entry
            self.by_key[new.key] = new
            self._apply(entry, +1)
            if new.status.allocation is not None:
                self._drop_pending(uid)

    def add_pending(self, uid: str, owner: str, allocation: AllocationResult) -> None:
        """Reserve decided `allocation` for claim `uid` (owner: the pod's key)."""
        self._drop_pending(uid)
        exclusive, shared = _contribution(allocation)
        entry = _Entry(None, exclusive, shared)
        self._pending[uid] = (owner, allocation)
        self._pending_entries[uid] = entry
        self._apply(entry, +1)

    def share_pending(self, uid: str) -> None:
        """One more pod uses the allocation pending for claim `uid` (upstream's in-flight sharers):
        it stays pending until each of them is unreserved, or the cluster shows it."""
        if uid in self._pending:
            self._sharers[uid] = self._sharers.get(uid, 0) + 1

    def pending_owner(self, uid: str) -> str | None:
        found = self._pending.get(uid)
        return found[0] if found is not None else None

    def pending_allocation(self, uid: str) -> AllocationResult | None:
        found = self._pending.get(uid)
        return found[1] if found is not None else None

    def drop_pending(self, uid: str) -> bool:
        """One pod lets go of the pending allocation; True when that was the last one."""
        shared = self._sharers.get(uid, 0)
        if shared:
            if shared == 1:
                del self._sharers[uid]
            else:
                self._sharers[uid] = shared - 1
            return False
        found = uid in self._pending
        self._drop_pending(uid)
        return found

    def rename_pending(self, old: str, new: str) -> None:
        """The claim pending as `old` was created under uid `new` (the extended-resource claim gets
        its uid from the API server): keep it pending until the listed claim shows its allocation."""
        found = self._pending.pop(old, None)
        if found is None:
            return
        self._pending[new] = found
        self._pending_entries[new] = self._pending_entries.pop(old)
        listed = self._uids.get(new)
        if listed is not None and listed.claim is not None and listed.claim.status.allocation is not None:
            self._drop_pending(new)  # the cluster already shows it

    def _drop_pending(self, uid: str) -> None:
        self._sharers.pop(uid, None)
        if self._pending.pop(uid, None) is not None:
            self._apply(self._pending_entries.pop(uid), -1)

    def _apply(self, entry: _Entry, sign: int) -> None:
        if not entry.exclusive and not entry.shared:
            return
        state = self.state
        for device in entry.exclusive:
            count = self._counts.get(device, 0) + sign
            if count > 0:
                self._counts[device] = count
                if count == 1 and sign > 0:
                    state.exclusive.add(device)
                    self.log.append((device, +1))
            else:
                self._counts.pop(device, None)
                state.exclusive.discard(device)
                self.log.append((device, -1))
        for device, amounts in entry.shared.items():
            acc = state.consumed.setdefault(device, {})
            for name, value in amounts.items():
                acc[name] = acc.get(name, 0) + sign * value
            if not any(acc.values()):
                del state.consumed[device]
            self.shared_log.append(device)
        if len(self.log) > _LOG_LIMIT:
            drop = len(self.log) // 2
            del self.log[:drop]
            self.log_start += drop
        if len(self.shared_log) > _LOG_LIMIT:
            drop = len(self.shared_log) // 2
            del self.shared_log[:drop]
            self.shared_log_start += drop
        self.version += 1

    @property
    def log_position(self) -> int:
        return self.log_start + len(self.log)

    @property
    def shared_log_position(self) -> int:
        return self.shared_log_start + len(self.shared_log)

    def shared_changes_since(self, position: int) -> list[DeviceID] | None:
        """Shared devices whose consumption changed since `position` (None: some were dropped)."""
        if position < self.shared_log_start:
            return None
        return self.shared_log[position - self.shared_log_start :]

    def changes_since(self, position: int) -> list[tuple[DeviceID, int]] | None:
        """Device changes since `position` (None: some were dropped; the reader starts over)."""
        if position < self.log_start:
            return None
        return self.log[position - self.log_start :]


_LOG_LIMIT = 100_000
