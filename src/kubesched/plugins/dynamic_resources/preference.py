"""An optional device preference: the order in which the search tries the devices of one node.

Upstream's allocator tries devices in pool, slice and device order, and so does ours. A policy that
also decides *which* device of the node a pod gets (the GPU-sharing policies put a share on the GPU
they score best) writes a `DevicePreference` into the cycle state in its PreFilter; DynamicResources
hands it to the allocator for that cycle only. Without one, nothing changes: the search keeps
upstream's order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from kubesched.api.objects import Node
from kubesched.framework.cycle_state import CycleState
from kubesched.plugins.dynamic_resources.allocator_types import DeviceID
from kubesched.plugins.dynamic_resources.requests import Candidate, Request

__all__ = ["DEVICE_PREFERENCE_KEY", "DevicePreference", "preference_in"]

#: The cycle-state key a preferring plugin writes its `DevicePreference` under.
DEVICE_PREFERENCE_KEY = "DynamicResources/DevicePreference"


@runtime_checkable
class DevicePreference(Protocol):
    """Ranks the devices a request may take on one node."""

    def clone(self) -> DevicePreference: ...

    def order(
        self,
        node: Node,
        request: Request,
        candidates: Sequence[Candidate],
        consumed: Callable[[DeviceID], Mapping[str, int]],
    ) -> Sequence[Candidate]:
        """`candidates` (upstream's order) in the order to try them; the same devices, none added.
        `consumed(id)` is the capacity a shared device has given already (nano units), this search's
        own picks included."""
        ...


def preference_in(state: CycleState) -> DevicePreference | None:
    found = state.get(DEVICE_PREFERENCE_KEY)
    if found is None:  # the common case: isinstance against a runtime Protocol is slow even for None
        return None
    return found if isinstance(found, DevicePreference) else None
