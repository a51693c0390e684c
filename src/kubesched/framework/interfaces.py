"""The extension points a plugin may implement, as Protocols.

A plugin is a class with a `name` and one or more of the methods below. It may subclass these
protocols for documentation and type checking, or just define the methods: the framework looks at
which methods the class itself defines. Filter and Score come in two forms:

* per node — `filter(state, pod, node_info)` / `score(state, pod, node_info)`: what a plugin
  author writes first; the framework calls it only for nodes still feasible;
* batch — `filter_nodes(state, pod, nodes)` / `score_nodes(state, pod, nodes)`: one call over a
  NodeSet of the columnar NodeTable, returning a BatchFilterResult / an int64 score array.

Methods return `None` for success. Binding-cycle methods (pre_bind, bind, post_bind) may block on
I/O: the live scheduler runs them off the scheduling loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEventWithHint, Resource
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.placement import Placement, PlacementScore, PodGroupAssignments
from kubesched.framework.status import Status
from kubesched.framework.types import PostFilterResult, PreFilterResult, QueuedPodInfo

if TYPE_CHECKING:
    from kubesched.framework.waiting_pods import WaitingPod

Scores = npt.NDArray[np.int64]


class Plugin(Protocol):
    """Every plugin has a unique name; `args_type` (a msgspec Struct) types its pluginConfig args."""

    name: ClassVar[str]


class Handle(Protocol):
    """What the framework gives plugins: the node snapshot, waiting pods, the cluster, the clock."""

    @property
    def profile_name(self) -> str: ...

    @property
    def snapshot(self) -> NodeTable: ...

    def now(self) -> float: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool: ...

    def activate(self, pods: Sequence[Pod]) -> None: ...

    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind through the cluster (API call in live mode); raises on failure."""
        ...

    def lister(self, kind: str) -> Sequence[Any]:
        """Objects of a kind the cluster holds (`PersistentVolumeClaim`, `PodGroup`, ...)."""
        ...

    # -- what preemption needs (upstream's Handle offers the same)
    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        """All Filter plugins of this profile on `node_info`, honouring nominated pods."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        """Nominate `pod` to `node_name` ("" clears it) and patch its status accordingly."""
        ...

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        """Evict a pod through the cluster (a preemption victim)."""
        ...

    def record_event(self, pod: Pod, *, type: str, reason: str, action: str, note: str) -> None:
        """An Event about `pod`, reported by this profile's scheduler name."""
        ...

    def background_eviction(self) -> BackgroundEvictionPort | None:
        """The cluster's eviction off the scheduling loop (live mode), or None: `delete_pod` evicts
        within the cycle (the simulator, the extender)."""
        ...


@runtime_checkable
class BackgroundEvictionPort(Protocol):
    """Optional: a port that evicts preemption victims off the scheduling loop (live mode).

    kube-scheduler v1.37 preempts asynchronously (SchedulerAsyncPreemption, on by default): the
    preemptor is nominated at once and the victims are evicted by a goroutine. A port without this
    capability (the simulator) evicts synchronously through `ClusterPort.delete_pod`.
    """

    def evict_now(self, pod: Pod, *, reason: str, message: str) -> bool:
        """Mark `pod` DisruptionTarget, then delete it, on the calling thread (without the state lock).

        False when the pod was already gone (nothing to do, no Event); raise on any other failure.
        """
        ...

    def run_in_background(self, work: Callable[[], None], then: Callable[[], None]) -> None:
        """Run `work` on its own thread, without the scheduler's state lock; then `then` with it held."""
        ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class SortKeyPlugin(Plugin, Protocol):
    """Optional beside `less`: a key with `less(a, b) == (sort_key(a) < sort_key(b))` for every pair.

    The queue then orders its heap by comparing keys, in C, instead of calling `less` about twice
    per comparison; the order is the same.
    """

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None] | Status | None: ...


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """Keep PreFilter state current when the framework adds/removes pods (nominated pods, preemption)."""

    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(Plugin, Protocol):
    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult: ...


@runtime_checkable
class NodeLocalFilterPlugin(Plugin, Protocol):
    """Optional for Filter plugins: a promise that the verdict on a node depends only on the pod
    (and PreFilter state made from the pod) and that node's NodeInfo, its Node and its pods.

    A pod that fits nowhere is retried after every change that might help it; when each Filter
    plugin it meets makes this promise, the retry re-filters only the nodes whose pods changed since
    (`framework.filter_memo`). Plugins reading other nodes, volumes, claims or any other object
    must not declare it (a wrong promise keeps a stale verdict).
    """

    filter_reads_only_the_node: ClassVar[Literal[True]]


@runtime_checkable
class RepeatableFailurePlugin(Plugin, Protocol):
    """Optional for PreFilter, Filter and PostFilter plugins: a promise about attempts that fail.

    While the cluster is full, every change that might help sends all waiting pods back, and most
    fail again exactly as the pod before them did. When every such plugin of the profile keeps this
    promise, the scheduler repeats the first pod's failed attempt for the next pods with the same
    content (all but name, uid and status) while nothing changed: no node, pod, nomination or other
    object (`kubesched.scheduler.failure_memo`).

    `failure_repeats(state, pod)` is asked after an attempt in which no node fit, with its
    CycleState: True when the plugin would answer such a pod the same at each of its points up to
    PostFilter, and the attempt changed nothing it keeps but what `repeat_failure` redoes. Answer
    False for anything read by the pod's name or uid (ephemeral volumes, claims made from
    templates) or kept across attempts. `repeat_failure(state)` redoes, for the repeated pod, what
    the failed attempt changed (DefaultPreemption draws its random offset again).

    `failure_survives_pod_changes(state, pod, table)` is asked when pods came or went on some
    nodes since (and nothing else changed): True when the plugin's PreFilter answer in `state`
    still holds on `table`, its Filter verdict on a node reads only that node (the scheduler
    filters the changed nodes again and repeats the failure only if each gives the same status),
    and its PostFilter would answer the same on the same statuses.
    """

    def failure_repeats(self, state: CycleState, pod: Pod) -> bool: ...

    def repeat_failure(self, state: CycleState) -> None: ...

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool: ...


class RepeatsFailures:
    """`RepeatableFailurePlugin` for plugins whose PreFilter reads only the pod's content (and
    objects), whose Filter verdict on a node reads only the pod and that node, and which change
    nothing. A plugin reading other nodes' pods overrides `failure_survives_pod_changes`."""

    def failure_repeats(self, state: CycleState, pod: Pod) -> bool:
        return True

    def repeat_failure(self, state: CycleState) -> None:
        return None

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        return True


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]: ...


@runtime_checkable
class BatchScorePlugin(Plugin, Protocol):
    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores: ...


@runtime_checkable
class ScoreExtensions(Plugin, Protocol):
    """NormalizeScore: rewrite `scores` (aligned with `nodes`) in place into [0, 100].

    A plugin whose normalization maps each score through one function of that score and of the
    highest score, reading neither the nodes nor their number (`default_normalize_score` does),
    may say so with a class attribute `normalize_is_pointwise = True`: a uniform score
    (`uniform_scores.uniform`) is then normalized as one score instead of one per node.
    """

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores
    ) -> Status | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Return None/Success, a rejection, or `(Status.wait(), timeout_seconds)`."""

    def permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> Status | tuple[Status | None, float] | None: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(Plugin, Protocol):
    """Optional for PreBind plugins: whether PreBind has work for this pod (None) or not
    (`Status.skip()`). Work there makes the binding cycle set `status.nominatedNodeName` before
    PreBind runs, as kube-scheduler v1.37 does; a PreBind plugin without it counts as having work."""

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Return `Status.skip()` to let the next Bind plugin handle the pod."""

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    """TopologyAwareWorkloadScheduling: propose the placements (node subsets of `parent`) a pod
    group (or, with CompositePodGroup, a composite) may be tried in, or a Status saying why none.
    Only a profile's first one runs."""

    def generate_placements(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, parent: Placement
    ) -> Sequence[Placement] | Status: ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    """TopologyAwareWorkloadScheduling: score a placement where the group fitted (higher is
    better); `state` is that placement's own. Returns an int or (int, Status or None)."""

    def score_placement(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, assignments: PodGroupAssignments
    ) -> int | tuple[int, Status | None]: ...


@runtime_checkable
class PlacementScoreExtensions(Plugin, Protocol):
    """NormalizePlacementScore: rewrite the plugin's `scores` in place into [0, 100]."""

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, scores: list[PlacementScore]
    ) -> Status | None: ...


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """Optional for PreFilter, Filter, PreScore and Score plugins (KEP-5598 pod signatures).

    Return the `(key, value)` fragments of the pod this plugin's answers depend on (see
    `framework.signature` for the shared keys), or an unschedulable Status when they depend on more
    than the pod and the node, which keeps the pod out of opportunistic batching. A profile with
    one such plugin lacking `sign_pod` never batches.
    """

    def sign_pod(self, pod: Pod) -> Sequence[tuple[str, Any]] | Status: ...


@runtime_checkable
class ClusterObjectObserver(Plugin, Protocol):
    """Optional for any plugin that keeps a cache of objects other than Nodes and Pods (claims,
    volumes, ...): it sees every event of such an object before the pods waiting for that event
    move (upstream's plugins read informer-fed caches). `old` is None on an add, `new` on a delete."""

    def on_cluster_object(self, resource: Resource, old: Any, new: Any) -> None: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """Which cluster events may make a pod this plugin rejected schedulable again."""

    def events_to_register(self) -> list[ClusterEventWithHint]: ...


#: Extension point config key -> the methods that make a plugin implement it.
EXTENSION_POINT_METHODS: dict[str, tuple[str, ...]] = {
    "preEnqueue": ("pre_enqueue",),
    "queueSort": ("less",),
    "preFilter": ("pre_filter",),
    "filter": ("filter", "filter_nodes"),
    "postFilter": ("post_filter",),
    "preScore": ("pre_score",),
    "score": ("score", "score_nodes"),
    "reserve": ("reserve",),
    "permit": ("permit",),
    "preBind": ("pre_bind",),
    "bind": ("bind",),
    "postBind": ("post_bind",),
    "placementGenerate": ("generate_placements",),
    "placementScore": ("score_placement",),
}

_PROTOCOLS: tuple[type, ...] = (
    Plugin,
    PreEnqueuePlugin,
    QueueSortPlugin,
    SortKeyPlugin,
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    BatchFilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    BindPlugin,
    PostBindPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PlacementScoreExtensions,
    SignPlugin,
    ClusterObjectObserver,
    EnqueueExtensions,
)


def defines(cls: type, method: str) -> bool:
    """True if `cls` (or a base that is not one of these protocols) defines `method`.

    Subclassing a protocol for documentation must not make a plugin look like it implements
    every extension point of that protocol.
    """
    for klass in cls.__mro__:
        if klass in _PROTOCOLS or klass is object or klass is Protocol:
            continue
        if method in vars(klass):
            return True
    return False


def extension_points_of(cls: type) -> list[str]:
    """The config keys (`filter`, `score`, ...) of the extension points `cls` implements."""
    return [
        point for point, methods in EXTENSION_POINT_METHODS.items() if any(defines(cls, m) for m in methods)
    ]
