"""The six policies' node scores and GPU choices, as the FGD paper defines them (Weng et al., ATC'23,
Sec. 5 and 6), over rows of node state. Pure numpy: arrays in, integer scores (0..100) out.

Node state per row: `cpu_free` (milli), `free` (share left per GPU, zero-padded), `count` (GPUs).
Scores keep the paper's integer arithmetic (its scores are truncated to whole numbers, and the
scheduler then picks at random among equal best scores), so ties fall where they fall there.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubesched.plugins.contrib.gpu_share.fragmentation import fragmentation_rows
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape, TypicalTasks

__all__ = [
    "MAX_SCORE",
    "MAX_SPEC_CPU",
    "MAX_SPEC_GPU",
    "best_fit_gpus",
    "best_fit_scores",
    "dot_product_scores",
    "fgd_gpus",
    "fgd_scores",
    "frag_pack_gpus",
    "frag_pack_normalize",
    "fragmentation_growth",
    "gpu_class",
    "gpu_clustering_scores",
    "gpu_packing_scores",
    "random_gpus",
    "random_scores",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MAX_SCORE = 100
#: The largest node of the paper's cluster: 128 cores and 8 GPUs, the scale BestFit and DotProd use.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8 * GPU_MILLI


# ---------------------------------------------------------------------- Random
def random_scores(n: int, rng: random.Random) -> IntArray:
    """One node drawn uniformly gets the top score, the others none."""
    out = np.zeros(n, dtype=np.int64)
    if n:
        out[rng.randrange(n)] = MAX_SCORE
    return out


def random_gpus(free: Sequence[int], shape: TaskShape, rng: random.Random) -> list[int]:
    """A shared task: one fitting GPU drawn uniformly first; whole GPUs: free ones in index order."""
    fitting = [i for i, f in enumerate(free) if f >= shape.gpu_milli]
    if not shape.shared or not fitting:
        return fitting
    first = fitting[rng.randrange(len(fitting))]
    return [first, *(i for i in fitting if i != first)]


# ---------------------------------------------------------------------- DotProd
def dot_product_scores(cpu_free: IntArray, free: IntArray, shape: TaskShape) -> IntArray:
    """Tetris's alignment, lower is better: the node's free (CPU, GPU) and the task's ask, each
    scaled by the largest node, dotted and halved; score = (1 - that) x 100. No fit on CPU: 0."""
    gpu_free = free.sum(axis=1)
    dot = (cpu_free / MAX_SPEC_CPU) * (shape.cpu_milli / MAX_SPEC_CPU) + (gpu_free / MAX_SPEC_GPU) * (
        shape.gpu_total / MAX_SPEC_GPU
    )
    scores = (MAX_SCORE * (1 - dot / 2)).astype(np.int64)
    out: IntArray = np.where(cpu_free >= shape.cpu_milli, scores, 0)
    return out


# ---------------------------------------------------------------------- GpuClustering
def gpu_class(shape: TaskShape) -> str:
    """The class GpuClustering groups tasks by: none, a GPU share, or n whole GPUs."""
    if shape.gpu_count == 0:
        return ""
    return "share" if shape.shared else f"{shape.gpu_count}-gpu"


def gpu_clustering_scores(free: IntArray, classes: Sequence[Counter[str]], shape: TaskShape) -> IntArray:
    """Tasks of one class together: a node holding only this class scores in (75, 100], one holding
    it among others (50, 75], a node without GPU tasks (25, 50], others (0, 25]; within a band, the
    more GPU share in use the higher. Tasks without GPUs: 0."""
    want = gpu_class(shape)
    n = len(classes)
    if not want:
        return np.zeros(n, dtype=np.int64)
    quarter = MAX_SCORE // 4
    used = quarter * (MAX_SPEC_GPU - free.sum(axis=1)) // MAX_SPEC_GPU
    band = np.fromiter(
        ((3 if len(c) == 1 else 2) if c.get(want, 0) > 0 else (1 if not c else 0) for c in classes),
        dtype=np.int64,
        count=n,
    )
    out: IntArray = used + band * quarter
    return out


# ---------------------------------------------------------------------- GpuPacking
def gpu_packing_scores(free: IntArray, count: IntArray, shape: TaskShape) -> IntArray:
    """Fill GPUs already in use first, then nodes already in use, then idle nodes:
    a task that fits on partly used GPUs scores 100 - (their free share in % / 10), at least 50;
    one that needs n idle GPUs of a node in use 50 - n, at least 33; on an idle node
    max(33 - idle GPUs, idle GPUs). Tasks without GPUs: 0."""
    n = len(count)
    if shape.gpu_count == 0:
        return np.zeros(n, dtype=np.int64)
    idle = (free == GPU_MILLI).sum(axis=1)
    out = np.zeros(n, dtype=np.int64)
    for row in range(n):
        k = int(count[row])
        if idle[row] == k:
            out[row] = max(MAX_SCORE // 3 - k, k)
            continue
        chosen = best_fit_gpus(free[row, :k].tolist(), shape)[: shape.gpu_count]
        if len(chosen) < shape.gpu_count:
            continue
        fresh = sum(1 for i in chosen if free[row, i] == GPU_MILLI)
        if fresh:
            out[row] = max(MAX_SCORE // 2 - fresh, MAX_SCORE // 3)
        else:
            pct = sum(int(free[row, i]) * 100 // GPU_MILLI for i in chosen)
            out[row] = max(MAX_SCORE - pct // 10, MAX_SCORE // 2)
    return out


# ---------------------------------------------------------------------- BestFit
def best_fit_scores(cpu_free: IntArray, free: IntArray, shape: TaskShape) -> IntArray:
    """The least left over wins: 100 x (1 - (CPU left after / largest CPU + GPU left after / largest
    GPU) / 2). A node the task does not fit on scores 0."""
    gpu_free = free.sum(axis=1)
    cpu_left = cpu_free - shape.cpu_milli
    gpu_left = gpu_free - shape.gpu_total
    waste = cpu_left / MAX_SPEC_CPU * 0.5 + gpu_left / MAX_SPEC_GPU * 0.5
    scores = ((1.0 - waste) * MAX_SCORE).astype(np.int64)
    out: IntArray = np.where((cpu_left >= 0) & (gpu_left >= 0), scores, 0)
    return out


def best_fit_gpus(free: Sequence[int], shape: TaskShape) -> list[int]:
    """The fitting GPUs, least share left first (lowest index among equals)."""
    fitting = [i for i, f in enumerate(free) if f >= shape.gpu_milli]
    return sorted(fitting, key=lambda i: free[i])


# ---------------------------------------------------------------------- FGD
def _sigmoid_scores(growth: FloatArray) -> IntArray:
    """The paper's score of a move: sigmoid(fragmentation removed / 1000) x 100, truncated."""
    out: IntArray = (MAX_SCORE / (1.0 + np.exp(growth / GPU_MILLI))).astype(np.int64)
    return out


def fragmentation_growth(
    cpu_free: IntArray,
    free: IntArray,
    accepts: BoolArray,
    shape: TaskShape,
    typical: TypicalTasks,
) -> FloatArray:
    """F(n') - F(n), how much placing the task grows each row's fragmentation (milli GPU): one
    value per row for CPU and whole GPUs (taken from the first idle GPUs: which ones does not change
    the measure), one per (row, GPU) for a share (inf on a GPU without room for it)."""
    n, width = free.shape
    before = fragmentation_rows(cpu_free, free, accepts, typical)
    cpu_after = cpu_free - shape.cpu_milli
    if not shape.shared:
        after_free = free.copy()
        if shape.gpu_count:
            idle = after_free == GPU_MILLI
            rank = np.cumsum(idle, axis=1)
            after_free[idle & (rank <= shape.gpu_count)] = 0
        whole: FloatArray = fragmentation_rows(cpu_after, after_free, accepts, typical) - before
        return whole
    # every (row, GPU) placement at once: row r's GPU g becomes hypothetical row r * width + g
    tried = np.repeat(free, width, axis=0)
    gpu = np.tile(np.arange(width), n)
    tried[np.arange(n * width), gpu] -= shape.gpu_milli
    after = fragmentation_rows(np.repeat(cpu_after, width), tried, np.repeat(accepts, width, axis=0), typical)
    growth = (after - np.repeat(before, width)).reshape(n, width)
    shared: FloatArray = np.where(free >= shape.gpu_milli, growth, np.inf)
    return shared


def fgd_scores(
    cpu_free: IntArray,
    free: IntArray,
    accepts: BoolArray,
    shape: TaskShape,
    typical: TypicalTasks,
) -> tuple[IntArray, IntArray]:
    """(scores, best GPU per row): how little the placement grows the node's fragmentation.

    A shared task is tried on every GPU with enough share left and scored by the best one (its
    index is returned, -1 otherwise); whole GPUs and CPU go where the task's ask leaves them.
    """
    n, width = free.shape
    best = np.full(n, -1, dtype=np.int64)
    if shape.shared and width == 0:
        return np.zeros(n, dtype=np.int64), best
    scores = _sigmoid_scores(fragmentation_growth(cpu_free, free, accepts, shape, typical))
    if not shape.shared:
        return scores, best
    fits = free >= shape.gpu_milli
    scores = np.where(fits, scores, -1)
    best = np.where(fits.any(axis=1), scores.argmax(axis=1), -1)
    out: IntArray = np.maximum(scores.max(axis=1), 0)
    return out, best


def fgd_gpus(
    cpu_free: int, free: Sequence[int], model_accepts: BoolArray, shape: TaskShape, typical: TypicalTasks
) -> list[int]:
    """The fitting GPUs of one node, the one FGD scores best first (lowest index among equals)."""
    fitting = [i for i, f in enumerate(free) if f >= shape.gpu_milli]
    if not shape.shared or len(fitting) < 2:
        return fitting
    row = np.array([free], dtype=np.int64)
    _, best = fgd_scores(np.array([cpu_free], dtype=np.int64), row, model_accepts[None, :], shape, typical)
    first = int(best[0])
    return [first, *(i for i in fitting if i != first)]


# ---------------------------------------------------------------------- FragPack (kubesched's own)
def frag_pack_normalize(scores: IntArray, *keys: IntArray) -> IntArray:
    """FGD's scores with one winner: among the nodes with the best score, the lowest in each of
    `keys` in turn (the last one should be unique per node, such as the name's rank) scores 100;
    every other node keeps its score, at most 99."""
    out: IntArray = np.minimum(scores, MAX_SCORE - 1)
    if not len(scores):
        return out
    winners = scores == scores.max()
    for key in keys:
        winners &= key == key[winners].min()
    out[winners] = MAX_SCORE
    return out


def frag_pack_gpus(
    cpu_free: int, free: Sequence[int], model_accepts: BoolArray, shape: TaskShape, typical: TypicalTasks
) -> list[int]:
    """The fitting GPUs of one node, FragPack's choice first: FGD's best score, then the least share
    left after the task, then the lowest index."""
    fitting = [i for i, f in enumerate(free) if f >= shape.gpu_milli]
    if not shape.shared or len(fitting) < 2:
        return fitting
    row = np.array([free], dtype=np.int64)
    growth = fragmentation_growth(
        np.array([cpu_free], dtype=np.int64), row, model_accepts[None, :], shape, typical
    )
    scores = _sigmoid_scores(growth)[0]
    first = min(fitting, key=lambda i: (-int(scores[i]), free[i], i))
    return [first, *(i for i in fitting if i != first)]
