"""GPUs as DRA drivers publish them: whole GPUs per node from ResourceSlices, in use from claims.

GPUScheduler reads `nvidia.com/gpu` from node allocatable on device-plugin clusters; on DRA clusters
the same facts live in ResourceSlices (devices of the GPU driver whose `type` attribute is `gpu`, or
that have none; MIG partitions are not whole GPUs) and in ResourceClaims (the devices allocated).
`DraGpuView` turns them into per-row arrays of a NodeTable — total GPUs, GPUs in use, largest GPU
memory — and per-row product names, recomputed only when the listed objects change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.resource import DeviceAttribute, ResourceClaim, ResourceSlice
from kubesched.framework.node_table import NodeTable

__all__ = ["DraGpuRows", "DraGpuView", "pod_claim_device_count"]

IntArray = npt.NDArray[np.int64]
_MIB = 1024 * 1024


@dataclass(slots=True)
class DraGpuRows:
    """Per table row: whole GPUs, GPUs in use, the largest GPU's memory (MiB, -1: unknown), products."""

    total: IntArray
    used: IntArray
    memory_mib: IntArray
    products: list[frozenset[str]]


@dataclass(slots=True)
class _NodeGpus:
    devices: set[tuple[str, str, str]]
    memory_mib: int
    products: frozenset[str]


def _attribute(device_attrs: Mapping[str, DeviceAttribute], driver: str, name: str) -> object | None:
    attr = device_attrs.get(name) or device_attrs.get(f"{driver}/{name}")
    if attr is None:
        return None
    values: tuple[object | None, ...] = (attr.string, attr.int, attr.bool, attr.version)
    return next((v for v in values if v is not None), None)


class DraGpuView:
    def __init__(self, drivers: Sequence[str]) -> None:
        self.drivers = frozenset(drivers)
        self._slices: Sequence[ResourceSlice] | None = None
        self._claims: Sequence[ResourceClaim] | None = None
        self._nodes: dict[str, _NodeGpus] = {}
        self._in_use: set[tuple[str, str, str]] = set()
        self._rows: tuple[NodeTable, int, int, DraGpuRows] | None = None
        self._version = 0

    def refresh(self, slices: Sequence[ResourceSlice], claims: Sequence[ResourceClaim]) -> None:
        if slices is not self._slices:
            nodes: dict[str, _NodeGpus] = {}
            for slc in slices:
                spec = slc.spec
                if spec.driver not in self.drivers or not spec.node_name:
                    continue
                entry = nodes.setdefault(spec.node_name, _NodeGpus(set(), -1, frozenset()))
                products = set(entry.products)
                for device in spec.devices:
                    kind = _attribute(device.attributes, spec.driver, "type")
                    if kind not in (None, "gpu"):
                        continue
                    entry.devices.add((spec.driver, spec.pool.name, device.name))
                    product = _attribute(device.attributes, spec.driver, "productName")
                    if isinstance(product, str):
                        products.add(product)
                    memory = device.capacity.get("memory") or device.capacity.get(f"{spec.driver}/memory")
                    if memory is not None:
                        with contextlib.suppress(QuantityError):
                            mib = quantity_nanos(memory.value) // 10**9 // _MIB
                            entry.memory_mib = max(entry.memory_mib, mib)
                entry.products = frozenset(products)
            self._nodes = nodes
            self._slices = slices
            self._version += 1
        if claims is not self._claims:
            in_use: set[tuple[str, str, str]] = set()
            for claim in claims:
                allocation = claim.status.allocation
                if allocation is None:
                    continue
                for r in allocation.devices.results:
                    if r.driver in self.drivers and not r.admin_access:
                        in_use.add((r.driver, r.pool, r.device))
            self._in_use = in_use
            self._claims = claims
            self._version += 1

    def rows(self, table: NodeTable) -> DraGpuRows:
        cached = self._rows
        if cached is not None and cached[0] is table and cached[1:3] == (table.generation, self._version):
            return cached[3]  # (the table is held: a new one cannot reuse a freed one's id)
        n = len(table)
        total = np.zeros(n, dtype=np.int64)
        used = np.zeros(n, dtype=np.int64)
        memory = np.full(n, -1, dtype=np.int64)
        products: list[frozenset[str]] = [frozenset()] * n
        for name, entry in self._nodes.items():
            row = table.index.get(name)
            if row is None:
                continue
            total[row] = len(entry.devices)
            used[row] = len(entry.devices & self._in_use)
            memory[row] = entry.memory_mib
            products[row] = entry.products
        out = DraGpuRows(total, used, memory, products)
        self._rows = (table, table.generation, self._version, out)
        return out


def pod_claim_device_count(pod: Pod, claims: dict[str, ResourceClaim]) -> int:
    """Devices the pod's claims ask for: each request's `count` (1 by default; a `firstAvailable`
    request counts its first choice; `All` counts 1). Claims not found count nothing."""
    names = [c.resource_claim_name for c in pod.spec.resource_claims if c.resource_claim_name]
    names += [s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name]
    total = 0
    for name in names:
        claim = claims.get(f"{pod.metadata.namespace}/{name}")
        if claim is None:
            continue
        for req in claim.spec.devices.requests:
            if req.exactly is not None:
                total += req.exactly.count or 1 if req.exactly.allocation_mode != "All" else 1
            elif req.first_available:
                total += req.first_available[0].count or 1
    return total
