"""The scheduling framework: extension points, statuses, cycle state, node data and the runtime.

Plugin authors import from here:

    from kubesched.framework import FilterPlugin, Status
"""

from kubesched.framework.cycle_state import (
    CycleState,
    NotFoundError,
    StateData,
    missing_state_error,
    pre_filter_state,
)
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    ClusterObjectObserver,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    RepeatableFailurePlugin,
    RepeatsFailures,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SortKeyPlugin,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import BatchFilterResult, LabelColumn, NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "ActionType",
    "BatchFilterPlugin",
    "BatchFilterResult",
    "BatchScorePlugin",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "ClusterObjectObserver",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "FilterPlugin",
    "Handle",
    "LabelColumn",
    "NodeInfo",
    "NodeSet",
    "NodeTable",
    "NotFoundError",
    "PermitPlugin",
    "Plugin",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "RepeatableFailurePlugin",
    "RepeatsFailures",
    "ReservePlugin",
    "Resource",
    "ScoreExtensions",
    "ScorePlugin",
    "SortKeyPlugin",
    "StateData",
    "Status",
    "missing_state_error",
    "pre_filter_state",
]
