"""NodeName: a pod that names a node (`spec.nodeName`) fits only that node."""

from __future__ import annotations

from typing import ClassVar, Literal

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from kubesched.framework.interfaces import BatchFilterPlugin, EnqueueExtensions, FilterPlugin, RepeatsFailures
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.signature import SignFragment, node_name_fragment
from kubesched.framework.status import Status

__all__ = ["ERR_REASON", "NodeName"]

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailures):
    """Filter: when `spec.nodeName` is set, every other node is UnschedulableAndUnresolvable.

    A pod created with `nodeName` normally bypasses the scheduler; this covers a pod that sets it and
    still names this scheduler, and the simulator replaying such pods.
    """

    name: ClassVar[str] = "NodeName"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [node_name_fragment(pod)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = pod.spec.node_name
        if wanted and wanted != node_info.name:
            return Status.unschedulable_and_unresolvable(ERR_REASON)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        wanted = pod.spec.node_name
        if not wanted:
            return BatchFilterResult.all_pass(len(nodes))
        row = nodes.table.index.get(wanted, -1)
        return BatchFilterResult.from_mask(
            nodes.rows == row, Status.unschedulable_and_unresolvable(ERR_REASON)
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
