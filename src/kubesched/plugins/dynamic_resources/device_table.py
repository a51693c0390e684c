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
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.resource import Device, DeviceClass, DeviceSelector
from kubesched.cel import CELError, DeviceInput
from kubesched.framework.node_table import NodeTable
from kubesched.plugins.dynamic_resources.claims import ClaimLedger
from kubesched.plugins.dynamic_resources.match_cache import MatchCache
from kubesched.plugins.dynamic_resources.pools import SliceIndex

__all__ = ["DeviceTable", "RequestMatch"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
#: A request's shape for the selectors: (class name, its and the request's CEL expressions).
MatchKey = tuple[str, tuple[str, ...]]
T = TypeVar("T", bound=np.generic)


@dataclass(slots=True)
class RequestMatch:
    """Per device content: does it pass the request's selectors, did evaluation fail."""

    ok: BoolArray
    failed: BoolArray


_CONTENT = msgspec.json.Encoder()


class DeviceTable:
    def __init__(self, index: SliceIndex, cache: MatchCache) -> None:
        self.index = index
        self.cache = cache
        self.usable = not index.other
        #: device -> its position in the per-device columns
        self.position: dict[tuple[str, str, str], int] = {}
        position = self.position
        self.nodes: list[str] = []
        node_ids: list[int] = []
        contents: list[int] = []
        content_index: dict[tuple[str, bytes], int] = {}
        by_slice: dict[tuple[str, bytes], list[int | None]] = {}
        self.inputs: list[DeviceInput] = []
        complex_nodes: set[int] = set()
        counts = index.counts
        encode = _CONTENT.encode
        for node_name, slices in index.by_node.items():
            node_id = len(self.nodes)
            self.nodes.append(node_name)
            seen: dict[tuple[str, str], int] = {}
            for slc in slices:
                spec = slc.spec
                pool_key = (spec.driver, spec.pool.name)
                generation = spec.pool.generation
                gens = counts[pool_key]
                if (
                    seen.setdefault(pool_key, generation) != generation
                    or max(gens) != generation
                    or gens[generation] != spec.pool.resource_slice_count
                    or spec.per_device_node_selection
                    or spec.shared_counters
                ):
                    complex_nodes.add(node_id)  # incomplete, mixed generations, counters, ...
                driver, pool = pool_key
                devices = spec.devices
                # Nodes of one model publish the same device list: sort it out once per content.
                slice_key = (driver, encode(devices))
                per_device = by_slice.get(slice_key)
                if per_device is None:
                    per_device = by_slice[slice_key] = self._contents(driver, devices, content_index)
                else:
                    for device, content in zip(devices, per_device, strict=True):
                        if content is not None:
                            cache.remember(driver, device, self.inputs[content])
                for device, content in zip(devices, per_device, strict=True):
                    if content is None:
                        complex_nodes.add(node_id)
                        continue
                    # a plain tuple: equal to (and hashed as) the DeviceID the ledger looks up
                    device_id = (driver, pool, device.name)
                    if device_id in position:
                        complex_nodes.add(node_id)  # a duplicate name: the pool is invalid
                        continue
                    position[device_id] = len(position)
                    node_ids.append(node_id)
                    contents.append(content)
        self.node_index = {name: i for i, name in enumerate(self.nodes)}
        self.node_ids: npt.NDArray[np.int64] = np.asarray(node_ids, dtype=np.int64)
        self.contents: npt.NDArray[np.int64] = np.asarray(contents, dtype=np.int64)
        self.complex_node: BoolArray = np.zeros(len(self.nodes), dtype=np.bool_)
        self.complex_node[sorted(complex_nodes)] = True
        self.free: BoolArray = np.ones(len(self.position), dtype=np.bool_)
        self._ledger_position = -1
        self._ledger: ClaimLedger | None = None
        #: bumped whenever `free` is rebuilt from scratch (incremental counters then start over)
        self._epoch = 0
        #: device positions whose free flag changed, in order, since the last rebuild
        self._changes: list[tuple[int, int]] = []
        self._rows: tuple[NodeTable, int, npt.NDArray[np.int64]] | None = None
        self._matches: dict[MatchKey, RequestMatch] = {}
        self._counts: dict[MatchKey, tuple[NodeTable, int, int, int, IntArray, BoolArray]] = {}
        self._requests: dict[
            tuple[tuple[MatchKey, int], ...], tuple[NodeTable, int, int, int, BoolArray, IntArray, BoolArray]
        ] = {}

    def _contents(
        self, driver: str, devices: Sequence[Device], content_index: dict[tuple[str, bytes], int]
    ) -> list[int | None]:
        """Per device of a slice: the index of its content in `inputs`, or None for a device the
        table cannot speak for (counters, sharing, binding conditions, taints, own node selection)."""
        out: list[int | None] = []
        encode = _CONTENT.encode
        for device in devices:
            if (
                device.consumes_counters
                or device.allow_multiple_allocations
                or device.binding_conditions
                or device.taints
                or device.node_name
                or device.node_selector is not None
                or device.all_nodes
            ):
                out.append(None)
                continue
            content_key = (driver, encode((device.attributes, device.capacity)))
            content = content_index.get(content_key)
            if content is None:
                content = content_index[content_key] = len(self.inputs)
                self.inputs.append(self.cache.input(driver, device))
            else:
                self.cache.remember(driver, device, self.inputs[content])
            out.append(content)
        return out

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
            self._epoch += 1
            self._changes = []
        else:
            for device, sign in changes:
                pos = self.position.get(device)
                if pos is not None and self.free[pos] != (sign < 0):
                    self.free[pos] = sign < 0
                    self._changes.append((pos, -sign))  # +1: a device became free
            if len(self._changes) > 1_000_000:
                self._epoch += 1
                self._changes = []
        self._ledger = ledger
        self._ledger_position = ledger.log_position

    # ------------------------------------------------------------------ selectors
    def match(self, cls: DeviceClass, selectors: Sequence[DeviceSelector]) -> tuple[MatchKey, RequestMatch]:
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
        return key, found

    # ------------------------------------------------------------------ counting
    def rows_to_nodes(self, table: NodeTable) -> npt.NDArray[np.int64]:
        """For each table row, its node id here (-1: no local devices)."""
        node_rows = self.nodes_to_rows(table)
        out = np.full(len(table), -1, dtype=np.int64)
        present = node_rows >= 0
        out[node_rows[present]] = np.flatnonzero(present)
        return out

    def nodes_to_rows(self, table: NodeTable) -> IntArray:
        """For each node id here, its row in `table` (-1: not in the table)."""
        cached = self._rows
        if cached is not None and cached[0] is table and cached[1] == len(table):
            return cached[2]  # (the table is held: a new one cannot reuse a freed one's id)
        out = np.full(len(self.nodes), -1, dtype=np.int64)
        index = table.index
        for node_id, name in enumerate(self.nodes):
            row = index.get(name)
            if row is not None:
                out[node_id] = row
        self._rows = (table, len(table), out)
        return out

    def row_counts(self, table: NodeTable, key: MatchKey, match: RequestMatch) -> tuple[IntArray, BoolArray]:
        """Per row of `table`: free devices passing the selectors, and whether the table cannot speak
        for the row (its node is complex, or a device's selector evaluation failed there).

        Kept per request shape, in the table's row order, and updated from the free-device changes
        since the last call, so a pod costs O(devices allocated since) plus a comparison per row,
        instead of passes over every device and gathers from node ids to rows.
        """
        node_rows = self.nodes_to_rows(table)
        cached = self._counts.get(key)
        if cached is not None and cached[0] is table and cached[1] == len(table) and cached[2] == self._epoch:
            seen, counts, unusable = cached[3], cached[4], cached[5]
            ok, contents, node_ids = match.ok, self.contents, self.node_ids
            for pos, delta in self._changes[seen:]:
                if ok[contents[pos]]:
                    row = node_rows[node_ids[pos]]
                    if row >= 0:
                        counts[row] += delta
        else:
            eligible = match.ok[self.contents] & self.free
            per_node = np.bincount(self.node_ids[eligible], minlength=len(self.nodes)).astype(np.int64)
            bad_node = self.complex_node.copy()
            failed_devices = match.failed[self.contents]
            if failed_devices.any():
                bad_node[self.node_ids[failed_devices]] = True
            present = node_rows >= 0
            counts = np.zeros(len(table), dtype=np.int64)
            counts[node_rows[present]] = per_node[present]
            unusable = np.zeros(len(table), dtype=np.bool_)
            unusable[node_rows[present]] = bad_node[present]
        self._counts[key] = (table, len(table), self._epoch, len(self._changes), counts, unusable)
        return counts, unusable

    def request_rows(
        self, table: NodeTable, options: Sequence[tuple[MatchKey, RequestMatch, int]]
    ) -> tuple[BoolArray, IntArray, BoolArray]:
        """Per row of `table`, for a request whose options are (selectors, count) in order: does
        some option fit, the first option that fits (-1: none), and whether the table cannot speak
        for the row. Read-only arrays, kept per request and patched on the rows whose free devices
        changed since the last call (a pod changes one or two rows, not 5,000)."""
        per_option = [(*self.row_counts(table, key, match), count) for key, match, count in options]
        cache_key = tuple((key, count) for key, _, count in options)
        cached = self._requests.get(cache_key)
        if cached is not None and cached[0] is table and cached[1] == len(table) and cached[2] == self._epoch:
            seen, ok, sub, unusable = cached[3], cached[4], cached[5], cached[6]
            node_rows, node_ids = self.nodes_to_rows(table), self.node_ids
            for row in {int(node_rows[node_ids[pos]]) for pos, _ in self._changes[seen:]}:
                if row < 0:
                    continue
                first = next(
                    (i for i, (counts, _, count) in enumerate(per_option) if counts[row] >= count), -1
                )
                sub[row] = first
                ok[row] = first >= 0
        else:
            sub = np.full(len(table), -1, dtype=np.int64)
            ok = np.zeros(len(table), dtype=np.bool_)
            unusable = np.zeros(len(table), dtype=np.bool_)
            for index, (counts, bad, count) in enumerate(per_option):
                fits = counts >= count
                sub[(sub < 0) & fits] = index
                ok |= fits
                unusable |= bad
        self._requests[cache_key] = (table, len(table), self._epoch, len(self._changes), ok, sub, unusable)
        return _read_only(ok), _read_only(sub), _read_only(unusable)


def _read_only(array: npt.NDArray[T]) -> npt.NDArray[T]:
    view = array.view()
    view.flags.writeable = False
    return view
