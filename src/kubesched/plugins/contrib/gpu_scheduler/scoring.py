"""GPUScheduler's Score: one packed lexicographic key per node (binpack or spread), and the dense-rank
NormalizeScore that maps the distinct keys onto 0..100 without erasing any preference below the first."""

from __future__ import annotations

from typing import Final

import numpy as np

from kubesched.framework.interfaces import Scores
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.contrib.gpu_scheduler.args import BINPACK, GPUSchedulerArgs
from kubesched.plugins.contrib.gpu_scheduler.node_gpus import (
    DraNodes,
    labels_fit,
    labels_fit_rows,
    memory_rows,
)
from kubesched.plugins.contrib.gpu_scheduler.pod_request import GpuPod, ManagedResources, matches, parse_mib

# The packed score key: fits (bit 43) | partly used (bit 42, binpack) | free tier (bits 21..41) |
# memory tier (bits 0..20). 21 bits hold counts up to 2M GPUs and memory up to 2 TiB per GPU.
_TIER_BITS: Final = 21
_TIER_MAX: Final = (1 << _TIER_BITS) - 1
_PARTLY_SHIFT: Final = 2 * _TIER_BITS
_FITS_SHIFT: Final = 2 * _TIER_BITS + 1


def rank_normalize(scores: Scores) -> None:
    """Rewrite `scores` in place by dense rank: the best distinct value 100, the worst 0, the rest
    evenly spaced by rank; all equal -> all 100. Keeps a lexicographic key's order exactly."""
    if scores.size == 0:
        return
    uniq, inverse = np.unique(scores, return_inverse=True)
    if len(uniq) == 1:
        scores[...] = MAX_NODE_SCORE
        return
    scores[...] = inverse.reshape(-1).astype(np.int64) * MAX_NODE_SCORE // (len(uniq) - 1)


def score_node(args: GPUSchedulerArgs, managed: ManagedResources, s: GpuPod, node_info: NodeInfo) -> int:
    """The key for one node, for a pod whose GPUs are extended resources."""
    alloc, used = node_info.allocatable, node_info.requested
    if not s.needs:  # keepNonGpuPodsOff: nodes without GPUs first
        return 0 if managed.amount(alloc) > 0 else 1
    alloc_total = free_total = 0
    fits = True
    for resource, need in s.needs:
        total = alloc.get(resource, 0)
        free = total - used.get(resource, 0)
        fits = fits and need <= free
        alloc_total += total
        free_total += max(free, 0)
    labels = node_info.labels
    fits = fits and labels_fit(args, s, labels)
    memory = parse_mib(labels.get(args.memory_label))
    memory_tier = _TIER_MAX - min(memory, _TIER_MAX) if memory >= 0 else 0
    key = (int(fits) << _FITS_SHIFT) | memory_tier
    if args.scoring_strategy == BINPACK:
        partly = managed.amount(used) > 0
        key |= (int(partly) << _PARTLY_SHIFT) | ((_TIER_MAX - min(free_total, _TIER_MAX)) << _TIER_BITS)
    else:
        left = max(free_total - s.total, 0)
        ratio = left * _TIER_MAX // alloc_total if alloc_total > 0 else 0
        key |= ratio << _TIER_BITS
    return key


def score_nodes(args: GPUSchedulerArgs, managed: ManagedResources, s: GpuPod, nodes: NodeSet) -> Scores:
    """`score_node` for every node of the set at once."""
    table, rows = nodes.table, nodes.rows
    n = len(rows)
    if not s.needs:
        no_gpus: Scores = (managed.table_amount(table.allocatable, table, rows) == 0).astype(np.int64)
        return no_gpus
    fits = np.ones(n, dtype=np.bool_)
    alloc_total = np.zeros(n, dtype=np.int64)
    free_total = np.zeros(n, dtype=np.int64)
    for resource, need in s.needs:
        col = table.resource_index.get(resource)
        if col is None:
            fits[:] = False
            continue
        total = table.allocatable[rows, col]
        free = total - table.requested[rows, col]
        fits &= need <= free
        alloc_total += total
        free_total += np.maximum(free, 0)
    fits &= labels_fit_rows(args, s, table, rows)
    memory = memory_rows(args, table, rows)
    memory_tier = np.where(memory >= 0, _TIER_MAX - np.minimum(memory, _TIER_MAX), 0)
    key = (fits.astype(np.int64) << _FITS_SHIFT) | memory_tier
    if args.scoring_strategy == BINPACK:
        partly = managed.table_amount(table.requested, table, rows) > 0
        key |= (partly.astype(np.int64) << _PARTLY_SHIFT) | (
            (_TIER_MAX - np.minimum(free_total, _TIER_MAX)) << _TIER_BITS
        )
    else:
        left = np.maximum(free_total - s.total, 0)
        ratio = np.where(alloc_total > 0, left * _TIER_MAX // np.maximum(alloc_total, 1), 0)
        key |= ratio << _TIER_BITS
    out: Scores = key.astype(np.int64)
    return out


def dra_scores(args: GPUSchedulerArgs, dra: DraNodes, s: GpuPod, nodes: NodeSet) -> Scores:
    """The same packed key as for device-plugin GPUs, from the GPUs in ResourceSlices and claims."""
    total, used, memory, products = dra.rows(nodes.table, nodes.rows)
    free = np.maximum(total - used, 0)
    fits = free >= s.total
    if s.products:
        fits &= np.fromiter((any(matches(p, s.products) for p in ps) for ps in products), bool, len(products))
    if s.min_memory > 0:
        fits &= memory >= s.min_memory
    memory_tier = np.where(memory >= 0, _TIER_MAX - np.minimum(memory, _TIER_MAX), 0)
    key = (fits.astype(np.int64) << _FITS_SHIFT) | memory_tier
    if args.scoring_strategy == BINPACK:
        key |= ((used > 0).astype(np.int64) << _PARTLY_SHIFT) | (
            (_TIER_MAX - np.minimum(free, _TIER_MAX)) << _TIER_BITS
        )
    else:
        left = np.maximum(free - s.total, 0)
        key |= np.where(total > 0, left * _TIER_MAX // np.maximum(total, 1), 0) << _TIER_BITS
    out: Scores = key.astype(np.int64)
    return out
