"""DeviceState: what every profile's DynamicResources shares, built from the listed slices.

Separate because it outlives one plugin instance (the Handle's shared state holds it for all
profiles), as upstream's plugins share the DRA manager (`dra_manager.go`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.resource import DeviceTaintRule, ResourceSlice
from kubesched.plugins.dynamic_resources.claims import ClaimLedger
from kubesched.plugins.dynamic_resources.device_table import DeviceTable
from kubesched.plugins.dynamic_resources.match_cache import MatchCache
from kubesched.plugins.dynamic_resources.pools import SliceIndex
from kubesched.plugins.dynamic_resources.shared_fast import SharedIndex

__all__ = ["DeviceState", "fingerprint"]


class DeviceState:
    """What every profile's DynamicResources shares, as upstream's plugins share the DRA manager:
    the devices in use (so two profiles never hand out one device), selector results, and the
    slice index and device table built from the listed slices."""

    def __init__(self) -> None:
        self.ledger = ClaimLedger()
        self.match_cache = MatchCache()
        self._seen: tuple[int, int, int] | None = None
        self._slices: Sequence[ResourceSlice] | None = None
        self._rules: Sequence[DeviceTaintRule] | None = None
        self._index: SliceIndex | None = None
        self._table: DeviceTable | None = None
        self._shared: SharedIndex | None = None

    def slice_index(self, slices: Sequence[ResourceSlice], rules: Sequence[DeviceTaintRule]) -> SliceIndex:
        if self._index is not None and slices is self._slices and rules is self._rules:
            return self._index  # the same lists: nothing changed (the simulator keeps its lists)
        seen = (fingerprint(slices), len(slices), fingerprint(rules))
        if self._index is None or seen != self._seen:
            self._index = SliceIndex(slices, rules)
            self._table = None
            self._seen = seen
        self._slices, self._rules = slices, rules
        return self._index

    def shared_index(self, index: SliceIndex) -> SharedIndex:
        """The shared-capacity filter's devices, with their capacity in use brought up to date."""
        if self._shared is None or self._shared.index is not index:
            self._shared = SharedIndex(index, self.match_cache)
        self._shared.sync(self.ledger)
        return self._shared

    def device_table(self, index: SliceIndex) -> DeviceTable:
        if self._table is None or self._table.index is not index:
            self._table = DeviceTable(index, self.match_cache)
        self._table.sync_free(self.ledger)
        return self._table


def fingerprint(objects: Sequence[Any]) -> int:
    """Changes when any object of the list is replaced (objects are immutable structs)."""
    return hash(tuple(id(o) for o in objects))
