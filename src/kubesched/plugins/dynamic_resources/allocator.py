"""The structured-parameters allocator: ResourceSlices, claims and devices in use in; allocations out.

Pure: no cluster, no clock but an optional deadline. It searches as upstream's allocator (the
variant v1.37 runs, with admin access, prioritized lists, partitionable devices, device taints,
consumable capacity and binding conditions) does, so the same inputs give the same devices:

* pools are the slices relevant to the node (`nodeName`, `allNodes`, a matching `nodeSelector`,
  or per-device node selection), grouped by (driver, pool name); the highest `pool.generation` wins;
  a pool is incomplete when fewer slices of that generation exist than `resourceSliceCount`;
  pools are sorted by driver then name, pools with binding-condition devices go last, and slices
  within a pool by name;
* claims in order, their requests in order, each request's devices in pool/slice/device order;
  depth-first with backtracking, and the **first** complete solution wins;
* a device is eligible when it is not in use (unless admin access), its class's and the request's
  CEL selectors all return true (results memoised by device content), per-device node selection
  admits the node, its counters fit (partitionable devices), each NoSchedule/NoExecute taint is
  tolerated, requested capacity fits (consumable capacity), and every constraint of the claim
  (`matchAttribute`, `distinctAttribute`) still holds.

`allocate` returns one AllocationResult per claim, None when the claims do not fit the node, and
raises AllocationError for what upstream reports as an error (CEL failures, a missing class, an
"All" request over a pool being updated, the 32-device limit, ...).

This module is the long-lived entry point; one call's search is `search.py`, and its parts are
`pools.py`, `constraint.py`, `consumable_capacity.py`, `taints.py`, `match_cache.py` and
`requests.py`, as upstream's `structured/` splits the stable allocator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from kubesched.api.objects import Node
from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim
from kubesched.plugins.dynamic_resources.allocator_types import AllocatedState, DeviceID, nanos
from kubesched.plugins.dynamic_resources.match_cache import MatchCache
from kubesched.plugins.dynamic_resources.pools import SliceIndex
from kubesched.plugins.dynamic_resources.preference import DevicePreference
from kubesched.plugins.dynamic_resources.search import Search

__all__ = ["Allocator"]


class Allocator:
    """Allocates claims on one node at a time against fixed slices, classes and devices in use."""

    def __init__(
        self,
        slices: SliceIndex,
        classes: Mapping[str, DeviceClass],
        allocated: AllocatedState,
        *,
        match_cache: MatchCache | None = None,
        share_id: Callable[[str, str, DeviceID], str] | None = None,
    ) -> None:
        self.slices = slices
        self.classes = classes
        self.allocated = allocated
        self.cache = match_cache if match_cache is not None else MatchCache()
        self._share_id = share_id or _default_share_id
        self._consumed_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        #: The order to try a node's devices in (None: upstream's); see `preference.py`.
        self.prefer: DevicePreference | None = None

    # ------------------------------------------------------------------ public
    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        return Search(self, node, claims, deadline).run()

    def counters_in_use(self, driver: str, pool: str) -> dict[str, dict[str, int]]:
        """Counters consumed by the pool's allocated devices (memoised per allocator)."""
        key = (driver, pool)
        found = self._consumed_counters.get(key)
        if found is None:
            found = {}
            for slc in self.slices.pool_slices.get(key, []):
                for device in slc.spec.devices:
                    if not device.consumes_counters:
                        continue
                    if not self.allocated.in_use(DeviceID(driver, pool, device.name)):
                        continue
                    for use in device.consumes_counters:
                        acc = found.setdefault(use.counter_set, {})
                        for name, c in use.counters.items():
                            acc[name] = acc.get(name, 0) + nanos(c.value)
            self._consumed_counters[key] = found
        return found


def _default_share_id(claim: str, request: str, device: DeviceID) -> str:
    """A stable UUID-shaped share id (the cluster would generate a random one)."""
    digest = hashlib.sha256(f"{claim}\x00{request}\x00{device}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
