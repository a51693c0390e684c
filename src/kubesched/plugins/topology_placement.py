"""TopologyPlacementGenerator: one placement per domain of a pod group's topology key
(TopologyAwareWorkloadScheduling, v1.37).

A PodGroup with `spec.schedulingConstraints.topology: [{key: K}]` must land within one value of
node label K (a rack, a zone). The pod-group cycle asks this plugin for the candidate placements:
one per value of K among the nodes it is given, each holding the nodes with that value (nodes
without the label are in none). When pods of the group are already scheduled, only their domain
is offered, so later members join them. A group without a constraint gets the nodes it was given
as its one placement.

Placements come in the order their domain first appears in the node order. Upstream builds them
from a Go map, so the binary's order (and with it which placement's failure a message quotes) is
random; the pod-group cycle shuffles them with the run's seed to match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.group_forest import ForestLookup, group_key
from kubesched.framework.interfaces import Handle, PlacementGeneratePlugin
from kubesched.framework.node_info import pod_key
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.placement import Placement
from kubesched.framework.pod_groups import AssumedNodeLookup, PodGroupLookup, PodGroupState
from kubesched.framework.status import Status

__all__ = ["TopologyPlacementGenerator", "topology_key"]


def topology_key(pod_group: PodGroup | CompositePodGroup) -> str | None:
    """The group's topology key (the API allows one constraint), None without one."""
    constraints = pod_group.spec.scheduling_constraints
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


class TopologyPlacementGenerator(PlacementGeneratePlugin):
    """PlacementGenerate: a placement per value of the group's topology key."""

    name: ClassVar[str] = "TopologyPlacementGenerator"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        lookup: object = handle
        self._groups: PodGroupLookup | None = lookup if isinstance(lookup, PodGroupLookup) else None
        self._forest: ForestLookup | None = lookup if isinstance(lookup, ForestLookup) else None
        self._nodes: AssumedNodeLookup | None = lookup if isinstance(lookup, AssumedNodeLookup) else None

    def generate_placements(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, parent: Placement
    ) -> Sequence[Placement] | Status:
        """One placement per domain of the topology key within `parent` (only the scheduled
        pods' domain once some are); `parent` itself for a group without a constraint."""
        key = topology_key(pod_group)
        if key is None:
            return [parent]
        required = self._scheduled_domain(pod_group, key, parent.nodes)
        if isinstance(required, Status):
            return required
        nodes = parent.nodes
        column = nodes.table.label_column(key)
        ids = nodes.gather(column.ids)
        placements = []
        for value_id in dict.fromkeys(int(i) for i in ids if i >= 0):
            value = column.values[value_id]
            if required is not None and value != required:
                continue
            placements.append(Placement(value, NodeSet(nodes.table, nodes.rows[ids == value_id])))
        return placements

    def _states(self, pod_group: PodGroup | CompositePodGroup) -> list[PodGroupState]:
        """The group's PodGroup state; with CompositePodGroup on, those of every PodGroup under it."""
        forest = None if self._forest is None else self._forest.group_forest()
        if forest is not None:
            return forest.states_under(group_key(pod_group))
        if self._groups is None:
            return []
        namespace = pod_group.metadata.namespace or "default"
        group = self._groups.pod_group_state(namespace, pod_group.metadata.name)
        return [] if group is None else [group]

    def _scheduled_domain(
        self, pod_group: PodGroup | CompositePodGroup, key: str, nodes: NodeSet
    ) -> str | Status | None:
        """The one domain the group's scheduled pods are in (None: none is scheduled), or an Error
        status with upstream's text when it cannot be told."""
        table = nodes.table
        domain: str | None = None
        for group in self._states(pod_group):
            found = self._domain_of(group, key, table, domain)
            if isinstance(found, Status):
                return found
            domain = found
        return domain

    def _domain_of(
        self, group: PodGroupState, key: str, table: NodeTable, domain: str | None
    ) -> str | Status | None:
        """`domain` with the domains of `group`'s scheduled pods added (all must be one)."""
        for pod in group.pods:
            scheduled = pod_key(pod)
            if scheduled not in group.scheduled:
                continue
            what = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
            node = pod.spec.node_name or self._assumed_on(table, scheduled)
            row = table.index.get(node)
            if row is None:
                return _cannot(f'getting node for pod {what}: nodeinfo not found for node name "{node}"')
            value = table.infos[row].node.metadata.labels.get(key)
            if value is None:
                return _cannot(f"no topology domain found for pod {what}")
            if domain and domain != value:
                return _cannot(f"more than 1 domain found for pod group: {domain}, {value}")
            domain = value
        return domain

    def _assumed_on(self, table: NodeTable, key: str) -> str:
        """The node a pod the scheduler assumed (not bound yet) is on: the cache's record of it,
        else (a Handle without one) the node whose pods hold it."""
        if self._nodes is not None:
            return self._nodes.assumed_node(key) or ""
        return next((info.name for info in table.infos if key in info.pods), "")


def _cannot(reason: str) -> Status:
    return Status.as_error(f"cannot determine domain for already scheduled pods: {reason}")
