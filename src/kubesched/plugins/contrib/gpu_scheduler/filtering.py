"""GPUScheduler's Filter: free GPU counts and GPU labels against the pod's ask, with the numbers in the
reasons; per node and in batch, worded alike (nodes failing the same way share one Status)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, IntArray, NodeSet
from kubesched.framework.status import Code, Status
from kubesched.plugins.contrib.gpu_scheduler.args import GPU_RESOURCE, NON_GPU_POD_REASON, GPUSchedulerArgs
from kubesched.plugins.contrib.gpu_scheduler.node_gpus import DraNodes, memory_rows
from kubesched.plugins.contrib.gpu_scheduler.pod_request import (
    GpuPod,
    ManagedResources,
    matcher,
    matches,
    parse_mib,
)


def insufficient_gpus_reason(resource: str, need: int, have: int) -> str:
    """`Insufficient free GPUs: need 4, have 2`; other resources are named: `GPUs (nvidia.com/mig-1g.5gb)`."""
    what = "GPUs" if resource == GPU_RESOURCE else f"GPUs ({resource})"
    return f"Insufficient free {what}: need {need}, have {have}"


def _memory_reason(need: int, have: int | None, label: str) -> str:
    if have is None:
        return f"Insufficient GPU memory: need {need} MiB, node has no valid {label} label"
    return f"Insufficient GPU memory: need {need} MiB, have {have} MiB"


def _mismatch_reason(what: str, wanted: Sequence[str], have: str | None, label: str) -> str:
    node = f"node has {have}" if have is not None else f"node has no {label} label"
    return f"GPU {what} mismatch: need {' or '.join(wanted)}, {node}"


def distinct_rows(keys: IntArray) -> tuple[IntArray, npt.NDArray[np.intp]]:
    """Distinct rows of an int matrix and, per row, the index of its distinct row.

    `np.unique(axis=0)` sorts rows as opaque byte strings and is slow; instead each column is
    replaced by its rank among the column's distinct values and the ranks are combined into one
    exact mixed-radix int64 per row (falling back to `axis=0` if that could overflow).
    """
    combined = np.zeros(len(keys), dtype=np.int64)
    radix = 1
    for j in range(keys.shape[1]):
        values, ranks = np.unique(keys[:, j], return_inverse=True)
        if radix > (1 << 62) // len(values):
            rows, inverse = np.unique(keys, axis=0, return_inverse=True)
            return rows, inverse.reshape(-1)
        combined += ranks.reshape(-1) * radix
        radix *= len(values)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


def filter_node(
    args: GPUSchedulerArgs, managed: ManagedResources, s: GpuPod, node_info: NodeInfo
) -> Status | None:
    """Filter for one node, for a pod whose GPUs are extended resources."""
    if not s.needs:
        if args.keep_non_gpu_pods_off and managed.amount(node_info.allocatable) > 0:
            return Status.unschedulable_and_unresolvable(NON_GPU_POD_REASON)
        return None
    reasons: list[str] = []
    unresolvable = False
    alloc, used = node_info.allocatable, node_info.requested
    for resource, need in s.needs:
        total = alloc.get(resource, 0)
        free = total - used.get(resource, 0)
        if need > free:
            reasons.append(insufficient_gpus_reason(resource, need, max(free, 0)))
            unresolvable = unresolvable or need > total
    labels = node_info.labels
    if s.min_memory > 0:
        memory = parse_mib(labels.get(args.memory_label))
        if memory < s.min_memory:
            reasons.append(_memory_reason(s.min_memory, memory if memory >= 0 else None, args.memory_label))
            unresolvable = True
    for what, wanted, label in (
        ("product", s.products, args.product_label),
        ("family", s.families, args.family_label),
    ):
        if wanted:
            value = labels.get(label)
            if value is None or not matches(value, wanted):
                reasons.append(_mismatch_reason(what, wanted, value, label))
                unresolvable = True
    if not reasons:
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, *reasons)


def filter_nodes(
    args: GPUSchedulerArgs, managed: ManagedResources, s: GpuPod, nodes: NodeSet
) -> BatchFilterResult:
    """`filter_node` for every node of the set at once."""
    n = len(nodes)
    table, rows = nodes.table, nodes.rows
    if not s.needs:
        if not args.keep_non_gpu_pods_off:
            return BatchFilterResult.all_pass(n)
        gpu_node = managed.table_amount(table.allocatable, table, rows) > 0
        return BatchFilterResult.from_mask(
            ~gpu_node, Status.unschedulable_and_unresolvable(NON_GPU_POD_REASON)
        )
    # One key column per check: the node's value where it fails, a sentinel where it passes.
    # Nodes failing the same way share a row of keys, hence one Status (np.unique below).
    k = len(s.needs)
    keys = np.full((n, k + 4), -2, dtype=np.int64)
    unresolvable = np.zeros(n, dtype=np.bool_)
    for j, (resource, need) in enumerate(s.needs):
        col = table.resource_index.get(resource)
        if col is None:
            total = np.zeros(n, dtype=np.int64)
            free = total
        else:
            total = table.allocatable[rows, col]
            free = total - table.requested[rows, col]
        short = need > free
        keys[:, j] = np.where(short, np.maximum(free, 0), -2)
        unresolvable |= need > total
    if s.min_memory > 0:
        memory = memory_rows(args, table, rows)
        keys[:, k] = np.where(memory < s.min_memory, memory, -2)  # -1: missing / invalid
    for j, wanted, label in (
        (k + 1, s.products, args.product_label),
        (k + 2, s.families, args.family_label),
    ):
        if wanted:
            column = table.label_column(label)
            ids = column.ids[rows].astype(np.int64)
            ok = column.matching(matcher(wanted))[rows]
            keys[:, j] = np.where(ok, -2, ids)  # -1: label missing
    failed = (keys[:, : k + 3] != -2).any(axis=1)
    unresolvable |= (keys[:, k : k + 3] != -2).any(axis=1)
    keys[:, k + 3] = unresolvable
    failing = np.flatnonzero(failed)
    codes = np.full(n, -1, dtype=np.int32)
    if len(failing) == 0:
        return BatchFilterResult(codes, [])
    distinct, inverse = distinct_rows(keys[failing])
    codes[failing] = inverse
    product_values = table.label_column(args.product_label).values if s.products else []
    family_values = table.label_column(args.family_label).values if s.families else []
    statuses = [_status_of(args, s, row.tolist(), product_values, family_values) for row in distinct]
    return BatchFilterResult(codes, statuses)


def _status_of(
    args: GPUSchedulerArgs,
    s: GpuPod,
    key: list[int],
    product_values: Sequence[str],
    family_values: Sequence[str],
) -> Status:
    """The Status a row of filter keys stands for, worded exactly as `filter_node` words it."""
    k = len(s.needs)
    reasons = [
        insufficient_gpus_reason(resource, need, key[j])
        for j, (resource, need) in enumerate(s.needs)
        if key[j] != -2
    ]
    if key[k] != -2:
        reasons.append(_memory_reason(s.min_memory, key[k] if key[k] >= 0 else None, args.memory_label))
    for j, what, wanted, label, values in (
        (k + 1, "product", s.products, args.product_label, product_values),
        (k + 2, "family", s.families, args.family_label, family_values),
    ):
        if key[j] != -2:
            reasons.append(_mismatch_reason(what, wanted, values[key[j]] if key[j] >= 0 else None, label))
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if key[k + 3] else Code.UNSCHEDULABLE, *reasons)


def dra_filter_nodes(dra: DraNodes, s: GpuPod, nodes: NodeSet) -> BatchFilterResult:
    """Product and memory against the node's GPUs in ResourceSlices; the count is
    DynamicResources' to check (it allocates the very devices)."""
    n = len(nodes)
    codes = np.full(n, -1, dtype=np.int32)
    if not s.products and s.min_memory <= 0:
        return BatchFilterResult(codes, [])
    _, _, memory, products = dra.rows(nodes.table, nodes.rows)
    distinct: dict[Status, int] = {}
    for i in range(n):
        reasons = []
        if s.min_memory > 0 and memory[i] < s.min_memory:
            have = int(memory[i]) if memory[i] >= 0 else None
            reasons.append(_memory_reason(s.min_memory, have, "ResourceSlice GPU memory"))
        if s.products and not any(matches(p, s.products) for p in products[i]):
            shown = ", ".join(sorted(products[i])) or None
            reasons.append(_mismatch_reason("product", s.products, shown, "ResourceSlice productName"))
        if reasons:
            codes[i] = distinct.setdefault(
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons), len(distinct)
            )
    return BatchFilterResult(codes, list(distinct))
