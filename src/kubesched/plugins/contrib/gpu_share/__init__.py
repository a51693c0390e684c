"""GPU sharing as the FGD paper models it (Weng et al., USENIX ATC'23): a node's free CPU, memory and
per-GPU share, the trace's typical-task distribution, and the fragmentation measure the paper's
policies and metrics are built on. Pure: plain values and numpy arrays in, numbers out."""

from kubesched.plugins.contrib.gpu_share.fragmentation import (
    cluster_fragmentation,
    fragmentation_rows,
    node_fragmentation,
)
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape, TypicalTasks, typical_tasks
from kubesched.plugins.contrib.gpu_share.state import GpuStateTable, NodeGpuState

__all__ = [
    "GPU_MILLI",
    "GpuStateTable",
    "NodeGpuState",
    "TaskShape",
    "TypicalTasks",
    "cluster_fragmentation",
    "fragmentation_rows",
    "node_fragmentation",
    "typical_tasks",
]
