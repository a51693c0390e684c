"""Consumable capacity: what a share of a multi-allocatable device consumes, and how it is written.

Separate because it is its own feature (DRAConsumableCapacity) with its own arithmetic: request
policies, rounding to valid values or steps, and the quantities reported in `consumedCapacity`
(upstream: `internal/*/consumable_capacity.go`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.resource import Device
from kubesched.plugins.dynamic_resources.allocator_types import nanos
from kubesched.plugins.dynamic_resources.requests import Result

__all__ = ["apply_policy", "capacity_fit", "consumed_texts", "format_nanos"]


def capacity_fit(
    requested: Mapping[str, str | int | float],
    device: Device,
    before: Mapping[str, int],
    pending: Mapping[str, int],
) -> dict[str, int] | None:
    """Capacity this share consumes (nano units), or None when the device cannot give it beside
    what is consumed already (`before`) and in this search (`pending`)."""
    capacity = device.capacity
    if any(name not in capacity for name in requested):
        return None
    consumed: dict[str, int] = {}
    for name, cap in capacity.items():
        total = nanos(cap.value)
        policy = cap.request_policy
        wanted = requested.get(name)
        if wanted is not None:
            amount = nanos(wanted)
        elif policy is not None and policy.default is not None:
            amount = nanos(policy.default)
        else:
            amount = total
        if policy is not None and wanted is not None:
            rounded = apply_policy(amount, policy)
            if rounded is None:
                return None
            amount = rounded
        if before.get(name, 0) + pending.get(name, 0) + amount > total:
            return None
        consumed[name] = amount
    return consumed


def apply_policy(amount: int, policy: Any) -> int | None:
    """Round a requested capacity up to what the device's request policy allows (None: not allowed)."""
    if policy.valid_values:
        allowed = sorted(nanos(v) for v in policy.valid_values)
        for value in allowed:
            if value >= amount:
                return value
        return None
    rng = policy.valid_range
    if rng is not None:
        low = nanos(rng.min) if rng.min is not None else 0
        if amount < low:
            amount = low
        if rng.step is not None:
            step = nanos(rng.step)
            if step > 0:
                amount = low + -(-(amount - low) // step) * step
        if rng.max is not None and amount > nanos(rng.max):
            return None
    return amount


def consumed_texts(r: Result) -> dict[str, str | int | float]:
    """consumedCapacity as quantities: the text the request, policy or device gave when unchanged."""
    out: dict[str, str | int | float] = {}
    for name, amount in (r.consumed or {}).items():
        cap = r.cand.device.capacity[name]
        sources: list[str | int | float | None] = [r.request.capacity.get(name), cap.value]
        if cap.request_policy is not None:
            sources.append(cap.request_policy.default)
        text = next((s for s in sources if s is not None and nanos(s) == amount), None)
        out[name] = text if text is not None else format_nanos(amount)
    return out


def format_nanos(amount: int) -> str:
    """A quantity string for an amount in nano units (integers plain, else with the `n` suffix)."""
    if amount % 10**9 == 0:
        return str(amount // 10**9)
    if amount % 10**6 == 0:
        return f"{amount // 10**6}m"
    return f"{amount}n"
