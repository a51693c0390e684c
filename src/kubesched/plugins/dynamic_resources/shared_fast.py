"""The shared-capacity filter: one request for consumable capacity, decided for all nodes at once.

Separate because it is kubesched's own shortcut, like `fast_filter.py`, for what that one leaves to
the allocator: devices with `allowMultipleAllocations` (a GPU several pods take shares of). When a
pod's only claim has one plain request and a node publishes nothing but simple shared devices (one
capacity each, no request policy, counters, taints, binding conditions or own node selection, in
complete single-generation pools), the allocator's verdict follows from numbers alone:

* a request for `capacity.requests` X of one device fits where a matching device has X free;
* a request without capacity takes a device's whole capacity, so it needs `count` untouched devices.

A request for capacity on several devices is left to the allocator: whether one request may take
two shares of the same device is the allocator's to say.

Every other node still goes to the allocator, and Reserve runs it on the chosen node, so the devices
a pod gets are the allocator's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api.resource import Device, DeviceClass, DeviceSelector, ResourceClaim
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.plugins.dynamic_resources.allocator_types import AllocationError, DeviceID, nanos
from kubesched.plugins.dynamic_resources.claims import ClaimLedger
from kubesched.plugins.dynamic_resources.match_cache import MatchCache
from kubesched.plugins.dynamic_resources.pools import SliceIndex

__all__ = ["SharedIndex", "SharedRequest", "shared_request"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
#: Capacities beyond this (nano units) are left to the allocator: the arrays are int64.
_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class SharedRequest:
    """The pod's one request: class, selectors, count and the capacity asked (None: whole devices)."""

    cls: DeviceClass
    selectors: Sequence[DeviceSelector]
    count: int
    capacity: tuple[str, int] | None


def shared_request(
    claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass]
) -> SharedRequest | None:
    """The request when the claims are one plain ExactCount request (None: not this filter's case)."""
    if len(claims) != 1:
        return None
    spec = claims[0].spec.devices
    if spec.constraints or spec.config or len(spec.requests) != 1:
        return None
    ex = spec.requests[0].exactly
    if ex is None or ex.admin_access or (ex.allocation_mode or "ExactCount") != "ExactCount":
        return None
    cls = classes.get(ex.device_class_name)
    if cls is None:
        return None
    wanted = ex.capacity.requests if ex.capacity is not None else {}
    if len(wanted) > 1:
        return None
    capacity = None
    if wanted:
        name, value = next(iter(wanted.items()))
        try:
            amount = nanos(value)
        except AllocationError:
            return None
        if not 0 < amount < _LIMIT:
            return None
        capacity = (name, amount)
    count = ex.count if ex.count is not None else 1
    if count < 1 or (capacity is not None and count > 1):
        return None
    return SharedRequest(cls, ex.selectors, count, capacity)


def _simple(device: Device) -> bool:
    if not device.allow_multiple_allocations or len(device.capacity) != 1:
        return False
    cap = next(iter(device.capacity.values()))
    return not (
        cap.request_policy is not None
        or device.consumes_counters
        or device.taints
        or device.binding_conditions
        or device.node_name
        or device.node_selector is not None
        or device.all_nodes
    )


class SharedIndex:
    """The simple shared devices of every node whose devices are all such, with their free capacity."""

    def __init__(self, index: SliceIndex, cache: MatchCache) -> None:
        self.index = index
        self.cache = cache
        self.node_index: dict[str, int] = {}
        ids: list[DeviceID] = []
        node_of: list[int] = []
        totals: list[int] = []
        names: list[str] = []
        inputs: list[Any] = []
        devices: list[tuple[str, Device]] = []
        if not index.other:
            for node, slices in index.by_node.items():
                found = self._node_devices(slices)
                if found is None:
                    continue
                node_id = self.node_index[node] = len(self.node_index)
                for device_id, device in found:
                    ((cap_name, cap),) = device.capacity.items()
                    ids.append(device_id)
                    node_of.append(node_id)
                    totals.append(nanos(cap.value))
                    names.append(cap_name)
                    devices.append((device_id.driver, device))
        self.position = {d: i for i, d in enumerate(ids)}
        self.node_of: IntArray = np.asarray(node_of, dtype=np.int64)
        self.total: IntArray = np.asarray(totals, dtype=np.int64)
        self.capacity_names = names
        self.inputs = [cache.input(driver, device) for driver, device in devices]
        _ = inputs
        self.used: IntArray = np.zeros(len(ids), dtype=np.int64)
        self._ids = ids
        self._ledger: ClaimLedger | None = None
        self._position = -1
        self._verdicts: dict[tuple[Any, ...], tuple[BoolArray, BoolArray]] = {}
        self._named: dict[str, BoolArray] = {}
        self._table_ids: tuple[NodeTable, IntArray] | None = None

    def _node_devices(self, slices: Sequence[Any]) -> list[tuple[DeviceID, Device]] | None:
        out: list[tuple[DeviceID, Device]] = []
        seen: set[DeviceID] = set()
        for slc in slices:
            spec = slc.spec
            key = (spec.driver, spec.pool.name)
            gens = self.index.counts[key]
            if len(gens) != 1 or gens[spec.pool.generation] != spec.pool.resource_slice_count:
                return None
            if spec.per_device_node_selection or spec.shared_counters:
                return None
            for device in spec.devices:
                device_id = DeviceID(spec.driver, spec.pool.name, device.name)
                if (
                    not _simple(device)
                    or device_id in seen
                    or nanos(next(iter(device.capacity.values())).value) >= _LIMIT
                ):
                    return None
                seen.add(device_id)
                out.append((device_id, device))
        return out

    def sync(self, ledger: ClaimLedger) -> None:
        """Capacity in use per device, replaying the ledger's shared changes since the last call."""
        changed: Sequence[DeviceID] | None = None
        if self._ledger is ledger and self._position >= 0:
            changed = ledger.shared_changes_since(self._position)
        state = ledger.state
        if changed is None:
            self.used[:] = 0
            changed = [d for d in state.consumed if d in self.position]
        # Only consumed capacity counts: the allocator never treats a shared device as taken whole.
        for device in changed:
            pos = self.position.get(device)
            if pos is None:
                continue
            amounts = state.consumed.get(device)
            self.used[pos] = amounts.get(self.capacity_names[pos], 0) if amounts else 0
        self._ledger = ledger
        self._position = ledger.shared_log_position

    def _selected(self, request: SharedRequest) -> tuple[BoolArray, BoolArray]:
        """Per device: the selectors accept it, and an evaluation failed on it (memoised per shape)."""
        key = (
            request.cls.metadata.name,
            tuple(s.cel.expression if s.cel is not None else "" for s in request.cls.spec.selectors),
            tuple(s.cel.expression if s.cel is not None else "" for s in request.selectors),
        )
        found = self._verdicts.get(key)
        if found is None:
            ok = np.zeros(len(self.inputs), dtype=np.bool_)
            failed = np.zeros(len(self.inputs), dtype=np.bool_)
            by_input: dict[int, bool | tuple[str, int, str, str]] = {}
            for i, di in enumerate(self.inputs):
                verdict = by_input.get(id(di))
                if verdict is None:
                    verdict = by_input[id(di)] = self.cache.verdict(request.cls, request.selectors, di)
                if verdict is True:
                    ok[i] = True
                elif verdict is not False:
                    failed[i] = True
            found = self._verdicts[key] = (ok, failed)
        return found

    def _node_ids(self, table: NodeTable) -> IntArray:
        """Per row of `table`: its node's position here, -1 for a node whose devices are not all
        simple, -2 for a node without any slice (the allocator would find no pool there). Read
        once per table: a table's nodes never change (a new one is built when nodes do)."""
        if self._table_ids is None or self._table_ids[0] is not table:
            by_node = self.index.by_node
            ids = np.fromiter(
                (self.node_index.get(name, -1 if name in by_node else -2) for name in table.names),
                dtype=np.int64,
                count=len(table.names),
            )
            self._table_ids = (table, ids)
        return self._table_ids[1]

    def decide(self, request: SharedRequest, nodes: NodeSet) -> tuple[BoolArray, BoolArray]:
        """(handled, fits) per node of the set: whether this filter speaks for it, and its verdict."""
        ok, failed = self._selected(request)
        n_nodes = len(self.node_index)
        if request.capacity is None:
            shares = (ok & (self.used == 0)).astype(np.int64)
        else:
            name, amount = request.capacity
            named = self._named.get(name)
            if named is None:
                named = self._named[name] = np.fromiter(
                    (c == name for c in self.capacity_names), dtype=np.bool_, count=len(self.capacity_names)
                )
            shares = np.where(ok & named, (self.total - self.used) // amount, 0)
        per_node = np.bincount(self.node_of, weights=shares, minlength=n_nodes)
        bad = np.bincount(self.node_of, weights=failed, minlength=n_nodes) > 0
        ids = self._node_ids(nodes.table)[nodes.rows]
        known = ids >= 0
        handled = known | ((ids == -2) & (not self.index.other))
        handled[known] &= ~bad[ids[known]]
        fits = np.zeros(len(nodes), dtype=np.bool_)
        fits[known] = per_node[ids[known]] >= request.count
        return handled, fits & handled
