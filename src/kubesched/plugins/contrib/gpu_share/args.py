"""The GPU-sharing policies' pluginConfig args: where the GPUs are published, the seed of Random and
the typical tasks FGD measures fragmentation against."""

from __future__ import annotations

import msgspec
import numpy as np

from kubesched.errors import InputError
from kubesched.plugins.contrib.gpu_share.shapes import TaskShape, TypicalTasks

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_DRIVER", "GpuSharePolicyArgs", "TypicalTaskArg"]

#: The DRA driver whose devices are GPUs, each with a consumable share of 1000.
DEFAULT_DRIVER = "gpu.kubesched.io"
#: The consumable capacity a shared task asks part of.
DEFAULT_CAPACITY = "share"


class TypicalTaskArg(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """One typical task shape and its weight (weights are normalised over the list)."""

    cpu_milli: int = 0
    gpu_milli: int = 0
    gpu_count: int = 0
    gpu_spec: str = ""
    weight: float = 1.0


class GpuSharePolicyArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args shared by the six policies (each reads what it needs)."""

    driver: str = DEFAULT_DRIVER
    capacity: str = DEFAULT_CAPACITY
    #: Random: the seed of its draws (node and GPU).
    seed: int = 0
    #: FGD: the workload's typical tasks (`kubesched.plugins.contrib.gpu_share.typical_tasks`).
    typical_tasks: list[TypicalTaskArg] = msgspec.field(default_factory=list)

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        if not self.driver:
            errors.append(InputError("a DRA driver name is required", path="driver"))
        if not self.capacity:
            errors.append(InputError("a capacity name is required", path="capacity"))
        for i, t in enumerate(self.typical_tasks):
            try:
                TaskShape(t.cpu_milli, t.gpu_milli, t.gpu_count, t.gpu_spec)
            except ValueError as err:
                errors.append(InputError(str(err), path=f"typicalTasks[{i}]"))
            if not t.weight > 0:
                errors.append(InputError("weight must be positive", path=f"typicalTasks[{i}].weight"))
        return errors

    def typical(self) -> TypicalTasks:
        shapes = tuple(
            TaskShape(t.cpu_milli, t.gpu_milli, t.gpu_count, t.gpu_spec) for t in self.typical_tasks
        )
        weights = np.array([t.weight for t in self.typical_tasks], dtype=np.float64)
        total = weights.sum()
        return TypicalTasks(shapes, weights / total if total > 0 else weights)
