"""Node-local devices as columns, so Filter can count a request's eligible free devices on every node at once.

The allocator decides one node at a time; running it on 5,000 nodes for every pod costs seconds.
For the requests that make up nearly every GPU pod (ExactCount or `firstAvailable` of ExactCount,
no constraints, no admin access, no capacity requests) feasibility on a node is "enough free
devices that pass the selectors", which is one numpy count over all devices. The table knows which
nodes it cannot speak for — pools that are incomplete, span generations or are invalid, devices with
counters, shared capacity, binding conditions, taints or their own node selection, and any slice
that is not local to one node — and those nodes, like every node of a pod with several requests,
are decided by the allocator itself. The allocator also makes the final choice in Reserve, so the
devices chosen are always upstream's first solution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.resource import DeviceClass, DeviceSelector
from kubesched.cel import CELError, DeviceInput
from kubesched.framework.node_table import NodeTable
from kubesched.plugins.dynamic_resources.allocator import DeviceID, MatchCache, SliceIndex
from kubesched.plugins.dynamic_resources.claims import ClaimLedger

__all__ = ["DeviceTable", "RequestMatch"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(slots=True)
class RequestMatch:
    """Per device content: does it pass the request's selectors, did evaluation fail."""

    ok: BoolArray
    failed: BoolArray


class DeviceTable:
    def __init__(self, index: SliceIndex, cache: MatchCache) -> None:
        self.index = index
        self.cache = cache
        self.usable = not index.other
        self.ids: list[DeviceID] = []
        self.position: dict[DeviceID, int] = {}
        self.nodes: list[str] = []
        node_index: dict[str, int] = {}
        node_ids: list[int] = []
        contents: list[int] = []
        content_index: dict[tuple[object, ...], int] = {}
        self.inputs: list[DeviceInput] = []
        complex_nodes: set[str] = set()
        for node_name, slices in index.by_node.items():
            node_id = node_index.setdefault(node_name, len(self.nodes))
            if node_id == len(self.nodes):
                self.nodes.append(node_name)
            pools: dict[tuple[str, str], list[int]] = {}
            for slc in slices:
                pools.setdefault((slc.spec.driver, slc.spec.pool.name), []).append(slc.spec.pool.generation)
            for (driver, pool), generations in pools.items():
                gens = index.counts[(driver, pool)]
                expected = next(
                    s.spec.pool.resource_slice_count
                    for s in slices
                    if (s.spec.driver, s.spec.pool.name) == (driver, pool)
                )
                if (
                    len(set(generations)) > 1
                    or max(gens) != generations[0]
                    or gens[generations[0]] != expected
                ):
                    complex_nodes.add(node_name)
            names: set[tuple[str, str, str]] = set()
            for slc in slices:
                if slc.spec.per_device_node_selection or slc.spec.shared_counters:
                    complex_nodes.add(node_name)
                for device in slc.spec.devices:
                    device_id = DeviceID(slc.spec.driver, slc.spec.pool.name, device.name)
                    key = (device_id.driver, device_id.pool, device_id.device)
                    if key in names:
                        complex_nodes.add(node_name)
                    names.add(key)
                    if (
                        device.consumes_counters
                        or device.allow_multiple_allocations
                        or device.binding_conditions
                        or device.taints
                        or device.node_name
                        or device.node_selector is not None
                        or device.all_nodes
                    ):
                        complex_nodes.add(node_name)
                        continue
                    if device_id in self.position:
                        continue
                    di = cache.input(slc.spec.driver, device)
                    content = content_index.setdefault(di.key, len(self.inputs))
                    if content == len(self.inputs):
                        self.inputs.append(di)
                    self.position[device_id] = len(self.ids)
                    self.ids.append(device_id)
                    node_ids.append(node_id)
                    contents.append(content)
        self.node_index = node_index
        self.node_ids: npt.NDArray[np.int64] = np.asarray(node_ids, dtype=np.int64)
        self.contents: npt.NDArray[np.int64] = np.asarray(contents, dtype=np.int64)
        self.complex_node: BoolArray = np.zeros(len(self.nodes), dtype=np.bool_)
        for name in complex_nodes:
            self.complex_node[node_index[name]] = True
        self.free: BoolArray = np.ones(len(self.ids), dtype=np.bool_)
        self._ledger_position = -1
        self._ledger: ClaimLedger | None = None
        self._rows: tuple[int, int, npt.NDArray[np.int64]] | None = None
        self._matches: dict[tuple[str, tuple[str, ...]], RequestMatch] = {}

    # ------------------------------------------------------------------ free devices
    def sync_free(self, ledger: ClaimLedger) -> None:
        """Mark devices in use per the ledger, replaying only its changes since the last call."""
        changes = (
            ledger.changes_since(self._ledger_position)
            if self._ledger is ledger and self._ledger_position >= 0
            else None
        )
        if changes is None:
            self.free[:] = True
            for device in ledger.state.exclusive:
                pos = self.position.get(device)
                if pos is not None:
                    self.free[pos] = False
        else:
            for device, sign in changes:
                pos = self.position.get(device)
                if pos is not None:
                    self.free[pos] = sign < 0
        self._ledger = ledger
        self._ledger_position = ledger.log_position

    # ------------------------------------------------------------------ selectors
    def match(self, cls: DeviceClass, selectors: Sequence[DeviceSelector]) -> RequestMatch:
        """Selector verdicts of a class plus request selectors, per device content (memoised)."""
        expressions = tuple(
            s.cel.expression if s.cel is not None else "" for s in (*cls.spec.selectors, *selectors)
        )
        key = (cls.metadata.name, expressions)
        found = self._matches.get(key)
        if found is None:
            n = len(self.inputs)
            ok = np.ones(n, dtype=np.bool_)
            failed = np.zeros(n, dtype=np.bool_)
            for i, di in enumerate(self.inputs):
                for expression in expressions:
                    try:
                        if not self.cache.matches(expression, di):
                            ok[i] = False
                            break
                    except CELError:
                        failed[i] = True
                        break
            found = self._matches[key] = RequestMatch(ok, failed)
        return found

    # ------------------------------------------------------------------ counting
    def rows_to_nodes(self, table: NodeTable) -> npt.NDArray[np.int64]:
        """For each table row, its node id here (-1: no local devices)."""
        cached = self._rows
        if cached is not None and cached[0] == id(table) and cached[1] == len(table):
            return cached[2]
        out = np.full(len(table), -1, dtype=np.int64)
        for name, node_id in self.node_index.items():
            row = table.index.get(name)
            if row is not None:
                out[row] = node_id
        self._rows = (id(table), len(table), out)
        return out

    def counts(self, match: RequestMatch) -> tuple[IntArray, BoolArray]:
        """Per node id: free devices passing the selectors, and whether any device's evaluation failed."""
        eligible = match.ok[self.contents] & self.free
        counts = np.bincount(self.node_ids[eligible], minlength=len(self.nodes)).astype(np.int64)
        failed_devices = match.failed[self.contents]
        failed = np.zeros(len(self.nodes), dtype=np.bool_)
        if failed_devices.any():
            failed[self.node_ids[failed_devices]] = True
        return counts, failed
