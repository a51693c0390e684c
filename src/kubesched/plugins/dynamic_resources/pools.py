"""Resource pools: which slices a node can use, grouped and ordered as upstream searches them.

Separate because pool gathering is the allocator's input, built once per set of slices and shared
by the search and the device table (upstream: `internal/*/pools_*.go`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Node
from kubesched.api.resource import Device, ResourceSlice
from kubesched.api.selectors import compile_node_selector
from kubesched.plugins.dynamic_resources.allocator_types import nanos
from kubesched.plugins.dynamic_resources.taints import apply_taint_rules

__all__ = ["Pool", "SliceIndex", "device_node_match", "slice_node_match"]


@dataclass(slots=True)
class Pool:
    """The newest slices of one (driver, pool) usable from a node, with what makes it unusable."""

    driver: str
    name: str
    generation: int
    slices: list[ResourceSlice]
    incomplete: bool = False
    invalid_reason: str = ""
    has_binding_conditions: bool = False

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def slice_node_match(slc: ResourceSlice, node: Node) -> bool:
    """Is the slice relevant to `node` (per-device node selection: maybe, decided per device)?"""
    spec = slc.spec
    if spec.node_name:
        return spec.node_name == node.metadata.name
    if spec.all_nodes:
        return True
    if spec.node_selector is not None:
        return compile_node_selector(spec.node_selector).matches(node.metadata.name, node.metadata.labels)
    return bool(spec.per_device_node_selection)


def device_node_match(device: Device, node: Node) -> bool:
    """Per-device node selection: does the device admit `node`?"""
    if device.node_name:
        return device.node_name == node.metadata.name
    if device.all_nodes:
        return True
    if device.node_selector is not None:
        return compile_node_selector(device.node_selector).matches(node.metadata.name, node.metadata.labels)
    return False


class SliceIndex:
    """Slices grouped for fast per-node pool gathering; built once per set of slices."""

    def __init__(self, slices: Sequence[ResourceSlice], taint_rules: Sequence[Any] = ()) -> None:
        self.slices = [apply_taint_rules(s, taint_rules) for s in slices] if taint_rules else list(slices)
        self.by_node: dict[str, list[ResourceSlice]] = {}
        self.other: list[ResourceSlice] = []  # allNodes, nodeSelector, per-device selection
        #: (driver, pool) -> generation -> number of slices
        self.counts: dict[tuple[str, str], dict[int, int]] = {}
        #: (driver, pool) -> every slice of the pool (all nodes), for counters and completeness
        self.pool_slices: dict[tuple[str, str], list[ResourceSlice]] = {}
        for slc in self.slices:
            key = (slc.spec.driver, slc.spec.pool.name)
            gens = self.counts.setdefault(key, {})
            gens[slc.spec.pool.generation] = gens.get(slc.spec.pool.generation, 0) + 1
            self.pool_slices.setdefault(key, []).append(slc)
            if slc.spec.node_name:
                self.by_node.setdefault(slc.spec.node_name, []).append(slc)
            else:
                self.other.append(slc)
        self._counter_sets: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self._pools_by_node: dict[str, list[Pool]] = {}

    def counter_sets(self, driver: str, pool: str) -> dict[str, dict[str, int]]:
        """Counter set name -> counter -> capacity (nano units), across the pool's newest slices."""
        key = (driver, pool)
        found = self._counter_sets.get(key)
        if found is None:
            found = {}
            slices = self.pool_slices.get(key, [])
            newest = max((s.spec.pool.generation for s in slices), default=0)
            for slc in slices:
                if slc.spec.pool.generation != newest:
                    continue
                for cs in slc.spec.shared_counters:
                    found[cs.name] = {name: nanos(c.value) for name, c in cs.counters.items()}
            self._counter_sets[key] = found
        return found

    def gather_pools(self, node: Node) -> list[Pool]:
        """The pools usable from `node`, in upstream's search order (treat as read-only).

        With node-local slices only, the answer depends on the node's name alone and is memoised:
        the allocator runs for the chosen node of every pod, mostly on nodes it has seen."""
        if self.other:
            return self._gather_pools(node)
        found = self._pools_by_node.get(node.metadata.name)
        if found is None:
            found = self._pools_by_node[node.metadata.name] = self._gather_pools(node)
        return found

    def _gather_pools(self, node: Node) -> list[Pool]:
        pools: dict[tuple[str, str], Pool] = {}
        candidates = list(self.by_node.get(node.metadata.name, ()))
        candidates.extend(s for s in self.other if slice_node_match(s, node))
        for slc in candidates:
            key = (slc.spec.driver, slc.spec.pool.name)
            pool = pools.get(key)
            generation = slc.spec.pool.generation
            if pool is None or generation > pool.generation:
                pools[key] = Pool(slc.spec.driver, slc.spec.pool.name, generation, [slc])
            elif generation == pool.generation:
                pool.slices.append(slc)
        out = []
        for key, pool in pools.items():
            newest = max(self.counts[key])
            expected = pool.slices[0].spec.pool.resource_slice_count
            pool.incomplete = newest != pool.generation or self.counts[key][pool.generation] != expected
            pool.slices.sort(key=lambda s: s.metadata.name)
            seen: set[str] = set()
            for slc in pool.slices:
                for device in slc.spec.devices:
                    if device.name in seen and not pool.invalid_reason:
                        pool.invalid_reason = f"duplicate device name {device.name}"
                    seen.add(device.name)
                    if device.binding_conditions:
                        pool.has_binding_conditions = True
            out.append(pool)
        out.sort(key=lambda p: (p.has_binding_conditions, p.driver, p.name))
        return out
