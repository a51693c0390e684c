"""NodePorts: a pod asking for host ports fits only nodes where those ports are free.

Two pods conflict when they want the same protocol and host port and either binds the wildcard address 0.0.0.0
(the default when `hostIP` is empty) or both bind the same address (upstream
`pkg/scheduler/framework/plugins/nodeports/node_ports.go`). PreFilter collects the pod's host ports from its
regular containers and its sidecars (restartable init containers, which run as long as the pod: v1.37's
`GetHostPorts`), and returns Skip when there are none, which is the case for almost every pod. A node's used
ports are a set, as upstream's `HostPortInfo`: two pods bound to one port (possible with `spec.nodeName`) hold
it once, and the preemption dry run frees it by removing either of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState, pre_filter_state
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    RepeatsFailures,
)
from kubesched.framework.node_info import HostPort, NodeInfo, pod_host_ports, ports_conflict
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, host_ports_fragment
from kubesched.framework.status import Status

__all__ = ["ERR_REASON", "NodePorts", "pod_host_ports"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilterNodePorts"

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]

    def clone(self) -> _PreFilterState:
        return self


class NodePorts(PreFilterPlugin, FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailures):
    """Filter out nodes where one of the pod's host ports is already taken."""

    name: ClassVar[str] = "NodePorts"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [host_ports_fragment(pod)]

    def _wanted(self, state: CycleState, pod: Pod) -> tuple[HostPort, ...]:
        return pre_filter_state(
            state,
            PRE_FILTER_STATE_KEY,
            _PreFilterState,
            lambda: _PreFilterState(pod_host_ports(pod)),
            keep=True,
        ).ports

    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        ports = pod_host_ports(pod)
        if not ports:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = self._wanted(state, pod)
        if wanted and node_info.used_ports and ports_conflict(node_info.used_ports, wanted):
            return Status.unschedulable(ERR_REASON)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """Only nodes that already have host ports in use are looked at; all others pass."""
        wanted = self._wanted(state, pod)
        n = len(nodes)
        if not wanted or n == 0:
            return BatchFilterResult.all_pass(n)
        candidates = np.flatnonzero(self._rows_with_ports(nodes.table)[nodes.rows])
        passed = np.ones(n, dtype=np.bool_)
        infos = nodes.table.infos
        for pos in candidates:
            if ports_conflict(infos[nodes.rows[pos]].used_ports, wanted):
                passed[pos] = False
        return BatchFilterResult.from_mask(passed, Status.unschedulable(ERR_REASON))

    @staticmethod
    def _rows_with_ports(table: NodeTable) -> BoolArray:
        """Which rows have any host port in use (the table keeps a per-row count of such pods)."""
        return table.host_port_pods > 0

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a bound pod deleted may free a port the pod wants; a new node has all ports
        free. Host ports are immutable, so pod updates never help."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE), _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]


def _after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """Queue only when the deleted pod held (bound or nominated) a host port that conflicts with
    one the pod wants; anything that is not a pod queues, as upstream does on a decoding error."""
    if not isinstance(old, Pod):
        return QueueingHint.QUEUE
    if not old.spec.node_name and not old.status.nominated_node_name:
        return QueueingHint.SKIP
    freed = pod_host_ports(old)
    if freed and ports_conflict(freed, pod_host_ports(pod)):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
