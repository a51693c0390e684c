"""The fast filter: single-request claims decided for all nodes at once from the device table.

Separate because it is kubesched's own shortcut, not an upstream step: it must give the verdicts
the allocator would, and leaves every node it cannot be sure of to the allocator (`verify`).
Also the `firstAvailable` score the allocator's results give, which the fast filter can
short-cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim
from kubesched.framework.node_table import NodeSet
from kubesched.plugins.dynamic_resources.allocator_types import FIRST_AVAILABLE_MAX_SIZE
from kubesched.plugins.dynamic_resources.device_table import DeviceTable
from kubesched.plugins.dynamic_resources.state import FastRequest, PreFilterState

__all__ = ["fast_filter", "fast_requests", "first_available_score"]


def fast_filter(
    data: PreFilterState, table: DeviceTable | None, nodes: NodeSet, undecided: np.ndarray[Any, Any]
) -> tuple[Any, Any]:
    """(feasible, verify): nodes known to fit, and nodes the allocator must decide."""
    n = len(nodes)
    if not data.fast or table is None or not table.usable:
        return np.zeros(n, dtype=np.bool_), undecided.copy()
    ok: np.ndarray[Any, Any] | None = None
    unusable: np.ndarray[Any, Any] | None = None
    sub: np.ndarray[Any, Any] | None = None
    single = len(data.fast) == 1
    for request in data.fast:
        options = [(*table.match(cls, selectors), count) for cls, selectors, count in request.options]
        fits, first, bad = table.request_rows(nodes.table, options)
        if not nodes.full:
            fits, first, bad = fits[nodes.rows], first[nodes.rows], bad[nodes.rows]
        ok = fits if ok is None else ok & fits
        unusable = bad if unusable is None else unusable | bad
        sub = first
    assert ok is not None and unusable is not None
    feasible = undecided & ok & ~unusable
    verify = undecided & unusable
    if not single:
        verify |= feasible  # several requests may compete for the same devices: let the allocator decide
        feasible = np.zeros(n, dtype=np.bool_)
    elif data.has_subrequests and sub is not None:
        if nodes.full:
            data.fast_sub = np.where(feasible, sub, -1)
        else:
            by_row = np.full(len(nodes.table), -1, dtype=np.int64)
            by_row[nodes.rows[feasible]] = sub[feasible]
            data.fast_sub = by_row
    return feasible, verify


def fast_requests(claims: list[ResourceClaim], classes: dict[str, DeviceClass]) -> list[FastRequest] | None:
    """The claims' requests in the fast filter's terms, or None when one needs the full allocator."""
    out: list[FastRequest] = []
    for claim in claims:
        spec = claim.spec.devices
        if spec.constraints:
            return None
        for req in spec.requests:
            options: list[tuple[DeviceClass, Sequence[Any], int]] = []
            subs = req.first_available or []
            if subs:
                for sub in subs:
                    if (sub.allocation_mode or "ExactCount") != "ExactCount" or sub.capacity is not None:
                        return None
                    options.append((classes[sub.device_class_name], sub.selectors, sub.count or 1))
            else:
                ex = req.exactly
                if ex is None or ex.admin_access or ex.capacity is not None:
                    return None
                if (ex.allocation_mode or "ExactCount") != "ExactCount":
                    return None
                options.append(
                    (classes[ex.device_class_name], ex.selectors, ex.count if ex.count is not None else 1)
                )
            out.append(FastRequest(options))
    return out


def first_available_score(claims: Sequence[ResourceClaim], results: Sequence[AllocationResult]) -> int:
    score = 0
    for claim, result in zip(claims, results, strict=False):
        for req in claim.spec.devices.requests:
            if not req.first_available:
                continue
            used = {r.request for r in result.devices.results}
            for i, sub in enumerate(req.first_available):
                if f"{req.name}/{sub.name}" in used:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
                    break
    return score
