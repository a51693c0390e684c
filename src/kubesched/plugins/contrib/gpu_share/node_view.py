"""The GPUs every node publishes, as rows aligned with the scheduler's NodeTable: the share left on
each GPU (from the devices DynamicResources has handed out), the GPU model and the free CPU.

Kept current incrementally: a row is read again only when its pods changed (a GPU's share is taken
and given back only with the pods holding the claims), and the device layout only when the
ResourceSlices change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.api.quantity import NANO
from kubesched.api.resource import DeviceAttribute, ResourceSlice
from kubesched.framework.node_info import CPU, NodeInfo
from kubesched.framework.node_table import NodeTable
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI
from kubesched.plugins.dynamic_resources.allocator_types import AllocatedState, DeviceID, nanos
from kubesched.plugins.dynamic_resources.manager import fingerprint

__all__ = ["GpuRows", "NodeGpus", "node_gpus"]

IntArray = npt.NDArray[np.int64]


class NodeGpus:
    """One node's GPUs in the allocator's order: device ids, share capacity (milli) and model."""

    __slots__ = ("capacity", "devices", "model")

    def __init__(self, devices: list[DeviceID], capacity: list[int], model: str) -> None:
        self.devices = devices
        self.capacity = capacity
        self.model = model


def _text(attr: DeviceAttribute | None) -> str:
    if attr is None:
        return ""
    value = next((v for v in (attr.string, attr.version, attr.int, attr.bool) if v is not None), "")
    return str(value)


def node_gpus(slices: Sequence[ResourceSlice], driver: str, capacity: str) -> dict[str, NodeGpus]:
    """Per node name: the devices of `driver` with a `capacity` (newest pool generation, slices by
    name, as the allocator searches them)."""
    newest: dict[tuple[str, str], int] = {}
    for slc in slices:
        if slc.spec.driver == driver and slc.spec.node_name:
            key = (slc.spec.node_name, slc.spec.pool.name)
            newest[key] = max(newest.get(key, slc.spec.pool.generation), slc.spec.pool.generation)
    out: dict[str, NodeGpus] = {}
    ordered = sorted(
        (s for s in slices if s.spec.driver == driver and s.spec.node_name),
        key=lambda s: (s.spec.node_name or "", s.spec.pool.name, s.metadata.name),
    )
    for slc in ordered:
        node = slc.spec.node_name or ""
        if slc.spec.pool.generation != newest[(node, slc.spec.pool.name)]:
            continue
        gpus = out.setdefault(node, NodeGpus([], [], ""))
        for device in slc.spec.devices:
            cap = device.capacity.get(capacity)
            if cap is None:
                continue
            gpus.devices.append(DeviceID(driver, slc.spec.pool.name, device.name))
            gpus.capacity.append(nanos(cap.value) // NANO)
            if not gpus.model:
                gpus.model = _text(device.attributes.get("model") or device.attributes.get(f"{driver}/model"))
    return out


def free_share(gpus: NodeGpus, allocated: AllocatedState, capacity: str) -> list[int]:
    """The share left on each of the node's GPUs (milli)."""
    out = []
    for device, total in zip(gpus.devices, gpus.capacity, strict=True):
        if device in allocated.exclusive:
            out.append(0)
            continue
        used = allocated.consumed.get(device)
        out.append(total - (used.get(capacity, 0) // NANO if used else 0))
    return out


class GpuRows:
    """Per row of the current NodeTable: `free` (rows, widest node) share left per GPU, zero-padded;
    `count` GPUs; `models` and `gpus` (the node's devices); `cpu_free` (milli)."""

    def __init__(self, driver: str, capacity: str) -> None:
        self.driver = driver
        self.capacity = capacity
        self._slices_seen: tuple[int, int] | None = None
        self._slices: Sequence[ResourceSlice] | None = None
        self._by_node: dict[str, NodeGpus] = {}
        self._table: NodeTable | None = None
        self._position = -1
        self.free: IntArray = np.zeros((0, 0), dtype=np.int64)
        self.count: IntArray = np.zeros(0, dtype=np.int64)
        self.models: list[str] = []
        self.gpus: list[NodeGpus | None] = []
        self._classes: list[Counter[str] | None] = []
        self._classes_position = -1

    def refresh(self, table: NodeTable, slices: Sequence[ResourceSlice], allocated: AllocatedState) -> None:
        # The same list: nothing changed (DynamicResources' slice index trusts the lister alike).
        seen = self._slices_seen if slices is self._slices else (fingerprint(slices), len(slices))
        self._slices = slices
        rebuild = seen != self._slices_seen or table is not self._table
        if seen != self._slices_seen:
            self._by_node = node_gpus(slices, self.driver, self.capacity)
            self._slices_seen = seen
        changed = None if rebuild else table.rows_changed_since(self._position)
        if changed is None:
            self._layout(table)
            changed = list(range(len(table)))
        for row in changed:
            gpus = self.gpus[row]
            if gpus is not None:
                share = free_share(gpus, allocated, self.capacity)
                self.free[row, : len(share)] = share
            self._classes[row] = None
        self._table = table
        self._position = table.pod_log_position

    def _layout(self, table: NodeTable) -> None:
        self.gpus = [self._by_node.get(name) for name in table.names]
        width = max((len(g.devices) for g in self.gpus if g is not None), default=0)
        self.free = np.zeros((len(table), width), dtype=np.int64)
        self.count = np.array([len(g.devices) if g else 0 for g in self.gpus], dtype=np.int64)
        self.models = [g.model if g else "" for g in self.gpus]
        self._classes = [None] * len(table)

    def cpu_free(self, table: NodeTable) -> IntArray:
        col = table.resource_index[CPU]
        out: IntArray = table.allocatable[:, col] - table.requested[:, col]
        return out

    def classes(self, row: int, info: NodeInfo, classify: Callable[[NodeInfo], Counter[str]]) -> Counter[str]:
        """The GPU classes of the row's pods (GpuClustering), counted again only when they changed."""
        found = self._classes[row]
        if found is None:
            found = self._classes[row] = classify(info)
        return found


def whole_gpus(free: IntArray) -> IntArray:
    """Per row: GPUs with nothing taken."""
    out: IntArray = (free == GPU_MILLI).sum(axis=1)
    return out
