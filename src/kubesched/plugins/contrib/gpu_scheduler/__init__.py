"""GPUScheduler: place GPU pods where their GPUs are free and fit, packing them to keep whole nodes free.

GPUs are extended resources published by the NVIDIA device plugin (`nvidia.com/gpu`, and with MIG
"mixed" strategy one resource per profile, `nvidia.com/mig-3g.20gb`, ...). NodeResourcesFit already
rejects a node without enough of them, but only as `Insufficient nvidia.com/gpu` and with no idea of
which GPU model is there. This plugin adds what GPU clusters need on top:

* Filter: the free count of each managed GPU resource (allocatable minus the requests of the pods on
  the node) against the pod's request, with the numbers in the reason; a minimum GPU memory, product
  or family asked for in pod annotations against NVIDIA GPU Feature Discovery's node labels
  (`nvidia.com/gpu.memory` in MiB, `nvidia.com/gpu.product`, `nvidia.com/gpu.family`); and,
  optionally, keeping pods that request no GPU off GPU nodes so CPU work cannot strand GPUs.
* Score: `binpack` (default) fills partly used GPU nodes first, so whole nodes stay free for large
  or gang jobs, and among those prefers the tightest fit; `spread` prefers the emptiest nodes. Both
  prefer the smallest GPU memory that is enough, leaving big-memory GPUs to pods that need them.
  The raw score is a lexicographic key; NormalizeScore ranks the distinct keys onto 0..100, because
  scaling such a key linearly would erase every preference below the first.

Both Filter and Score come in a per-node and a batch form that agree exactly (hypothesis-tested).

Modules: `args` (names and pluginConfig args), `pod_request` (what the pod asks), `node_gpus` (what a
node offers, from labels or DRA ResourceSlices via `dra_gpus`), `filtering`, `scoring`, `plugin`.
"""

from kubesched.plugins.contrib.gpu_scheduler.args import (
    BINPACK,
    DEFAULT_FAMILY_ANNOTATION,
    DEFAULT_MIN_MEMORY_ANNOTATION,
    DEFAULT_PRODUCT_ANNOTATION,
    GPU_RESOURCE,
    LABEL_GPU_FAMILY,
    LABEL_GPU_MEMORY,
    LABEL_GPU_PRODUCT,
    MIG_RESOURCE_PATTERN,
    NON_GPU_POD_REASON,
    SPREAD,
    GPUSchedulerArgs,
)
from kubesched.plugins.contrib.gpu_scheduler.filtering import insufficient_gpus_reason
from kubesched.plugins.contrib.gpu_scheduler.plugin import GPUScheduler
from kubesched.plugins.contrib.gpu_scheduler.scoring import rank_normalize

__all__ = [
    "BINPACK",
    "DEFAULT_FAMILY_ANNOTATION",
    "DEFAULT_MIN_MEMORY_ANNOTATION",
    "DEFAULT_PRODUCT_ANNOTATION",
    "GPU_RESOURCE",
    "LABEL_GPU_FAMILY",
    "LABEL_GPU_MEMORY",
    "LABEL_GPU_PRODUCT",
    "MIG_RESOURCE_PATTERN",
    "NON_GPU_POD_REASON",
    "SPREAD",
    "GPUScheduler",
    "GPUSchedulerArgs",
    "insufficient_gpus_reason",
    "rank_normalize",
]
