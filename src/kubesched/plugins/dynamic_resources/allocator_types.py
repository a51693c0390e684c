"""The allocator's vocabulary: device ids, the devices already in use, its errors and its limits.

Separate because every allocator module and the claim bookkeeping (`claims.py`) speak it, as upstream's
structured allocator keeps them in `internal/types.go` and `internal/allocatedstate.go`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from kubesched.api.quantity import QuantityError, quantity_nanos

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "FIRST_AVAILABLE_MAX_SIZE",
    "AllocatedState",
    "AllocationError",
    "DeviceID",
    "TimeoutError",
    "nanos",
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


def nanos(value: str | int | float | None) -> int:
    """A quantity in nano units; a bad quantity is an allocation error, as upstream reports it."""
    if value is None:
        return 0
    try:
        return quantity_nanos(value)
    except QuantityError as err:
        raise AllocationError(err.message) from None
