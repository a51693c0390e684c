"""One allocation: the depth-first search over pools, devices and subrequests, with backtracking.

Separate from `allocator.py` (the long-lived entry point holding slices, classes and devices in
use) because this is the per-call scratch state, as upstream's `structured/allocator.go` hands
each `Allocate` to the allocator variant in `internal/*/allocator_*.go`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from kubesched.api.meta import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.objects import Node
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)
from kubesched.plugins.dynamic_resources.allocator_types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    DeviceID,
    TimeoutError,
    nanos,
)
from kubesched.plugins.dynamic_resources.constraint import Constraint
from kubesched.plugins.dynamic_resources.consumable_capacity import capacity_fit, consumed_texts
from kubesched.plugins.dynamic_resources.pools import Pool, device_node_match
from kubesched.plugins.dynamic_resources.requests import Candidate, Request, Result, flatten
from kubesched.plugins.dynamic_resources.taints import untolerated

if TYPE_CHECKING:
    from kubesched.plugins.dynamic_resources.allocator import Allocator

__all__ = ["Search"]


class Search:
    """One `Allocate` call: the depth-first search and its scratch state."""

    def __init__(
        self, alloc: Allocator, node: Node, claims: Sequence[ResourceClaim], deadline: float | None
    ) -> None:
        self.alloc = alloc
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools = alloc.slices.gather_pools(node)
        self.requests = [flatten(c) for c in claims]
        self.constraints: list[list[Constraint]] = []
        self.results: list[list[Result]] = [[] for _ in claims]
        self.selected_sub: dict[tuple[int, int], int] = {}
        #: device -> claim indices allocating it in this attempt
        self.allocating: dict[DeviceID, set[int]] = {}
        self.counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self.shared: dict[DeviceID, dict[str, int]] = {}
        self.selectable: dict[tuple[int, int, int, DeviceID], bool] = {}
        #: (claim, request, subrequest) -> the devices in the device preference's order
        self.preferred: dict[tuple[int, int, int], list[Candidate]] = {}
        self.steps = 0

    # ------------------------------------------------------------------ setup
    def run(self) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            minimum = 0
            for ri, options in enumerate(self.requests[ci]):
                fewest = None
                for req in options:
                    self._validate(claim, req, ci, ri)
                    fewest = req.num_devices if fewest is None else min(fewest, req.num_devices)
                minimum += fewest or 0
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {minimum} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints = []
            for i, con in enumerate(claim.spec.devices.constraints):
                if con.match_attribute:
                    constraints.append(Constraint(con.requests, con.match_attribute, False))
                elif con.distinct_attribute:
                    constraints.append(Constraint(con.requests, con.distinct_attribute, True))
                else:
                    raise AllocationError(
                        f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(constraints)
        if not self._one(0, 0, 0, 0, False):
            return None
        return [self._build(ci) for ci in range(len(self.claims))]

    def _validate(self, claim: ResourceClaim, req: Request, ci: int, ri: int) -> None:
        for i, sel in enumerate(req.selectors):
            if sel.cel is None:
                raise AllocationError(
                    f"claim {claim.key}, request {req.sub or req.base}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not req.class_name:
            raise AllocationError(
                f"claim {claim.key}, request {req.sub or req.base}: missing device class name "
                "(unsupported request type?)"
            )
        cls = self.alloc.classes.get(req.class_name)
        if cls is None:
            raise AllocationError(
                f"claim {claim.key}, request {req.sub or req.base}: could not retrieve device class "
                f'{req.class_name}: deviceclass.resource.k8s.io "{req.class_name}" not found'
            )
        req.cls = cls
        if req.mode == ALLOCATION_MODE_EXACT_COUNT:
            req.num_devices = req.count
        elif req.mode == ALLOCATION_MODE_ALL:
            req.all_devices = []
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.sub or req.base}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.invalid_reason:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.sub or req.base}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently invalid"
                    )
                for cand in self._candidates(pool):
                    if self._is_selectable(ci, ri, req, cand):
                        req.all_devices.append(cand)
            req.num_devices = len(req.all_devices)
        else:
            raise AllocationError(
                f"claim {claim.key}, request {req.sub or req.base}: unsupported count mode {req.mode}"
            )

    @staticmethod
    def _candidates(pool: Pool) -> Iterable[Candidate]:
        for slc in pool.slices:
            for device in slc.spec.devices:
                yield Candidate(DeviceID(pool.driver, pool.name, device.name), device, slc, pool)

    # ------------------------------------------------------------------ search
    def _one(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int] = (0, 0, 0)
    ) -> bool:
        self.steps += 1
        if self.deadline is not None and self.steps % 64 == 0 and time.monotonic() > self.deadline:
            raise TimeoutError("timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        options = self.requests[ci]
        if ri >= len(options):
            return self._one(ci + 1, 0, 0, 0, False)
        if not in_sub and options[ri][0].sub:
            for sub_index in range(len(options[ri])):
                if self._one(ci, ri, sub_index, 0, True):
                    self.selected_sub[(ci, ri)] = sub_index
                    return True
            return False
        req = options[ri][si]
        if req.mode == ALLOCATION_MODE_ALL and not req.all_devices:
            return False
        if di >= req.num_devices:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + req.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if req.mode == ALLOCATION_MODE_ALL:
            cand = req.all_devices[di]
            undo = self._allocate_device(ci, req, cand, must=True)
            if undo is None:
                return False
            if self._one(ci, ri, si, di + 1, in_sub):
                return True
            undo()
            return False
        if self.alloc.prefer is not None:
            return self._one_preferred(ci, ri, si, di, in_sub, req, start[2])
        # The request's next device comes after the one just taken (`start`): the search tries
        # sets of devices, not every order of each set (8 of 8 GPUs with one busy: 2^7 steps,
        # not 7!), and one request takes a shared device once, as v1.37.2's allocator does (its
        # incubating variant, which serves the default feature gates).
        first_pool, first_slice, first_device = start
        for pi in range(first_pool, len(self.pools)):
            pool = self.pools[pi]
            if pool.invalid_reason:
                raise AllocationError("invalid resource pools were encountered")
            for sli in range(first_slice if pi == first_pool else 0, len(pool.slices)):
                slc = pool.slices[sli]
                devices = slc.spec.devices
                for dj in range(first_device if pi == first_pool and sli == first_slice else 0, len(devices)):
                    device = devices[dj]
                    cand = Candidate(DeviceID(pool.driver, pool.name, device.name), device, slc, pool)
                    undo = self._take(ci, ri, req, cand)
                    if undo is None:
                        continue
                    if self._one(ci, ri, si, di + 1, in_sub, (pi, sli, dj + 1)):
                        return True
                    undo()
        return False

    def _one_preferred(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, req: Request, first: int
    ) -> bool:
        """The loop of `_one` over the devices in the order of the cycle's device preference: ranked
        once when the request takes its first device, and the request's next device comes after the
        one just taken in that order (`first`), as in upstream's order."""
        prefer = self.alloc.prefer
        assert prefer is not None
        key = (ci, ri, si)
        if di == 0 or key not in self.preferred:
            if any(pool.invalid_reason for pool in self.pools):
                raise AllocationError("invalid resource pools were encountered")
            found = [cand for pool in self.pools for cand in self._candidates(pool)]
            self.preferred[key] = list(prefer.order(self.node, req, found, self._consumed))
        ordered = self.preferred[key]
        for k in range(first, len(ordered)):
            undo = self._take(ci, ri, req, ordered[k])
            if undo is None:
                continue
            if self._one(ci, ri, si, di + 1, in_sub, (0, 0, k + 1)):
                return True
            undo()
        return False

    def _take(self, ci: int, ri: int, req: Request, cand: Candidate) -> Callable[[], None] | None:
        """Allocate `cand` to the request if it is free (admin access: not yet taken by this claim)
        and selectable; returns the undo, or None when the device does not serve."""
        if req.admin_access:
            if ci in self.allocating.get(cand.id, ()):
                return None
        elif self._in_use(cand):
            return None
        if not self._is_selectable(ci, ri, req, cand):
            return None
        return self._allocate_device(ci, req, cand, must=False)

    def _consumed(self, device: DeviceID) -> dict[str, int]:
        before = self.alloc.allocated.consumed.get(device, {})
        pending = self.shared.get(device)
        if not pending:
            return dict(before)
        return {name: before.get(name, 0) + pending.get(name, 0) for name in before.keys() | pending.keys()}

    def _in_use(self, cand: Candidate) -> bool:
        if cand.device.allow_multiple_allocations:
            return False  # shared devices are limited by capacity, checked when allocating
        return self.alloc.allocated.in_use(cand.id) or bool(self.allocating.get(cand.id))

    def _is_selectable(self, ci: int, ri: int, req: Request, cand: Candidate) -> bool:
        key = (ci, ri, id(req), cand.id)
        found = self.selectable.get(key)
        if found is not None:
            return found
        ok = self._selectors_match(ci, req, cand)
        if ok and cand.slice.spec.per_device_node_selection:
            ok = device_node_match(cand.device, self.node)
        self.selectable[key] = ok
        return ok

    def _selectors_match(self, ci: int, req: Request, cand: Candidate) -> bool:
        cache = self.alloc.cache
        assert req.cls is not None
        device = cache.input(cand.id.driver, cand.device)
        verdict = cache.verdict(req.cls, req.selectors, device)
        if verdict is True or verdict is False:
            return verdict
        owner, index, kind, text = verdict
        who = f"class {req.cls.metadata.name}" if owner == "class" else f"claim {self.claims[ci].key}"
        raise AllocationError(f"{who}: selector #{index}: CEL {kind} error: {text}")

    def _allocate_device(
        self, ci: int, req: Request, cand: Candidate, *, must: bool
    ) -> Callable[[], None] | None:
        """Take `cand` for `req` if it fits; the returned function gives it back (None: it does not fit)."""
        if req.admin_access:
            if ci in self.allocating.get(cand.id, ()):
                return None
        elif self._in_use(cand):
            return None
        shared = bool(cand.device.allow_multiple_allocations)
        consumed: dict[str, int] | None = None
        if shared:
            consumed = capacity_fit(
                req.capacity,
                cand.device,
                self.alloc.allocated.consumed.get(cand.id, {}),
                self.shared.get(cand.id, {}),
            )
            if consumed is None:
                return None
        counters_taken = False
        already_shared = shared and (cand.id in self.alloc.allocated.consumed or cand.id in self.shared)
        if cand.device.consumes_counters and not already_shared:
            if not self._take_counters(cand):
                return None
            counters_taken = True
        if untolerated(cand.device, req.tolerations):
            if counters_taken:
                self._give_counters(cand)
            return None
        for added, con in enumerate(self.constraints[ci]):
            if not con.add(req.base, req.sub, cand):
                for done in self.constraints[ci][:added]:
                    done.remove(req.base, req.sub, cand)
                if counters_taken:
                    self._give_counters(cand)
                if must:
                    raise AllocationError(
                        f"claim {self.claims[ci].key}, request {req.sub or req.base}: cannot add device "
                        f"{cand.id} because a claim constraint would not be satisfied"
                    )
                return None
        self.allocating.setdefault(cand.id, set()).add(ci)
        if consumed is not None:
            acc = self.shared.setdefault(cand.id, {})
            for name, amount in consumed.items():
                acc[name] = acc.get(name, 0) + amount
        share_id = self.alloc._share_id(self.claims[ci].key, req.name, cand.id) if shared else None
        if share_id is not None:
            share_id = f"{share_id[:-4]}{len(self.results[ci]):04x}"
        self.results[ci].append(Result(req, cand, share_id, consumed))

        def undo() -> None:
            self.results[ci].pop()
            for con in self.constraints[ci]:
                con.remove(req.base, req.sub, cand)
            self.allocating[cand.id].discard(ci)
            if consumed is not None:
                acc = self.shared[cand.id]
                for name, amount in consumed.items():
                    acc[name] -= amount
                if not any(acc.values()):
                    del self.shared[cand.id]
            if counters_taken:
                self._give_counters(cand)

        return undo

    # ------------------------------------------------------------------ counters
    def _take_counters(self, cand: Candidate) -> bool:
        key = (cand.id.driver, cand.id.pool)
        capacity = self.alloc.slices.counter_sets(*key)
        if any(
            use.counter_set not in capacity
            or any(name not in capacity[use.counter_set] for name in use.counters)
            for use in cand.device.consumes_counters
        ):
            return False  # consumes a counter the pool does not publish: never allocatable
        in_use = self.alloc.counters_in_use(*key)
        taking = self.counters.setdefault(key, {})
        for use in cand.device.consumes_counters:
            acc = taking.setdefault(use.counter_set, {})
            for name, c in use.counters.items():
                acc[name] = acc.get(name, 0) + nanos(c.value)
        fits = all(
            in_use.get(cs, {}).get(name, 0) + taking.get(cs, {}).get(name, 0) <= value
            for cs, counters in capacity.items()
            for name, value in counters.items()
        )
        if not fits:
            self._give_counters(cand)
        return fits

    def _give_counters(self, cand: Candidate) -> None:
        taking = self.counters[(cand.id.driver, cand.id.pool)]
        for use in cand.device.consumes_counters:
            acc = taking[use.counter_set]
            for name, c in use.counters.items():
                acc[name] -= nanos(c.value)

    # ------------------------------------------------------------------ results
    def _build(self, ci: int) -> AllocationResult:
        claim = self.claims[ci]
        results = []
        for r in self.results[ci]:
            results.append(
                DeviceRequestAllocationResult(
                    request=r.request.name,
                    driver=r.cand.id.driver,
                    pool=r.cand.id.pool,
                    device=r.cand.id.device,
                    admin_access=True if r.request.admin_access else None,
                    tolerations=list(r.request.tolerations),
                    binding_conditions=list(r.cand.device.binding_conditions),
                    binding_failure_conditions=list(r.cand.device.binding_failure_conditions),
                    share_id=r.share_id,
                    consumed_capacity=consumed_texts(r),
                )
            )
        config: list[DeviceAllocationConfiguration] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        chosen = []
        for ri, options in enumerate(self.requests[ci]):
            req = options[self.selected_sub.get((ci, ri), 0)] if options[0].sub else options[0]
            chosen.append(req)
            if req.cls is None:
                continue
            span = class_ranges.get(req.cls.metadata.name)
            if span is not None:
                for i in range(*span):
                    config[i] = DeviceAllocationConfiguration(
                        source=config[i].source,
                        requests=[*config[i].requests, req.name],
                        opaque=config[i].opaque,
                    )
                continue
            start = len(config)
            for cfg in req.cls.spec.config:
                config.append(
                    DeviceAllocationConfiguration(source="FromClass", requests=[req.name], opaque=cfg.opaque)
                )
            class_ranges[req.cls.metadata.name] = (start, len(config))
        for claim_cfg in claim.spec.devices.config:
            if not claim_cfg.requests:
                config.append(
                    DeviceAllocationConfiguration(source="FromClaim", requests=[], opaque=claim_cfg.opaque)
                )
                continue
            for req in chosen:
                if req.base in claim_cfg.requests or (req.sub and req.name in claim_cfg.requests):
                    config.append(
                        DeviceAllocationConfiguration(
                            source="FromClaim", requests=list(claim_cfg.requests), opaque=claim_cfg.opaque
                        )
                    )
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=config),
            node_selector=self._node_selector(self.results[ci], claim),
        )

    def _node_selector(self, results: list[Result], claim: ResourceClaim) -> NodeSelector | None:
        fields: list[NodeSelectorRequirement] = []
        expressions: list[NodeSelectorRequirement] = []
        for r in results:
            spec = r.cand.slice.spec
            if spec.per_device_node_selection:
                node_name, selector = r.cand.device.node_name, r.cand.device.node_selector
            else:
                node_name, selector = spec.node_name, spec.node_selector
            if node_name or r.cand.device.binds_to_node:
                return NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_fields=[
                                NodeSelectorRequirement(
                                    key="metadata.name",
                                    operator="In",
                                    values=[node_name or self.node.metadata.name],
                                )
                            ]
                        )
                    ]
                )
            if selector is not None:
                terms = selector.node_selector_terms
                if len(terms) > 1:
                    raise AllocationError(
                        f"create NodeSelector for claim {claim.metadata.name}: unsupported "
                        f"ResourceSlice.NodeSelector with {len(terms)} terms"
                    )
                if terms:
                    for req in terms[0].match_fields:
                        if req not in fields:
                            fields.append(req)
                    for req in terms[0].match_expressions:
                        if req not in expressions:
                            expressions.append(req)
        if fields or expressions:
            return NodeSelector(
                node_selector_terms=[NodeSelectorTerm(match_expressions=expressions, match_fields=fields)]
            )
        return None
