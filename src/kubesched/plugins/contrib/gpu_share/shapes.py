"""Task shapes and the typical-task distribution a fragmentation is measured against.

The paper measures fragmentation against the tasks a cluster expects to see, not against one task: its
"typical pods" are the distinct task shapes of the workload, most frequent first, taken until they cover
a share of all tasks (95 % in the authors' runs, CPU-only tasks included), each weighted by its
frequency renormalised over the ones kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["GPU_MILLI", "TaskShape", "TypicalTasks", "model_accepts", "typical_tasks"]

#: The share one whole GPU holds.
GPU_MILLI = 1000


@dataclass(frozen=True, slots=True, order=True)
class TaskShape:
    """What a task asks for. `gpu_milli` is per GPU (1000 for whole GPUs, 0 without GPUs); `gpu_spec`
    lists acceptable GPU models separated by `|` (empty: any model). Field order is the tie order."""

    cpu_milli: int
    gpu_milli: int
    gpu_count: int
    gpu_spec: str = ""

    def __post_init__(self) -> None:
        if self.gpu_count < 0 or not 0 <= self.gpu_milli <= GPU_MILLI or self.cpu_milli < 0:
            raise ValueError(f"bad task shape {self}")
        if (self.gpu_count == 0) != (self.gpu_milli == 0):
            raise ValueError(f"task shape {self}: gpu_count and gpu_milli must be both zero or both positive")
        if self.gpu_count > 1 and self.gpu_milli != GPU_MILLI:
            raise ValueError(f"task shape {self}: a multi-GPU task takes whole GPUs")

    @property
    def shared(self) -> bool:
        """A share of one GPU (several such tasks may sit on the same GPU)."""
        return self.gpu_count == 1 and self.gpu_milli < GPU_MILLI

    @property
    def gpu_total(self) -> int:
        """GPU share the task takes in all (milli)."""
        return self.gpu_milli * self.gpu_count

    def accepts(self, model: str) -> bool:
        """Whether a GPU of this model may serve the task (a node without GPUs has model "")."""
        if not self.gpu_spec:
            return True
        return bool(model) and model in self.gpu_spec.split("|")


@dataclass(frozen=True, slots=True)
class TypicalTasks:
    """Task shapes with their frequency (summing to 1), most frequent first."""

    shapes: tuple[TaskShape, ...]
    freqs: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        if len(self.shapes) != len(self.freqs):
            raise ValueError("one frequency per shape")

    def columns(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per shape: CPU (milli), share per GPU (milli), GPU count, as arrays for the batch measure."""
        cpu = np.fromiter((s.cpu_milli for s in self.shapes), dtype=np.int64, count=len(self.shapes))
        milli = np.fromiter((s.gpu_milli for s in self.shapes), dtype=np.int64, count=len(self.shapes))
        count = np.fromiter((s.gpu_count for s in self.shapes), dtype=np.int64, count=len(self.shapes))
        return cpu, milli, count


def typical_tasks(
    tasks: Iterable[TaskShape], coverage: float = 0.95, *, include_cpu: bool = True
) -> TypicalTasks:
    """The most frequent shapes of `tasks` until they cover `coverage` of them, frequencies renormalised.

    Ties in frequency go to the larger shape first, so the cut is the same on every run.
    """
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage {coverage} is not in (0, 1]")
    counts = Counter(t for t in tasks if include_cpu or t.gpu_count > 0)
    total = sum(counts.values())
    if total == 0:
        return TypicalTasks((), np.zeros(0, dtype=np.float64))
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    kept: list[tuple[TaskShape, int]] = []
    covered = 0
    for shape, n in ranked:
        if covered >= coverage * total:
            break
        kept.append((shape, n))
        covered += n
    freqs = np.array([n for _, n in kept], dtype=np.float64) / covered
    return TypicalTasks(tuple(s for s, _ in kept), freqs)


def model_accepts(models: Sequence[str], shapes: Sequence[TaskShape]) -> npt.NDArray[np.bool_]:
    """(len(models), len(shapes)): whether a GPU of each row's model may serve each shape, worked out
    once per distinct model (a cluster has thousands of nodes and a handful of models)."""
    out = np.ones((len(models), len(shapes)), dtype=np.bool_)
    by_model: dict[str, npt.NDArray[np.bool_]] = {}
    for row, model in enumerate(models):
        found = by_model.get(model)
        if found is None:
            found = by_model[model] = np.array([s.accepts(model) for s in shapes], dtype=np.bool_)
        out[row] = found
    return out
