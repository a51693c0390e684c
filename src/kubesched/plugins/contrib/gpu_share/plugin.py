"""The six GPU-sharing policies of the FGD paper as Score plugins over DRA GPUs: Random, DotProd,
GpuClustering, GpuPacking, BestFit and FGD.

Each scores the nodes that passed the filters (DynamicResources decides where a task's GPUs fit)
and, for a task that takes a share of one GPU, writes its GPU choice as the cycle's device
preference so that the allocator puts the share where the policy meant it to go.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.errors import FieldErrors
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    BatchScorePlugin,
    PreFilterPlugin,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import IndexArray, NodeSet, NodeTable
from kubesched.framework.status import Status
from kubesched.plugins.contrib.gpu_share.args import GpuSharePolicyArgs
from kubesched.plugins.contrib.gpu_share.gpu_choice import GpuChoice
from kubesched.plugins.contrib.gpu_share.node_view import GpuRows
from kubesched.plugins.contrib.gpu_share.pod_shape import pod_shape
from kubesched.plugins.contrib.gpu_share.policies import (
    best_fit_gpus,
    best_fit_scores,
    dot_product_scores,
    fgd_gpus,
    fgd_scores,
    frag_pack_gpus,
    frag_pack_normalize,
    gpu_class,
    gpu_clustering_scores,
    gpu_packing_scores,
    random_gpus,
    random_scores,
)
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape, TypicalTasks
from kubesched.plugins.dynamic_resources.manager import DeviceState
from kubesched.plugins.dynamic_resources.plugin import NAME as DYNAMIC_RESOURCES
from kubesched.plugins.dynamic_resources.preference import DEVICE_PREFERENCE_KEY

__all__ = [
    "FGD",
    "BestFit",
    "DotProd",
    "FragPack",
    "GpuClustering",
    "GpuPacking",
    "GpuSharePolicy",
    "RandomScore",
]


class _PodShape:
    __slots__ = ("shape",)

    def __init__(self, shape: TaskShape | None) -> None:
        self.shape = shape

    def clone(self) -> _PodShape:
        return self


class _RowScores:
    """One shape's score per table row, and which rows are current."""

    __slots__ = ("node_generation", "position", "scores", "table", "valid")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.node_generation = table.node_generation
        self.position = table.pod_log_position
        self.scores: Scores = np.zeros(len(table), dtype=np.int64)
        self.valid: np.ndarray[Any, np.dtype[np.bool_]] = np.zeros(len(table), dtype=np.bool_)


class GpuSharePolicy(PreFilterPlugin, BatchScorePlugin, ScorePlugin):
    """What the six share: the pod's shape, the nodes' GPU rows, the GPU choice. Subclasses define
    `_scores` (and `_gpu_order` when they choose GPUs their own way; the default is BestFit's)."""

    name: ClassVar[str] = "GpuSharePolicy"
    listed_kinds: ClassVar[tuple[str, ...]] = ("ResourceClaim", "ResourceSlice")
    args_type: ClassVar[type[GpuSharePolicyArgs]] = GpuSharePolicyArgs

    def __init__(self, args: GpuSharePolicyArgs | None = None, handle: Any = None) -> None:
        self.args = args if args is not None else GpuSharePolicyArgs()
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self._handle = handle
        shared = getattr(handle, "shared_state", None)
        self._devices: DeviceState = (
            shared(DYNAMIC_RESOURCES, DeviceState) if callable(shared) else DeviceState()
        )
        self.rows = GpuRows(self.args.driver, self.args.capacity)
        self._state_key = f"{self.name}/shape"
        self._cache: dict[TaskShape, _RowScores] = {}

    # ------------------------------------------------------------------ inputs
    def _list(self, kind: str) -> Any:
        return self._handle.lister(kind) if self._handle is not None else ()

    def _claims(self) -> dict[str, ResourceClaim]:
        ledger = self._devices.ledger
        if ledger.listing_needed:
            ledger.sync(self._list("ResourceClaim"))
        return ledger.by_key

    def shape_of(self, pod: Pod) -> TaskShape | None:
        return pod_shape(pod, self._claims(), self.args.driver, self.args.capacity)

    def _shape(self, state: CycleState, pod: Pod) -> TaskShape | None:
        found = state.get(self._state_key)
        if isinstance(found, _PodShape):
            return found.shape
        shape = self.shape_of(pod)
        state.write(self._state_key, _PodShape(shape))
        return shape

    def _refresh(self, table: NodeTable) -> None:
        self.rows.refresh(table, self._list("ResourceSlice"), self._devices.ledger.state)

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Read the pod's shape; for a GPU task, offer the policy's GPU order to the allocator."""
        shape = self._shape(state, pod)
        if shape is not None and shape.gpu_count > 0:
            table = nodes.table
            # The free CPU before the pod: by Reserve, where the GPU is chosen, the pod is assumed.
            cpu_before = self.rows.cpu_free(table)
            state.write(
                DEVICE_PREFERENCE_KEY,
                GpuChoice(
                    self.args.driver,
                    self.args.capacity,
                    shape.cpu_milli,
                    lambda node, free, ask: self._gpu_order(table, cpu_before, node, free, ask),
                ),
            )
        return None

    def _gpu_order(
        self, table: NodeTable, cpu_free: Scores, node: str, free: list[int], shape: TaskShape
    ) -> list[int]:
        return best_fit_gpus(free, shape)

    # ------------------------------------------------------------------ Score
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeTable([node_info]).all())[0])

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        shape = self._shape(state, pod)
        if shape is None or len(nodes) == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        self._refresh(nodes.table)
        return self._cached_scores(shape, nodes)

    def _cached_scores(self, shape: TaskShape, nodes: NodeSet) -> Scores:
        """A row's score for a shape depends on the row's pods only: kept per shape, computed again
        for the rows whose pods changed since (a pod changes one row), so a replay of thousands of
        pods on a thousand nodes costs a few rows per pod, not every row."""
        table = nodes.table
        entry = self._cache.get(shape)
        if entry is None or entry.table is not table or entry.node_generation != table.node_generation:
            entry = self._cache[shape] = _RowScores(table)
        else:
            changed = table.rows_changed_since(entry.position)
            if changed is None:
                entry.valid[:] = False
            elif changed:
                entry.valid[changed] = False
            entry.position = table.pod_log_position
        rows = nodes.rows
        missing = rows[~entry.valid[rows]]
        if len(missing):
            entry.scores[missing] = self._scores(shape, table, missing)
            entry.valid[missing] = True
        out: Scores = entry.scores[rows]
        return out

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        raise NotImplementedError


class RandomScore(GpuSharePolicy):
    """Random: one feasible node drawn uniformly (seeded), and a GPU drawn among those with room."""

    name: ClassVar[str] = "Random"

    def __init__(self, args: GpuSharePolicyArgs | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.rng = random.Random(self.args.seed)

    def _cached_scores(self, shape: TaskShape, nodes: NodeSet) -> Scores:
        return random_scores(len(nodes), self.rng)

    def _gpu_order(
        self, table: NodeTable, cpu_free: Scores, node: str, free: list[int], shape: TaskShape
    ) -> list[int]:
        return random_gpus(free, shape, self.rng)


class DotProd(GpuSharePolicy):
    """DotProd (Tetris): the node whose free (CPU, GPU) aligns least with the task's ask."""

    name: ClassVar[str] = "DotProd"

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        return dot_product_scores(self.rows.cpu_free(table)[rows], self.rows.free[rows], shape)


class GpuClustering(GpuSharePolicy):
    """GpuClustering: tasks of one GPU class (a share, n whole GPUs) on the same nodes."""

    name: ClassVar[str] = "GpuClustering"

    def _classify(self, info: NodeInfo) -> Counter[str]:
        out: Counter[str] = Counter()
        for pi in info.pods.values():
            shape = self.shape_of(pi.pod)
            cls = gpu_class(shape) if shape is not None else ""
            if cls:
                out[cls] += 1
        return out

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        infos = table.infos
        classes = [self.rows.classes(r, infos[r], self._classify) for r in rows.tolist()]
        return gpu_clustering_scores(self.rows.free[rows], classes, shape)


class GpuPacking(GpuSharePolicy):
    """GpuPacking: partly used GPUs first, then nodes in use, then idle nodes."""

    name: ClassVar[str] = "GpuPacking"

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        return gpu_packing_scores(self.rows.free[rows], self.rows.count[rows], shape)


class BestFit(GpuSharePolicy):
    """BestFit: the node left with the least CPU and GPU after the task."""

    name: ClassVar[str] = "BestFit"

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        return best_fit_scores(self.rows.cpu_free(table)[rows], self.rows.free[rows], shape)


class FGD(GpuSharePolicy):
    """FGD: the node and GPU where the task grows the cluster's fragmentation least, measured
    against the typical tasks of the args."""

    name: ClassVar[str] = "FGD"

    def __init__(self, args: GpuSharePolicyArgs | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.typical: TypicalTasks = self.args.typical()
        self._accepts: dict[str, np.ndarray[Any, np.dtype[np.bool_]]] = {}

    def _model_accepts(self, model: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
        found = self._accepts.get(model)
        if found is None:
            found = self._accepts[model] = np.array(
                [s.accepts(model) for s in self.typical.shapes], dtype=np.bool_
            )
        return found

    def _accepts_rows(self, rows: np.ndarray[Any, np.dtype[np.intp]]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        models = self.rows.models
        out = np.empty((len(rows), len(self.typical.shapes)), dtype=np.bool_)
        for i, r in enumerate(rows.tolist()):
            out[i] = self._model_accepts(models[r])
        return out

    def _scores(self, shape: TaskShape, table: NodeTable, rows: IndexArray) -> Scores:
        scores, _ = fgd_scores(
            self.rows.cpu_free(table)[rows],
            self.rows.free[rows],
            self._accepts_rows(rows),
            shape,
            self.typical,
        )
        return scores

    def _gpu_order(
        self, table: NodeTable, cpu_free: Scores, node: str, free: list[int], shape: TaskShape
    ) -> list[int]:
        row = table.index.get(node)
        if row is None or row >= len(cpu_free):
            return best_fit_gpus(free, shape)
        return fgd_gpus(
            int(cpu_free[row]),
            free,
            self._model_accepts(self.rows.models[row] if row < len(self.rows.models) else ""),
            shape,
            self.typical,
        )


class FragPack(FGD):
    """kubesched's own policy: FGD with its packing in the score. Among the nodes FGD scores best,
    one scores 100 (a node with GPUs in use before a node whose GPUs are all idle, then the lowest
    name) and the others keep FGD's score, at most 99: the scheduler's tie rule (random, or by name)
    no longer decides where tasks go. A share goes on the GPU FGD scores best, then the one left
    with the least share."""

    name: ClassVar[str] = "FragPack"

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        shape = self._shape(state, pod)
        if shape is None or len(nodes) == 0:
            return None  # a pod the policy does not model scored 0 everywhere
        scores[:] = frag_pack_normalize(scores, *self._tie_keys(nodes))
        return None

    def _tie_keys(self, nodes: NodeSet) -> list[Scores]:
        """Ties among FGD's best: a node with every GPU idle (1) after one already in use (0), then
        the name's rank."""
        self._refresh(nodes.table)
        rows = nodes.rows
        idle = (self.rows.free[rows].sum(axis=1) == self.rows.count[rows] * GPU_MILLI).astype(np.int64)
        return [idle, nodes.table.name_rank()[rows]]

    def _gpu_order(
        self, table: NodeTable, cpu_free: Scores, node: str, free: list[int], shape: TaskShape
    ) -> list[int]:
        row = table.index.get(node)
        if row is None or row >= len(cpu_free) or row >= len(self.rows.models):
            return best_fit_gpus(free, shape)
        accepts = self._model_accepts(self.rows.models[row])
        return frag_pack_gpus(int(cpu_free[row]), free, accepts, shape, self.typical)
