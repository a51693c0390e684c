"""Device taints: DeviceTaintRules applied to slices, and whether a request tolerates a device.

Separate because the taint rules change the slices before any pool is gathered, while tolerations
are checked per device during the search (upstream: `resourceslice/tracker` and the allocators'
`allocateDevice`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubesched.api.resource import Device, DeviceTaint, DeviceToleration, ResourceSlice

__all__ = ["apply_taint_rules", "tolerates", "untolerated"]


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


def untolerated(device: Device, tolerations: Sequence[DeviceToleration]) -> bool:
    """Does the device carry a NoSchedule/NoExecute taint none of `tolerations` tolerates?"""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return True
    return False


def apply_taint_rules(slc: ResourceSlice, rules: Sequence[Any]) -> ResourceSlice:
    """The slice with DeviceTaintRules' taints added to the devices they select."""
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
