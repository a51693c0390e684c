"""NodeUnschedulable: keep pods off cordoned nodes (`spec.unschedulable`) unless they tolerate it."""

from __future__ import annotations

from typing import ClassVar, Literal

from kubesched.api.objects import Node, Pod, Taint
from kubesched.api.taints import EFFECT_NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, toleration_tolerates
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import BatchFilterPlugin, EnqueueExtensions, FilterPlugin, RepeatsFailures
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.signature import SignFragment, tolerations_fragment
from kubesched.framework.status import Status

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

#: The taint `kubectl cordon` implies; tolerating it lets a pod onto an unschedulable node.
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=EFFECT_NO_SCHEDULE)


def _tolerates_unschedulable(pod: Pod) -> bool:
    return any(toleration_tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.spec.tolerations)


class NodeUnschedulable(FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailures):
    """Filter: a node with `spec.unschedulable: true` is UnschedulableAndUnresolvable for pods that
    do not tolerate `node.kubernetes.io/unschedulable:NoSchedule` (DaemonSet pods usually do)."""

    name: ClassVar[str] = "NodeUnschedulable"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [tolerations_fragment(pod)]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.spec.unschedulable and not _tolerates_unschedulable(pod):
            return Status.unschedulable_and_unresolvable(ERR_REASON_UNSCHEDULABLE)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        if _tolerates_unschedulable(pod):
            return BatchFilterResult.all_pass(len(nodes))
        cordoned = nodes.gather(nodes.table.unschedulable)
        if not cordoned.any():
            return BatchFilterResult.all_pass(len(nodes))
        return BatchFilterResult.from_mask(
            ~cordoned, Status.unschedulable_and_unresolvable(ERR_REASON_UNSCHEDULABLE)
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2 (uncordoning a node is classified as a taint update): a node added
        schedulable or uncordoned; the pending pod now tolerating the unschedulable taint."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION), _after_toleration_change
            ),
        ]


def _after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """Queue for a node added schedulable, or updated from cordoned to schedulable."""
    if not isinstance(new, Node) or not isinstance(old, Node | None):
        return QueueingHint.QUEUE
    if new.spec.unschedulable:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if old is None or old.spec.unschedulable else QueueingHint.SKIP


def _after_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """Queue when the updated pod tolerates `node.kubernetes.io/unschedulable:NoSchedule`."""
    if not isinstance(new, Pod) or not isinstance(old, Pod | None):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if _tolerates_unschedulable(new) else QueueingHint.SKIP
