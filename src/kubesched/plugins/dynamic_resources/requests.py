"""A claim's requests flattened for the search, the devices it considers, and the devices it picks.

Separate because the search, the constraints and consumable capacity all work on these records;
one module keeps them importable without a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.api.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    Device,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.plugins.dynamic_resources.allocator_types import DeviceID
from kubesched.plugins.dynamic_resources.pools import Pool

__all__ = ["Candidate", "Request", "Result", "flatten"]


@dataclass(slots=True)
class Request:
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
    all_devices: list[Candidate] = field(default_factory=list)
    num_devices: int = 0


@dataclass(slots=True)
class Candidate:
    """A device the search may pick, with where it was found."""

    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


def flatten(claim: ResourceClaim) -> list[list[Request]]:
    """Per request: [the request] or its subrequests in order."""
    out = []
    for req in claim.spec.devices.requests:
        if req.first_available:
            out.append(
                [
                    Request(
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
            out.append([Request(req.name, req.name, "", "", [], "", 0, False, [], {})])
            continue
        out.append(
            [
                Request(
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


@dataclass(slots=True)
class Result:
    """A device picked for a request, with its share id and consumed capacity when shared."""

    request: Request
    cand: Candidate
    share_id: str | None = None
    consumed: dict[str, int] | None = None
