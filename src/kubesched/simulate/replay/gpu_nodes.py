"""Each node's GPUs during a replay, as the FGD paper's fragmentation measure reads them: free CPU, the
share left on each GPU, the GPU model, and the node's fragmentation against the typical tasks.

Rows are every node the scenario creates. A bind takes CPU and GPU shares from one row and a pod
leaving gives them back; only that row's fragmentation is measured again, so keeping the cluster's
figure current costs one row per bind, not the whole cluster per observation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.plugins.contrib.gpu_share import GPU_MILLI, TypicalTasks, fragmentation_rows
from kubesched.plugins.contrib.gpu_share.shapes import model_accepts

__all__ = ["GpuNodes", "Taken"]

#: What a bound pod took: its node's row, its CPU (milli) and (GPU column, share) pairs.
Taken = tuple[int, int, list[tuple[int, int]]]


class GpuNodes:
    """Rows of nodes: `gpu_free[row, column]` the share left on each GPU (0 past a node's last)."""

    def __init__(
        self,
        names: Sequence[str],
        cpu: Sequence[int],
        models: Sequence[str],
        gpus: Sequence[Sequence[int]],
        typical: TypicalTasks,
    ) -> None:
        self.rows = {name: i for i, name in enumerate(names)}
        self.typical = typical
        width = max((len(g) for g in gpus), default=0)
        self.cpu_free = np.array(cpu, dtype=np.int64)
        self.gpu_free = np.zeros((len(names), width), dtype=np.int64)
        for i, capacities in enumerate(gpus):
            self.gpu_free[i, : len(capacities)] = capacities
        self.gpu_count = np.array([len(g) for g in gpus], dtype=np.int64)
        self.accepts = model_accepts(models, typical.shapes)
        self.frag = fragmentation_rows(self.cpu_free, self.gpu_free, self.accepts, typical)

    def whole_gpus(self, row: int, count: int) -> list[tuple[int, int]]:
        """`count` untouched GPUs of the row, as (column, share) pairs: for nvidia.com/gpu, where which
        GPUs a pod gets is the kubelet's choice, and the measure only counts them."""
        free = [c for c in range(int(self.gpu_count[row])) if self.gpu_free[row, c] == GPU_MILLI]
        return [(c, GPU_MILLI) for c in free[:count]]

    def fragmented(self) -> float:
        """The cluster's fragmentation (milli GPU): the sum over its rows."""
        return float(self.frag.sum())

    def take(self, taken: Taken, sign: int = 1) -> None:
        """Take what a bound pod holds (`sign` -1: give it back) and measure its row again."""
        row, cpu, shares = taken
        self.cpu_free[row] -= sign * cpu
        for column, share in shares:
            self.gpu_free[row, column] -= sign * share
        window = slice(row, row + 1)
        self.frag[row] = fragmentation_rows(
            self.cpu_free[window], self.gpu_free[window], self.accepts[window], self.typical
        )[0]
