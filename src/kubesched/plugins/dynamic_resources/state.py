"""The plugin's PreFilter state and the records it holds, written once per scheduling cycle.

Separate because every extension point after PreFilter reads it, and the fast filter and the
binding helpers take it too (upstream: `stateData` in `dynamicresources.go`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.resource import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from kubesched.api.selectors import NodeSelectorMatcher
from kubesched.framework.status import Status
from kubesched.plugins.dynamic_resources.allocator import Allocator
from kubesched.plugins.dynamic_resources.claims import ClaimRef
from kubesched.plugins.dynamic_resources.extended_claim import ExtendedClaim
from kubesched.plugins.dynamic_resources.shared_fast import SharedRequest

__all__ = ["STATE_KEY", "FastRequest", "PreFilterState"]

STATE_KEY = "DynamicResources"


@dataclass(slots=True)
class FastRequest:
    """One request of a claim being allocated, for the fast filter: its options in order."""

    options: list[tuple[DeviceClass, Sequence[Any], int]]  # (class, selectors, count) per (sub)request


@dataclass(slots=True)
class PreFilterState:
    """What PreFilter resolved for the pod, and what Filter, Score, Reserve and PreBind learn per node."""

    refs: list[ClaimRef]
    to_allocate: list[ResourceClaim]
    allocator: Allocator | None
    #: (claim position in refs, compiled allocation.nodeSelector) for allocated claims
    allocated_selectors: list[tuple[int, NodeSelectorMatcher]]
    fast: list[FastRequest] | None
    has_subrequests: bool
    deadline_seconds: float
    results: dict[str, list[AllocationResult] | None] = field(default_factory=dict)
    #: per table row: the subrequest the fast filter found for the pod's one request (-1: unknown)
    fast_sub: np.ndarray[Any, np.dtype[np.int64]] | None = None
    unavailable: set[int] = field(default_factory=set)
    reserved: list[tuple[ResourceClaim, AllocationResult | None]] = field(default_factory=list)
    extended: ExtendedClaim | None = None
    #: per node: the claims allocated there (the user's, then the node's extended-resource claim)
    node_claims: dict[str, list[ResourceClaim]] = field(default_factory=dict)
    rejected: dict[str, Status] = field(default_factory=dict)
    #: allocated claims (positions in refs) whose binding failed or timed out
    stale: list[int] = field(default_factory=list)
    #: the pod's one request for shared capacity, for the shared-capacity filter (None: not its case)
    shared: SharedRequest | None = None
    #: positions in refs of claims whose allocation, pending for this pod-group cycle, is reused
    reused: dict[int, AllocationResult] = field(default_factory=dict)
    #: claim uid -> whom PreBind reserves it for, when not the pod (its PodGroup)
    consumers: dict[str, ResourceClaimConsumerReference] = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return self
