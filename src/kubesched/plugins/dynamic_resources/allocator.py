"""The structured-parameters allocator: ResourceSlices, claims and devices in use in; allocations out.

Pure: no cluster, no clock but an optional deadline. It searches as upstream's allocator (the
variant v1.37 runs, with admin access, prioritized lists, partitionable devices, device taints,
consumable capacity and binding conditions) does, so the same inputs give the same devices:

* pools are the slices relevant to the node (`nodeName`, `allNodes`, a matching `nodeSelector`,
  or per-device node selection), grouped by (driver, pool name); the highest `pool.generation` wins;
  a pool is incomplete when fewer slices of that generation exist than `resourceSliceCount`;
  pools are sorted by driver then name, pools with binding-condition devices go last, and slices
  within a pool by name;
* claims in order, their requests in order, each request's devices in pool/slice/device order;
  depth-first with backtracking, and the **first** complete solution wins;
* a device is eligible when it is not in use (unless admin access), its class's and the request's
  CEL selectors all return true (results memoised by device content), per-device node selection
  admits the node, its counters fit (partitionable devices), each NoSchedule/NoExecute taint is
  tolerated, requested capacity fits (consumable capacity), and every constraint of the claim
  (`matchAttribute`, `distinctAttribute`) still holds.

`allocate` returns one AllocationResult per claim, None when the claims do not fit the node, and
raises AllocationError for what upstream reports as an error (CEL failures, a missing class, an
"All" request over a pool being updated, the 32-device limit, ...).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from kubesched.api.objects import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.api.selectors import compile_node_selector
from kubesched.cel import CELError, compile_selector, device_input
from kubesched.cel.selectors import DeviceInput

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "FIRST_AVAILABLE_MAX_SIZE",
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "MatchCache",
    "SliceIndex",
    "TimeoutError",
    "tolerates",
]

#: Devices one claim may get (`AllocationResultsMaxSize`).
ALLOCATION_RESULTS_MAX_SIZE = 32
#: Subrequests of one `firstAvailable` request (`FirstAvailableDeviceRequestMaxSize`).
FIRST_AVAILABLE_MAX_SIZE = 8


class AllocationError(Exception):
    """Allocation cannot proceed: upstream reports this as an Error, not as "does not fit"."""


class TimeoutError(AllocationError):
    """The per-node allocation deadline passed."""


class DeviceID(NamedTuple):
    """A device by driver, pool and name. A tuple, so building and hashing one costs a few C calls
    (the device table holds 40,000 of them and every allocation looks them up)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(slots=True)
class AllocatedState:
    """Devices already allocated to claims (informer + assumed + in-flight), as the allocator needs them.

    `exclusive`: devices held whole (results without admin access, on devices that do not allow
    multiple allocations); `consumed`: per shared device, capacity already consumed (nano units) by
    all its shares.
    """

    exclusive: set[DeviceID] = field(default_factory=set)
    consumed: dict[DeviceID, dict[str, int]] = field(default_factory=dict)

    def in_use(self, device: DeviceID) -> bool:
        return device in self.exclusive or device in self.consumed


def tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """Core toleration semantics applied to a device taint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return bool(toleration.key) and toleration.value == taint.value
    return False


# --------------------------------------------------------------------------- CEL memo

_CONTENT = msgspec.json.Encoder()


class MatchCache:
    """Selector results by (expression, device content): a device's `device` variable never changes
    while its slice does not, so each distinct device is evaluated once per expression, ever."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, tuple[Any, ...]], bool | str] = {}
        self._verdicts: dict[tuple[Any, ...], bool | tuple[str, int, str, str]] = {}
        self._inputs: dict[tuple[str, int], DeviceInput] = {}
        self._by_content: dict[tuple[str, bytes], DeviceInput] = {}
        self._devices: list[Device] = []

    def input(self, driver: str, device: Device) -> DeviceInput:
        """The `device` variable of a device; devices with the same content share one."""
        key = (driver, id(device))
        found = self._inputs.get(key)
        if found is None:
            content = (
                driver,
                _CONTENT.encode((device.attributes, device.capacity, device.allow_multiple_allocations)),
            )
            found = self._by_content.get(content)
            if found is None:
                found = self._by_content[content] = device_input(driver, device)
            self._inputs[key] = found
            self._devices.append(device)  # keeps id(device) from being reused while cached
        return found

    def remember(self, driver: str, device: Device, found: DeviceInput) -> None:
        """Record `device`'s variable, found by content elsewhere (the device table), so the
        allocator's `input` for it is a lookup instead of an encoding of its attributes."""
        key = (driver, id(device))
        if key not in self._inputs:
            self._inputs[key] = found
            self._devices.append(device)

    def matches(self, expression: str, device: DeviceInput) -> bool:
        """True/False, or raises CELError (compile error, runtime error)."""
        key = (expression, device.key)
        result = self._results.get(key)
        if result is None:
            try:
                result = compile_selector(expression).matches(device)
            except CELError as err:
                result = str(err) or "error"
            self._results[key] = result
        if isinstance(result, str):
            raise CELError(result)
        return result

    def compile_error(self, expression: str) -> str:
        return compile_selector(expression).error

    def verdict(
        self, cls: DeviceClass, selectors: Sequence[DeviceSelector], device: DeviceInput
    ) -> bool | tuple[str, int, str, str]:
        """Do the class's and then the request's selectors all accept `device`? Or the first failure
        as (owner "class"/"claim", selector index, "compile"/"runtime", text). Memoised by content."""
        exprs = (
            tuple(s.cel.expression if s.cel is not None else "" for s in cls.spec.selectors),
            tuple(s.cel.expression if s.cel is not None else "" for s in selectors),
        )
        key = (exprs, device.key)
        found = self._verdicts.get(key)
        if found is None:
            found = self._evaluate(exprs, device)
            self._verdicts[key] = found
        return found

    def _evaluate(
        self, exprs: tuple[tuple[str, ...], tuple[str, ...]], device: DeviceInput
    ) -> bool | tuple[str, int, str, str]:
        for owner, expressions in (("class", exprs[0]), ("claim", exprs[1])):
            for i, expression in enumerate(expressions):
                error = self.compile_error(expression)
                if error:
                    return (owner, i, "compile", error)
                try:
                    if not self.matches(expression, device):
                        return False
                except CELError as err:
                    return (owner, i, "runtime", str(err))
        return True

    def __len__(self) -> int:
        return len(self._results)


# --------------------------------------------------------------------------- pools


@dataclass(slots=True)
class Pool:
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


def _slice_node_match(slc: ResourceSlice, node: Node) -> bool:
    spec = slc.spec
    if spec.node_name:
        return spec.node_name == node.metadata.name
    if spec.all_nodes:
        return True
    if spec.node_selector is not None:
        return compile_node_selector(spec.node_selector).matches(node.metadata.name, node.metadata.labels)
    return bool(spec.per_device_node_selection)


def device_node_match(device: Device, node: Node) -> bool:
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
        self.slices = [_apply_taint_rules(s, taint_rules) for s in slices] if taint_rules else list(slices)
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
                    found[cs.name] = {name: _nanos(c.value) for name, c in cs.counters.items()}
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
        candidates.extend(s for s in self.other if _slice_node_match(s, node))
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


def _apply_taint_rules(slc: ResourceSlice, rules: Sequence[Any]) -> ResourceSlice:
    """The slice with DeviceTaintRules' taints added to the devices they select."""
    import msgspec

    changed = False
    devices = []
    for device in slc.spec.devices:
        extra = []
        for rule in rules:
            sel = rule.spec.device_selector
            if sel is not None and (
                (sel.driver and sel.driver != slc.spec.driver)
                or (sel.pool and sel.pool != slc.spec.pool.name)
                or (sel.device and sel.device != device.name)
            ):
                continue
            extra.append(rule.spec.taint)
        if extra:
            changed = True
            device = msgspec.structs.replace(device, taints=[*device.taints, *extra])
        devices.append(device)
    if not changed:
        return slc
    return msgspec.structs.replace(slc, spec=msgspec.structs.replace(slc.spec, devices=devices))


def _nanos(value: str | int | float | None) -> int:
    if value is None:
        return 0
    try:
        return quantity_nanos(value)
    except QuantityError as err:
        raise AllocationError(err.message) from None


# --------------------------------------------------------------------------- requests


@dataclass(slots=True)
class _Request:
    """A request or one subrequest, flattened."""

    name: str  # request name, or "<request>/<subrequest>"
    base: str  # the request's name
    sub: str  # the subrequest's name, "" if none
    class_name: str
    selectors: list[DeviceSelector]
    mode: str
    count: int
    admin_access: bool
    tolerations: list[DeviceToleration]
    capacity: Mapping[str, str | int | float]
    cls: DeviceClass | None = None
    all_devices: list[_Candidate] = field(default_factory=list)
    num_devices: int = 0


@dataclass(slots=True)
class _Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


def _flatten(claim: ResourceClaim) -> list[list[_Request]]:
    """Per request: [the request] or its subrequests in order."""
    out = []
    for req in claim.spec.devices.requests:
        if req.first_available:
            out.append(
                [
                    _Request(
                        f"{req.name}/{sub.name}",
                        req.name,
                        sub.name,
                        sub.device_class_name,
                        sub.selectors,
                        sub.allocation_mode or ALLOCATION_MODE_EXACT_COUNT,
                        sub.count if sub.count is not None else 1,
                        False,
                        sub.tolerations,
                        sub.capacity.requests if sub.capacity else {},
                    )
                    for sub in req.first_available
                ]
            )
            continue
        ex = req.exactly
        if ex is None:
            out.append([_Request(req.name, req.name, "", "", [], "", 0, False, [], {})])
            continue
        out.append(
            [
                _Request(
                    req.name,
                    req.name,
                    "",
                    ex.device_class_name,
                    ex.selectors,
                    ex.allocation_mode or ALLOCATION_MODE_EXACT_COUNT,
                    ex.count if ex.count is not None else 1,
                    bool(ex.admin_access),
                    ex.tolerations,
                    ex.capacity.requests if ex.capacity else {},
                )
            ]
        )
    return out


# --------------------------------------------------------------------------- constraints


def lookup_attribute(device: Device, driver: str, name: str) -> Any:
    """The typed value of a fully qualified attribute; `<driver>/<id>` falls back to `<id>`."""
    attr = device.attributes.get(name)
    if attr is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != driver:
            return None
        attr = device.attributes.get(ident)
        if attr is None:
            return None
    for kind in ("int", "bool", "string", "version"):
        value = getattr(attr, kind)
        if value is not None:
            return (kind, value)
    return None


class _Constraint:
    def __init__(self, requests: list[str], attribute: str, distinct: bool) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.distinct = distinct
        self.values: list[Any] = []

    def applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, cand: _Candidate) -> bool:
        if not self.applies(base, sub):
            return True
        value = lookup_attribute(cand.device, cand.id.driver, self.attribute)
        if value is None:
            return False
        if self.values:
            if self.distinct and value in self.values:
                return False
            if not self.distinct and value != self.values[0]:
                return False
        self.values.append(value)
        return True

    def remove(self, base: str, sub: str, cand: _Candidate) -> None:
        if self.applies(base, sub):
            self.values.pop()


# --------------------------------------------------------------------------- the allocator


@dataclass(slots=True)
class _Result:
    request: _Request
    cand: _Candidate
    share_id: str | None = None
    consumed: dict[str, int] | None = None


class Allocator:
    """Allocates claims on one node at a time against fixed slices, classes and devices in use."""

    def __init__(
        self,
        slices: SliceIndex,
        classes: Mapping[str, DeviceClass],
        allocated: AllocatedState,
        *,
        match_cache: MatchCache | None = None,
        share_id: Callable[[str, str, DeviceID], str] | None = None,
    ) -> None:
        self.slices = slices
        self.classes = classes
        self.allocated = allocated
        self.cache = match_cache if match_cache is not None else MatchCache()
        self._share_id = share_id or _default_share_id
        self._consumed_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}

    # ------------------------------------------------------------------ public
    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        return _Search(self, node, claims, deadline).run()

    def counters_in_use(self, driver: str, pool: str) -> dict[str, dict[str, int]]:
        """Counters consumed by the pool's allocated devices (memoised per allocator)."""
        key = (driver, pool)
        found = self._consumed_counters.get(key)
        if found is None:
            found = {}
            for slc in self.slices.pool_slices.get(key, []):
                for device in slc.spec.devices:
                    if not device.consumes_counters:
                        continue
                    if not self.allocated.in_use(DeviceID(driver, pool, device.name)):
                        continue
                    for use in device.consumes_counters:
                        acc = found.setdefault(use.counter_set, {})
                        for name, c in use.counters.items():
                            acc[name] = acc.get(name, 0) + _nanos(c.value)
            self._consumed_counters[key] = found
        return found


def _default_share_id(claim: str, request: str, device: DeviceID) -> str:
    digest = hashlib.sha256(f"{claim}\x00{request}\x00{device}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


class _Search:
    """One `Allocate` call: the depth-first search and its scratch state."""

    def __init__(
        self, alloc: Allocator, node: Node, claims: Sequence[ResourceClaim], deadline: float | None
    ) -> None:
        self.alloc = alloc
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools = alloc.slices.gather_pools(node)
        self.requests = [_flatten(c) for c in claims]
        self.constraints: list[list[_Constraint]] = []
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.selected_sub: dict[tuple[int, int], int] = {}
        #: device -> claim indices allocating it in this attempt
        self.allocating: dict[DeviceID, set[int]] = {}
        self.counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self.shared: dict[DeviceID, dict[str, int]] = {}
        self.selectable: dict[tuple[int, int, int, DeviceID], bool] = {}
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
                    constraints.append(_Constraint(con.requests, con.match_attribute, False))
                elif con.distinct_attribute:
                    constraints.append(_Constraint(con.requests, con.distinct_attribute, True))
                else:
                    raise AllocationError(
                        f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(constraints)
        if not self._one(0, 0, 0, 0, False):
            return None
        return [self._build(ci) for ci in range(len(self.claims))]

    def _validate(self, claim: ResourceClaim, req: _Request, ci: int, ri: int) -> None:
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
    def _candidates(pool: Pool) -> Iterable[_Candidate]:
        for slc in pool.slices:
            for device in slc.spec.devices:
                yield _Candidate(DeviceID(pool.driver, pool.name, device.name), device, slc, pool)

    # ------------------------------------------------------------------ search
    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
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
        for pool in self.pools:
            if pool.invalid_reason:
                raise AllocationError("invalid resource pools were encountered")
            for cand in self._candidates(pool):
                if req.admin_access:
                    if ci in self.allocating.get(cand.id, ()):
                        continue
                elif self._in_use(cand):
                    continue
                if not self._is_selectable(ci, ri, req, cand):
                    continue
                undo = self._allocate_device(ci, req, cand, must=False)
                if undo is None:
                    continue
                if self._one(ci, ri, si, di + 1, in_sub):
                    return True
                undo()
        return False

    def _in_use(self, cand: _Candidate) -> bool:
        if cand.device.allow_multiple_allocations:
            return False  # shared devices are limited by capacity, checked when allocating
        return self.alloc.allocated.in_use(cand.id) or bool(self.allocating.get(cand.id))

    def _is_selectable(self, ci: int, ri: int, req: _Request, cand: _Candidate) -> bool:
        key = (ci, ri, id(req), cand.id)
        found = self.selectable.get(key)
        if found is not None:
            return found
        ok = self._selectors_match(ci, req, cand)
        if ok and cand.slice.spec.per_device_node_selection:
            ok = device_node_match(cand.device, self.node)
        self.selectable[key] = ok
        return ok

    def _selectors_match(self, ci: int, req: _Request, cand: _Candidate) -> bool:
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
        self, ci: int, req: _Request, cand: _Candidate, *, must: bool
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
            consumed = self._capacity_fit(req, cand)
            if consumed is None:
                return None
        counters_taken = False
        already_shared = shared and (cand.id in self.alloc.allocated.consumed or cand.id in self.shared)
        if cand.device.consumes_counters and not already_shared:
            if not self._take_counters(cand):
                return None
            counters_taken = True
        if _untolerated(cand.device, req.tolerations):
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
        self.results[ci].append(_Result(req, cand, share_id, consumed))

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
    def _take_counters(self, cand: _Candidate) -> bool:
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
                acc[name] = acc.get(name, 0) + _nanos(c.value)
        fits = all(
            in_use.get(cs, {}).get(name, 0) + taking.get(cs, {}).get(name, 0) <= value
            for cs, counters in capacity.items()
            for name, value in counters.items()
        )
        if not fits:
            self._give_counters(cand)
        return fits

    def _give_counters(self, cand: _Candidate) -> None:
        taking = self.counters[(cand.id.driver, cand.id.pool)]
        for use in cand.device.consumes_counters:
            acc = taking[use.counter_set]
            for name, c in use.counters.items():
                acc[name] -= _nanos(c.value)

    # ------------------------------------------------------------------ consumable capacity
    def _capacity_fit(self, req: _Request, cand: _Candidate) -> dict[str, int] | None:
        """Capacity this share consumes (nano units), or None when the device cannot give it."""
        capacity = cand.device.capacity
        if any(name not in capacity for name in req.capacity):
            return None
        consumed: dict[str, int] = {}
        before = self.alloc.allocated.consumed.get(cand.id, {})
        pending = self.shared.get(cand.id, {})
        for name, cap in capacity.items():
            total = _nanos(cap.value)
            policy = cap.request_policy
            wanted = req.capacity.get(name)
            if wanted is not None:
                amount = _nanos(wanted)
            elif policy is not None and policy.default is not None:
                amount = _nanos(policy.default)
            else:
                amount = total
            if policy is not None and wanted is not None:
                rounded = _apply_policy(amount, policy)
                if rounded is None:
                    return None
                amount = rounded
            if before.get(name, 0) + pending.get(name, 0) + amount > total:
                return None
            consumed[name] = amount
        return consumed

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
                    consumed_capacity=_consumed_texts(r),
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

    def _node_selector(self, results: list[_Result], claim: ResourceClaim) -> NodeSelector | None:
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


def _untolerated(device: Device, tolerations: Sequence[DeviceToleration]) -> bool:
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return True
    return False


def _apply_policy(amount: int, policy: Any) -> int | None:
    """Round a requested capacity up to what the device's request policy allows (None: not allowed)."""
    if policy.valid_values:
        allowed = sorted(_nanos(v) for v in policy.valid_values)
        for value in allowed:
            if value >= amount:
                return value
        return None
    rng = policy.valid_range
    if rng is not None:
        low = _nanos(rng.min) if rng.min is not None else 0
        if amount < low:
            amount = low
        if rng.step is not None:
            step = _nanos(rng.step)
            if step > 0:
                amount = low + -(-(amount - low) // step) * step
        if rng.max is not None and amount > _nanos(rng.max):
            return None
    return amount


def _consumed_texts(r: _Result) -> dict[str, str | int | float]:
    """consumedCapacity as quantities: the text the request, policy or device gave when unchanged."""
    out: dict[str, str | int | float] = {}
    for name, amount in (r.consumed or {}).items():
        cap = r.cand.device.capacity[name]
        sources: list[str | int | float | None] = [r.request.capacity.get(name), cap.value]
        if cap.request_policy is not None:
            sources.append(cap.request_policy.default)
        text = next((s for s in sources if s is not None and _nanos(s) == amount), None)
        out[name] = text if text is not None else _format_nanos(amount)
    return out


def _format_nanos(nanos: int) -> str:
    """A quantity string for an amount in nano units (integers plain, else with the `n` suffix)."""
    if nanos % 10**9 == 0:
        return str(nanos // 10**9)
    if nanos % 10**6 == 0:
        return f"{nanos // 10**6}m"
    return f"{nanos}n"
