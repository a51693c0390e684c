"""The GPUScheduler plugin: wires the pod's GPU ask (`pod_request`) to Filter (`filtering`) and Score
(`scoring`) at each extension point, and says which cluster events can make a rejected GPU pod fit."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.errors import FieldErrors
from kubesched.framework.cycle_state import CycleState, pre_filter_state
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.status import Status
from kubesched.plugins._volumes import ListerSource
from kubesched.plugins.contrib.gpu_scheduler.args import GPUSchedulerArgs
from kubesched.plugins.contrib.gpu_scheduler.filtering import dra_filter_nodes, filter_node, filter_nodes
from kubesched.plugins.contrib.gpu_scheduler.node_gpus import DraNodes
from kubesched.plugins.contrib.gpu_scheduler.pod_request import GpuPod, Invalid, ManagedResources, read_pod
from kubesched.plugins.contrib.gpu_scheduler.scoring import (
    dra_scores,
    rank_normalize,
    score_node,
    score_nodes,
)

_STATE_KEY = "GPUScheduler"


class GPUScheduler(
    PreFilterPlugin,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
):
    """Filter nodes without enough free GPUs of the right memory / product / family; score by
    binpack or spread. Pods that request no managed GPU resource are skipped (PreFilter and
    PreScore return Skip) unless `keepNonGpuPodsOff` is set, which keeps them off GPU nodes."""

    name: ClassVar[str] = "GPUScheduler"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("ResourceSlice", "ResourceClaim")
    args_type: ClassVar[type[GPUSchedulerArgs]] = GPUSchedulerArgs

    def __init__(self, args: GPUSchedulerArgs | None = None, handle: ListerSource | None = None) -> None:
        self.args = args if args is not None else GPUSchedulerArgs()
        self._dra = DraNodes(self.args.dra_drivers, handle)
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self._managed = ManagedResources(self.args)

    def is_managed(self, resource: str) -> bool:
        """Whether `resource` is one of the GPU resources this plugin accounts for."""
        return resource in self._managed

    def _read(self, pod: Pod) -> GpuPod | Invalid:
        return read_pod(pod, self.args, self._managed, self._dra.claimed_gpus)

    def _state(self, state: CycleState, pod: Pod) -> GpuPod | Invalid:
        """PreFilter's reading of the pod; made here when PreFilter and PreScore are disabled."""
        return pre_filter_state(state, _STATE_KEY, GpuPod, lambda: self._read(pod), keep=True)

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        s = self._read(pod)
        if isinstance(s, Invalid):
            return s.status
        state.write(_STATE_KEY, s)
        if not s.needs and not self.args.keep_non_gpu_pods_off:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._state(state, pod)
        if isinstance(s, Invalid):
            return s.status
        if s.dra:
            result = dra_filter_nodes(self._dra, s, NodeTable([node_info]).all())
            return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]
        return filter_node(self.args, self._managed, s, node_info)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        s = self._state(state, pod)
        if isinstance(s, Invalid):
            return BatchFilterResult.all_fail(len(nodes), s.status)
        if s.dra:
            return dra_filter_nodes(self._dra, s, nodes)
        return filter_nodes(self.args, self._managed, s, nodes)

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """The same preparation as PreFilter (the state it writes serves both)."""
        return self.pre_filter(state, pod, nodes)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        s = self._state(state, pod)
        if isinstance(s, Invalid):
            return 0, s.status
        if s.dra:
            return int(dra_scores(self.args, self._dra, s, NodeTable([node_info]).all())[0])
        return score_node(self.args, self._managed, s, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._state(state, pod)
        if isinstance(s, Invalid):
            raise ValueError(s.status.message())
        if s.dra:
            return dra_scores(self.args, self._dra, s, nodes)
        return score_nodes(self.args, self._managed, s, nodes)

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        rank_normalize(scores)
        return None

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A deleted GPU pod frees GPUs; a node added, grown or relabelled (GPU Feature Discovery
        labels appear after the device plugin starts) may now fit."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), self._after_pod_delete),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL,
                )
            ),
        ]

    def _after_pod_delete(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a GPU pod leaving frees GPUs, and only a pod that wants GPUs can use them."""
        deleted = old if isinstance(old, Pod) else new
        if not isinstance(deleted, Pod):
            return QueueingHint.QUEUE
        wanted, freed = self._managed.wanted_by(pod), self._managed.wanted_by(deleted)
        return QueueingHint.QUEUE if wanted and freed else QueueingHint.SKIP
