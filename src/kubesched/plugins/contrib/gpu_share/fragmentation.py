"""The paper's fragmentation measure (Weng et al., ATC'23, Sec. 3).

For one node and one task shape, the fragment is the GPU share on the node the task cannot use:
- all the node's free GPU share when the task cannot run there at all (too little CPU, too few GPUs
  with enough share left, a GPU model it does not accept, or a task without GPUs, which uses none);
- otherwise the share left on the GPUs that hold less than the task's per-GPU share.
A node's fragmentation is the fragment of each typical shape weighted by the shape's frequency; the
cluster's is the sum over nodes. Memory takes no part, as in the paper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubesched.plugins.contrib.gpu_share.shapes import TypicalTasks
from kubesched.plugins.contrib.gpu_share.state import GpuStateTable, NodeGpuState

__all__ = ["cluster_fragmentation", "fragmentation_rows", "node_fragmentation"]

FloatArray = npt.NDArray[np.float64]


def fragmentation_rows(
    cpu_free: npt.NDArray[np.int64],
    gpu_free: npt.NDArray[np.int64],
    accepts: npt.NDArray[np.bool_],
    typical: TypicalTasks,
) -> FloatArray:
    """Fragmentation (milli GPU) of each row: `cpu_free` (rows,), `gpu_free` (rows, GPUs, zero-padded),
    `accepts` (rows, shapes) whether the row's GPU model serves each typical shape."""
    rows = len(cpu_free)
    if rows == 0 or not typical.shapes:
        return np.zeros(rows, dtype=np.float64)
    cpu, milli, count = typical.columns()
    free = gpu_free[:, None, :]  # (rows, 1, GPUs)
    enough = free >= milli[None, :, None]  # (rows, shapes, GPUs)
    total = gpu_free.sum(axis=1)  # (rows,)
    usable = (
        (count[None, :] > 0)
        & accepts
        & (enough.sum(axis=2) >= count[None, :])
        & (cpu_free[:, None] >= cpu[None, :])
    )
    stranded = np.where(enough, 0, free).sum(axis=2)  # share on GPUs too small for the shape
    per_shape = np.where(usable, stranded, total[:, None])
    out: FloatArray = per_shape.astype(np.float64) @ typical.freqs
    return out


def node_fragmentation(state: NodeGpuState, typical: TypicalTasks) -> float:
    """One node's fragmentation (milli GPU) against the typical tasks."""
    table = GpuStateTable.from_states([state])
    return float(
        fragmentation_rows(table.cpu_free, table.gpu_free, table.accepts(typical.shapes), typical)[0]
    )


def cluster_fragmentation(nodes: GpuStateTable | Sequence[NodeGpuState], typical: TypicalTasks) -> float:
    """The cluster's fragmentation (milli GPU): the sum over its nodes."""
    table = nodes if isinstance(nodes, GpuStateTable) else GpuStateTable.from_states(nodes)
    rows = fragmentation_rows(table.cpu_free, table.gpu_free, table.accepts(typical.shapes), typical)
    return float(rows.sum())
