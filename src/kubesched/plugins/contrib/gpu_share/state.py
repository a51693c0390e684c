"""A node's free resources as the GPU-sharing policies see them: CPU, memory, the share left on each GPU
and the GPU model; one node as a value, many as columns for the batch measures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape, model_accepts

__all__ = ["GpuStateTable", "NodeGpuState"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class NodeGpuState:
    """Free CPU (milli), free memory (MiB) and the share left on each GPU (milli, 0..1000)."""

    name: str
    model: str
    cpu_free: int
    memory_free: int
    gpu_free: tuple[int, ...]

    @property
    def gpu_free_total(self) -> int:
        return sum(self.gpu_free)

    def fits(self, task: TaskShape) -> bool:
        """Whether the task fits on its CPU, memory-free of the measure, and GPUs (model included)."""
        if task.cpu_milli > self.cpu_free:
            return False
        if task.gpu_count == 0:
            return True
        if not task.accepts(self.model):
            return False
        return sum(1 for g in self.gpu_free if g >= task.gpu_milli) >= task.gpu_count

    def place(self, task: TaskShape, gpus: Sequence[int], memory: int = 0) -> NodeGpuState:
        """The state after the task takes its share on the given GPU indices."""
        free = list(self.gpu_free)
        for i in gpus:
            if free[i] < task.gpu_milli:
                raise ValueError(
                    f"GPU {i} of {self.name} has {free[i]} left, the task wants {task.gpu_milli}"
                )
            free[i] -= task.gpu_milli
        return NodeGpuState(
            self.name, self.model, self.cpu_free - task.cpu_milli, self.memory_free - memory, tuple(free)
        )


@dataclass(slots=True)
class GpuStateTable:
    """Nodes as columns: row i is node i. `gpu_free` is padded with zeros to the widest node (a
    missing GPU has nothing left, so it neither fits a task nor counts as idle)."""

    names: list[str]
    models: list[str]
    cpu_free: IntArray
    memory_free: IntArray
    gpu_free: npt.NDArray[np.int64]
    gpu_count: IntArray

    @classmethod
    def from_states(cls, states: Sequence[NodeGpuState]) -> GpuStateTable:
        width = max((len(s.gpu_free) for s in states), default=0)
        gpu = np.zeros((len(states), width), dtype=np.int64)
        for i, s in enumerate(states):
            gpu[i, : len(s.gpu_free)] = s.gpu_free
        return cls(
            names=[s.name for s in states],
            models=[s.model for s in states],
            cpu_free=np.array([s.cpu_free for s in states], dtype=np.int64),
            memory_free=np.array([s.memory_free for s in states], dtype=np.int64),
            gpu_free=gpu,
            gpu_count=np.array([len(s.gpu_free) for s in states], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.names)

    def state(self, row: int) -> NodeGpuState:
        n = int(self.gpu_count[row])
        return NodeGpuState(
            self.names[row],
            self.models[row],
            int(self.cpu_free[row]),
            int(self.memory_free[row]),
            tuple(int(g) for g in self.gpu_free[row, :n]),
        )

    def accepts(self, shapes: Sequence[TaskShape]) -> BoolArray:
        """(rows, shapes): whether each node's GPU model may serve each shape."""
        return model_accepts(self.models, shapes)

    def gpu_free_total(self) -> IntArray:
        total: IntArray = self.gpu_free.sum(axis=1)
        return total

    def gpu_capacity(self) -> int:
        return int(self.gpu_count.sum()) * GPU_MILLI
