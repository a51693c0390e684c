"""What a node offers a GPU pod: its GPU labels (memory, product, family), or on DRA clusters the GPUs
its ResourceSlices publish; per node and for the rows of a NodeTable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.node_table import BoolArray, IntArray, NodeTable
from kubesched.plugins._volumes import ListerSource
from kubesched.plugins.contrib.gpu_scheduler.args import GPUSchedulerArgs
from kubesched.plugins.contrib.gpu_scheduler.dra_gpus import DraGpuView, pod_claim_device_count
from kubesched.plugins.contrib.gpu_scheduler.pod_request import GpuPod, matcher, matches, parse_mib


def labels_fit(args: GPUSchedulerArgs, s: GpuPod, labels: Mapping[str, str]) -> bool:
    """Whether the node's GPU labels satisfy the pod's memory / product / family annotations."""
    if s.min_memory > 0 and parse_mib(labels.get(args.memory_label)) < s.min_memory:
        return False
    for wanted, label in ((s.products, args.product_label), (s.families, args.family_label)):
        if wanted:
            value = labels.get(label)
            if value is None or not matches(value, wanted):
                return False
    return True


def labels_fit_rows(
    args: GPUSchedulerArgs, s: GpuPod, table: NodeTable, rows: npt.NDArray[np.intp]
) -> BoolArray:
    """`labels_fit` for every row, once per distinct label value."""
    ok = np.ones(len(rows), dtype=np.bool_)
    if s.min_memory > 0:
        ok &= memory_rows(args, table, rows) >= s.min_memory
    for wanted, label in ((s.products, args.product_label), (s.families, args.family_label)):
        if wanted:
            ok &= table.label_column(label).matching(matcher(wanted))[rows]
    return ok


def memory_rows(args: GPUSchedulerArgs, table: NodeTable, rows: npt.NDArray[np.intp]) -> IntArray:
    """Each row's GPU memory label in MiB; -1 when missing or not a number."""
    column = table.label_column(args.memory_label)
    parsed = np.fromiter((parse_mib(v) for v in column.values), dtype=np.int64, count=len(column.values))
    padded = np.append(parsed, np.int64(-1))  # id -1 (no label) -> the appended -1
    out: IntArray = padded[column.ids[rows]]
    return out


class DraNodes:
    """The GPUs DRA drivers publish, read through the handle's lister (none without a handle)."""

    def __init__(self, drivers: Sequence[str], handle: ListerSource | None) -> None:
        self._handle = handle
        self._view = DraGpuView(drivers)
        self._enabled = handle is not None and bool(drivers)

    def claimed_gpus(self, pod: Pod) -> int:
        """GPUs the pod's ResourceClaims ask of the drivers; 0 when DRA GPUs are not read."""
        if not self._enabled or self._handle is None:
            return 0
        claims: Sequence[ResourceClaim] = self._handle.lister("ResourceClaim")
        return pod_claim_device_count(pod, {c.key: c for c in claims})

    def rows(
        self, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> tuple[IntArray, IntArray, IntArray, list[frozenset[str]]]:
        """Per row: whole GPUs, GPUs in use, largest GPU memory (MiB, -1 unknown), product names."""
        handle = self._handle
        self._view.refresh(
            handle.lister("ResourceSlice") if handle else (), handle.lister("ResourceClaim") if handle else ()
        )
        view = self._view.rows(table)
        return view.total[rows], view.used[rows], view.memory_mib[rows], [view.products[i] for i in rows]
