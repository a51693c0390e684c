"""Which GPU of the chosen node a task gets: the policies' GPU choice handed to DynamicResources as
a device preference (`dynamic_resources.preference`) for the cycle of one pod.

The paper's policies place a shared task on a GPU of their choosing (BestFit's tightest GPU, FGD's
least fragmenting, Random's draw); upstream's allocator would take the first GPU with room. Only
the GPU driver's devices are reordered; any other device keeps its place after them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.api.objects import Node
from kubesched.api.quantity import NANO, QuantityError, quantity_nanos
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape
from kubesched.plugins.dynamic_resources.allocator_types import DeviceID
from kubesched.plugins.dynamic_resources.requests import Candidate, Request

__all__ = ["GpuChoice", "GpuOrder"]


#: (node name, share left per GPU, the task's shape on one of its requests) -> GPU indices, best first.
GpuOrder = Callable[[str, list[int], TaskShape], list[int]]


@dataclass(slots=True)
class GpuChoice:
    """A `DevicePreference` ranking the GPU driver's devices by a policy's GPU order."""

    driver: str
    capacity: str
    cpu_milli: int
    rank: GpuOrder

    def clone(self) -> GpuChoice:
        return self

    def order(
        self,
        node: Node,
        request: Request,
        candidates: Sequence[Candidate],
        consumed: Callable[[DeviceID], Mapping[str, int]],
    ) -> Sequence[Candidate]:
        gpus = [c for c in candidates if c.id.driver == self.driver and self.capacity in c.device.capacity]
        if len(gpus) < 2:
            return candidates
        shape = self._shape(request)
        if shape is None:
            return candidates
        free = []
        for c in gpus:
            total = quantity_nanos(c.device.capacity[self.capacity].value)
            free.append((total - consumed(c.id).get(self.capacity, 0)) // NANO)
        ranked = self.rank(node.metadata.name, free, shape)
        chosen = set(ranked)
        ordered = [gpus[i] for i in ranked] + [g for i, g in enumerate(gpus) if i not in chosen]
        ours = {id(g) for g in gpus}
        return ordered + [c for c in candidates if id(c) not in ours]

    def _shape(self, request: Request) -> TaskShape | None:
        wanted = request.capacity.get(self.capacity)
        try:
            milli = GPU_MILLI if wanted is None else quantity_nanos(wanted) // NANO
            count = max(request.count, 1)
            return TaskShape(self.cpu_milli, milli, 1 if milli < GPU_MILLI else count)
        except (QuantityError, ValueError):
            return None
